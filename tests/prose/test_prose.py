"""core.prose: what any reader of a paper or an analysis sees at once, by general rules — markup of
another format, commands that lost their backslash, labtui's own words, instructions, promises,
stray lines — and no false alarm on a paragraph a researcher writes."""

from __future__ import annotations

from labtui.core.prose.check import prose_defects
from labtui.core.prose.copied import copied_text, instructions, shingles, with_texts
from labtui.core.prose.markup import foreign_markup, lost_backslashes
from labtui.core.prose.stray import stray_lines
from labtui.core.prose.tense import promises

# A paragraph as a researcher writes it: LaTeX, numbers, a citation, a figure reference, the
# future tense about future work. None of the rules may fire on it.
WRITTEN = (
    "We trained a one-hidden-layer perceptron with Adam \\citep{kingma2015adam} on the two-moons "
    "task and compared a width of 64 with the baseline's 32. The wider network reached a test "
    "accuracy of \\textbf{0.9053} against 0.9367 (Table~\\ref{tab:runs}), a decline beyond the "
    "seeds' noise. Future work will vary the training-set size.\n\n"
    "Figure~\\ref{fig:loss} shows the training loss of both runs; $\\lambda = 10^{-3}$ throughout."
)


def test_a_paragraph_a_researcher_writes_has_no_defect():
    assert prose_defects(WRITTEN, reports=True) == []
    assert prose_defects(WRITTEN.replace("\\textbf", "").replace("\\", ""), latex=False) == []


def test_html_and_markdown_inside_latex_are_named_with_the_fix():
    # Recorded (moons b8): the Experimental Setup was eighteen <p> paragraphs.
    [html] = foreign_markup("<p>Introduction:</p>\n\n<p>The paper investigates …</p>")
    assert html.kind == "markup" and "“<p>”" in html.problem and "no tags" in html.fix
    markdown = foreign_markup("The results:\n\n## Results\n\n**Accuracy** rose.")
    assert [d.kind for d in markdown] == ["markup"] and "Markdown" in markdown[0].problem
    assert foreign_markup("| run | acc |\n|---|---|\n| run_0 | 0.9 |", latex=False) == [], (
        "a PDF's text has the reader's own table rows"
    )
    assert foreign_markup("&nbsp;&nbsp;indented")[0].kind == "markup"


def test_a_command_that_lost_its_backslash_is_found_in_source_and_in_a_pdfs_text():
    # Recorded (moons b8): Related Work opened "extbf{Introduction}".
    [lost] = lost_backslashes("extbf{Introduction}\n\nEarly stopping is a technique …")
    assert "“\\textbf”" in lost.problem
    [control] = lost_backslashes("\textbf{Results:} the runs")  # a tab, as JSON decoded it
    assert "to JSON" in control.problem and "“\\textbf”" in control.problem
    assert lost_backslashes("extbfIntroduction The paper …", latex=False)[0].kind == (
        "lost_backslash"
    )
    assert lost_backslashes("the context and texture of the text", latex=False) == []
    assert lost_backslashes("\\frac{a}{b} and \\ref{fig:x}") == []


def test_text_copied_from_labtuis_own_messages_is_found_by_eight_words_in_a_row():
    # Held out (issue 40): an accepted analysis of run_2 held labtui's own re-ask.
    analysis = (
        "The run did better. Your analysis does not agree with the computed effects: - You "
        "wrote that accuracy improved, but it did not."
    )
    [copied] = copied_text(analysis)
    assert copied.kind == "copied" and copied.quoted.startswith("Your analysis does not agree")
    assert copied_text("Your analysis does not agree with me.") == [], "seven words are not a copy"
    project = with_texts(["Compare final test accuracy and training loss against the baseline"])
    said = "We compare final test accuracy and training loss against the baseline here."
    assert copied_text(said, project) and not copied_text(said, shingles([]))


def test_instructions_left_in_the_text_are_not_a_report():
    # Recorded (moons b8): "The experiment should compare …", "The reader should look for …".
    found = instructions(
        "The experiment should compare early stopping with no early stopping. The runs ended. "
        "The reader should look for the final accuracy value. You must cite the baseline."
    )
    assert [d.quoted.split()[1] for d in found] == ["experiment", "reader", "must"]
    assert instructions("The purpose of this paper is to measure width.") == []


def test_a_chat_assistant_talking_to_who_asked_is_not_the_paper():
    # Recorded (moons, 2026-12-07, labtui's own model): the whole conclusion, and the abstract's
    # last sentence, were "I apologize for misunderstanding your instructions."
    [apology] = instructions(
        "Dropout changed nothing. I apologize for misunderstanding your instructions."
    )
    assert apology.quoted.startswith("I apologize") and "chat assistant" in apology.problem
    assert instructions("Here is the revised conclusion with the numbers.")
    assert instructions("Dropout left the test accuracy at 0.9367 against 0.9367.") == []
    assert instructions("Certainly the gain is small; we thank the reviewers.") == []


def test_a_promise_where_finished_work_is_reported():
    # Recorded (moons b8): the whole Method was "The experiment will be performed as follows".
    [promise] = promises("The experiment will be performed as follows: 1. Compare …")
    assert promise.kind == "promise" and "past or present tense" in promise.fix
    assert promises("In future work we will vary the sample size.") == []
    assert promises("The wider network will overfit a small sample, as the runs show.") == []


def test_lines_that_are_no_text():
    # Held out (issue 40): the words "done" and "eof" on lines of their own.
    assert stray_lines("The runs ended.\n\ndone\n\nThe table shows it.")[0].quoted == "done"
    assert stray_lines("Results follow.\nEOF\n")[0].quoted == "EOF"
    assert stray_lines("Lines end here.\n\n<|im_end|>", latex=False)[0].kind == "stray"
    assert stray_lines(WRITTEN) == []
    assert stray_lines("\\begin{itemize}\n\\item one\n\\end{itemize}\n\nrun\\_1 & 0.9 \\\\") == []
