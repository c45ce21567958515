"""Citation rounds: the model proposes where and what to search, picks among the results it was
shown, labtui writes the BibTeX, aider adds the \\cite; an edit citing an unknown key is undone."""

from __future__ import annotations

import pytest
from support.research_script import MoonsResearch, last_user_text, whole_file_edit

from labtui.core.pipeline.session import Session
from labtui.core.writeup.citations import (
    cited_keys,
    parse_proposal,
    parse_selection,
    run_rounds,
    unknown_citations,
)

TEX = "latex/template.tex"


def test_proposals_and_selections_say_what_to_fix():
    assert parse_proposal({"done": True}).done
    found = parse_proposal({"done": False, "where": "Intro, first sentence", "query": " dropout "})
    assert (found.where, found.query) == ("Intro, first sentence", "dropout")
    for bad, says in [
        ({"done": "no"}, '{"done": true|false'),
        ({"done": False, "query": "q"}, '"where" must name'),
        ({"done": False, "where": "Intro, first sentence"}, '"query" must be'),
    ]:
        with pytest.raises(ValueError, match=says.replace("|", r"\|")):
            parse_proposal(bad)
    assert parse_selection({"chosen": [2, 0, 2], "how": "after the claim"}, 3).chosen == [0, 2]
    assert parse_selection({"chosen": []}, 3).chosen == []
    with pytest.raises(ValueError, match=r"indexes \[5\] are not among the 3 results"):
        parse_selection({"chosen": [5], "how": "after the claim"}, 3)
    with pytest.raises(ValueError, match='"how" must say'):
        parse_selection({"chosen": [0]}, 3)
    with pytest.raises(ValueError, match=r"field 'query' is a placeholder \('\.\.\.'\)"):
        parse_proposal({"done": False, "where": "Intro, first sentence", "query": "..."})


def test_cited_keys_ignore_comments_and_unknown_ones_are_found(tmp_path):
    tex = tmp_path / "paper.tex"
    tex.write_text(
        "\\begin{filecontents}{references.bib}\n@misc{known, title={K}}\n\\end{filecontents}\n"
        "A \\citep{known, ghost} and \\citet[p.~2]{also}. % \\cite{commented}\n"
    )
    assert cited_keys(tex.read_text()) == {"known", "ghost", "also"}
    assert unknown_citations(tex) == ["also", "ghost"]


def _writeup_context(project, llm_server, integrate):
    """The write-up stage's context on a moons project whose draft is already written."""
    research = MoonsResearch(project.root)

    def writeup(request):
        text = last_user_text(request)
        if "Add citations to latex/template.tex" in text:
            return integrate(research, text)
        return research.writeup(request)

    llm_server.default("scripted-writeup", writeup)
    draft = project.root / TEX  # the introduction as the write-up left it
    sentence = "Capacity and generalisation interact in small networks."
    draft.write_text(draft.read_text().replace("INTRO HERE", sentence))
    project.commit("writeup: the draft", [TEX])
    return Session.open(project.root).context_for("writeup")


def test_a_round_adds_a_real_bibtex_entry_and_the_cite(project, llm_server, arxiv_server):
    ctx = _writeup_context(project, llm_server, lambda research, text: research._cite(text))
    cited = run_rounds(ctx, ctx.coder(), TEX, rounds=5)
    tex = (project.root / TEX).read_text()
    assert len(cited) == 1 and f"\\citep{{{cited[0]}}}" in tex
    assert f"@misc{{{cited[0]}," in tex and "archivePrefix = {arXiv}" in tex
    assert unknown_citations(project.root / TEX) == []
    log = project.repo.git.log("--format=%s")
    assert f"writeup: bibliography entries for {cited[0]}" in log
    assert f"writeup: cite {cited[0]}" in log
    asks = [last_user_text(r) for r in llm_server.requests_for("scripted-writeup")]
    assert sum(a.startswith("Citation round") for a in asks) == 2, "round 2 said done"
    assert len(arxiv_server.hits) == 1, "one search, for round 1"


def test_an_edit_that_cites_a_key_the_bibliography_lacks_is_undone(
    project, llm_server, arxiv_server
):
    def invent(research, text):
        tex = (research.root / TEX).read_text()
        tex = tex.replace("\\end{document}", "As shown by \\citep{ghost2031}.\n\\end{document}")
        return whole_file_edit(TEX, tex, "Cite a paper I remember.")

    ctx = _writeup_context(project, llm_server, invent)
    before = (project.root / TEX).read_text()
    assert run_rounds(ctx, ctx.coder(), TEX, rounds=1) == []
    tex = (project.root / TEX).read_text()
    assert "ghost2031" not in tex
    assert tex != before, "the bibliography entry labtui wrote stays"
    assert "writeup: undo a citation edit that cited unknown keys (ghost2031)" in (
        project.repo.git.log("--format=%s")
    )
