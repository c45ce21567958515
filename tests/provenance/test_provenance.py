"""Provenance: the paper's numbers traced to the runs that produced them, within the rounding
they are written with; anything else is listed with its line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from labtui.core.provenance.numbers import (
    Source,
    matches,
    numbers_in_text,
    numbers_to_check,
    trace_written,
)
from labtui.core.provenance.record import (
    PROVENANCE,
    check_paper,
    claim_key,
    key,
    load_waivers,
    report_markdown,
    run_sources,
)
from labtui.core.workspace.run_folder import RunRecord, write_run_record

BASE = {"moons": {"means": {"test_accuracy_mean": 0.9367, "train_loss_mean": 0.1930}}}
WIDER = {
    "moons": {
        "means": {"test_accuracy_mean": 0.9053, "train_loss_mean": 0.2346},
        "stderrs": {"test_accuracy_stderr": 0.0041},
    }
}

PAPER = r"""\documentclass{article}
\begin{document}
\begin{abstract}
Doubling the hidden layer lowers test accuracy to 90.5\% from 93.7\%.
\end{abstract}
\section{Method}
We double HIDDEN_UNITS to 64; nothing here is checked: 12345.
\section{Results}
\label{sec:results}
The wider network (run\_1) reaches $0.905 \pm 0.004$ against 0.937 for run\_0, a change of
$-0.031$ ($-3.35$\%) after 150 epochs, as Figure~1 shows \citep{kingma2015adam}.
It also reaches 97.2\% on a held-out set we never built.
\begin{table}[t]
\begin{tabular}{lcc}
\toprule
run & accuracy & loss \\
\midrule
run\_0 & 0.9367 & 0.193 \\
run\_1 & 0.9053 & 0.2346 \\
\bottomrule
\end{tabular}
\end{table}
\section{Conclusion}
Width 128 may help in 2026.
\end{document}
"""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Two runs of a moons-like experiment, each recorded with its commit."""
    root = tmp_path / "p"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.org")
    _git(root, "config", "user.name", "t")
    for run, info, units in (("run_0", BASE, 32), ("run_1", WIDER, 64)):
        (root / "experiment.py").write_text(f"HIDDEN_UNITS = {units}\nEPOCHS = 150  # per seed\n")
        _git(root, "add", "experiment.py")
        _git(root, "commit", "-qm", f"code for {run}")
        commit = _git(root, "rev-parse", "HEAD")
        (root / run).mkdir()
        (root / run / "final_info.json").write_text(json.dumps(info))
        (root / run / "labtui_run.json").write_text(json.dumps({"commit": commit}))
    (root / "latex").mkdir()
    (root / "latex" / "template.tex").write_text(PAPER)
    return root


def test_only_the_abstract_results_and_tables_are_read_and_names_are_not_numbers():
    written = [(w.text, w.line) for w in numbers_to_check(PAPER)]
    texts = [t for t, _ in written]
    assert "12345" not in texts and "128" not in texts, "Method and Conclusion are not checked"
    assert "2026" not in texts and "1" not in texts, "years and Figure~1 are names, not results"
    assert ("90.5\\%", 4) in written and ("0.9053", 19) in written
    assert "150" in texts and "-0.031" in texts and "97.2\\%" in texts


def test_a_dimensionality_is_the_datas_shape_not_a_result():
    # Recorded words (qwen15 moons write-ups, from the template's own description): refused 16
    # times in three sections as an untraced number before this rule.
    text = "A synthetic 2-D binary task, 3D points, a 10-dimensional input and 0.9367 accuracy."
    found = numbers_to_check(f"\\begin{{abstract}}{text}\\end{{abstract}}")
    assert [w.text for w in found] == ["0.9367"]
    assert [w.text for w in numbers_in_text("2 seeds and 2-D data")] == ["2"]


def test_a_number_matches_within_the_rounding_it_is_written_with():
    [w] = numbers_to_check("\\begin{abstract}0.93\\end{abstract}")
    assert matches(w, 0.9343) and matches(w, 0.9251) and not matches(w, 0.9361)
    [pct] = numbers_to_check("\\begin{abstract}93.4\\%\\end{abstract}")
    assert matches(pct, 0.9343) and matches(pct, 93.4) and not matches(pct, 0.9361)


def test_the_runs_values_their_differences_and_their_settings_are_sources(project: Path):
    sources = run_sources(project)
    by_what = {(s.run, s.what): s for s in sources}
    assert by_what[("run_1", "moons test_accuracy_mean")].value == 0.9053
    assert by_what[("run_1", "moons test_accuracy_stderr")].value == 0.0041
    delta = by_what[("run_1", "moons test_accuracy_mean − run_0")]
    assert delta.kind == "derived" and delta.value == pytest.approx(-0.0314)
    relative = by_what[("run_1", "moons test_accuracy_mean vs run_0 (%)")]
    assert relative.value == pytest.approx(-3.352, abs=1e-3)
    assert by_what[("run_1", "HIDDEN_UNITS")].value == 64, "the setting as run_1's commit had it"
    assert by_what[("run_0", "HIDDEN_UNITS")].value == 32
    assert (
        by_what[("run_1", "HIDDEN_UNITS")].commit
        == json.loads((project / "run_1" / "labtui_run.json").read_text())["commit"]
    )


def test_every_real_number_is_traced_and_the_invented_one_is_listed(project: Path):
    report = check_paper(project, project / "latex" / "template.tex")
    assert [(w.text, w.line) for w in report.untraced] == [("97.2\\%", 12)]
    traced = {w.text: s for w, s in report.traced}
    assert traced["90.5\\%"].what == "moons test_accuracy_mean" and traced["90.5\\%"].run == "run_1"
    assert traced["-0.031"].kind == "derived"
    assert traced["150"].what == "EPOCHS" and traced["150"].kind == "config"
    saved = json.loads((project / PROVENANCE).read_text())
    first = saved["traced"][0]
    assert {"number", "line", "run", "what", "commit", "value"} <= set(first)
    assert first["commit"], "each traced number names the commit that produced it"
    assert saved["untraced"] == [
        {"number": "97.2\\%", "line": 12, "context": report.untraced[0].context, "waived": ""}
    ]


def test_a_waived_number_is_no_longer_open_and_the_reason_is_kept(project: Path):
    report = check_paper(project, project / "latex" / "template.tex")
    [invented] = report.untraced
    assert "match no run" in report_markdown(report, {})
    waived = {key(invented): "quoted from the original paper, not measured here"}
    assert report.open_issues(waived) == []
    text = report_markdown(report, waived)
    assert "match no run" not in text and "quoted from the original paper" in text
    saved = check_paper(project, project / "latex" / "template.tex", waived)
    assert saved.untraced and json.loads((project / PROVENANCE).read_text())["untraced"][0][
        "waived"
    ].startswith("quoted")


def test_plain_text_numbers_read_a_bare_percent_sign_and_skip_run_names():
    found = [(w.text, w.value, w.percent) for w in numbers_in_text("run_1: 93.4% (0.02)\n-0.5")]
    assert found == [("93.4%", 93.4, True), ("0.02", 0.02, False), ("-0.5", -0.5, False)]


# -- claims: a sentence the runs' effects contradict -------------------------------------------

CLAIMING = r"""\documentclass{article}
\begin{document}
\begin{abstract}
Doubling the hidden layer keeps test accuracy at 0.9367.
\end{abstract}
\section{Method}
Wider layers improve everything, we hoped.
\section{Results}
The wider network (run\_1) reaches a mean test accuracy of 0.9367,
a significant improvement over the baseline run\_0.
There is no improvement in the training loss.
\begin{table}[t]
\begin{tabular}{lc}
run & improvement \\
run\_1 & 0.9367 \\
\end{tabular}
\end{table}
\end{document}
"""
CORRECT = CLAIMING.replace("a significant improvement over", "the same as for")
IDENTICAL_RUNS = {
    "moons": {
        "means": {"test_accuracy_mean": 0.9367, "train_loss_mean": 0.1930},
        "stderrs": {"test_accuracy_stderr": 0.0019, "train_loss_stderr": 0.0010},
    }
}


@pytest.fixture
def identical_project(tmp_path: Path) -> Path:
    """run_1 identical to run_0 to the last digit, as in issue 13."""
    root = tmp_path / "same"
    for run in ("run_0", "run_1"):
        (root / run).mkdir(parents=True)
        (root / run / "final_info.json").write_text(json.dumps(IDENTICAL_RUNS))
    (root / "latex").mkdir()
    (root / "latex" / "template.tex").write_text(CLAIMING)
    return root


def test_a_paper_claiming_an_improvement_on_identical_runs_is_blocked(identical_project: Path):
    report = check_paper(identical_project, identical_project / "latex" / "template.tex")
    assert report.untraced == []
    [claim] = report.contradicted
    assert claim.line == 9, "where the sentence starts"
    assert claim.sentence.startswith("The wider network (run_1) reaches a mean test accuracy")
    assert claim.claims == "the change in test accuracy is significant and test accuracy improved"
    assert "run_1's test_accuracy_mean is 0.9367 against 0.9367 for run_0: identical" in claim.says
    assert report.open_claims({}) == [claim]
    listing = report_markdown(report, {})
    assert "1 sentence(s) claim what the runs contradict" in listing and "line 9" in listing
    saved = json.loads((identical_project / PROVENANCE).read_text())["contradicted"]
    assert saved == [
        {
            "sentence": claim.sentence,
            "line": 9,
            "claims": claim.claims,
            "runs_say": claim.says,
            "waived": "",
        }
    ]


def test_a_waiver_unblocks_the_sentence_and_is_kept_in_provenance_json(identical_project):
    tex = identical_project / "latex" / "template.tex"
    [claim] = check_paper(identical_project, tex).contradicted
    waived = {claim_key(claim): "the improvement is over prior work, not over run_0"}
    report = check_paper(identical_project, tex, waived)
    assert report.contradicted and report.open_claims(waived) == []
    assert load_waivers(identical_project) == waived, "the waiver survives a reload"
    listing = report_markdown(report, waived)
    assert "claim what the runs contradict" not in listing and "prior work" in listing
    moved = CLAIMING.replace("\\section{Results}", "\\section{Results}\nA new first line.")
    tex.write_text(moved)
    assert check_paper(identical_project, tex, waived).open_claims(waived) == [], (
        "keyed by the sentence, not its line"
    )


def test_a_correct_paper_is_not_blocked(identical_project: Path):
    tex = identical_project / "latex" / "template.tex"
    tex.write_text(CORRECT)
    report = check_paper(identical_project, tex)
    assert report.untraced == [] and report.contradicted == []
    assert json.loads((identical_project / PROVENANCE).read_text())["contradicted"] == []


def test_the_introduction_and_conclusion_are_held_to_the_runs_too(identical_project: Path):
    # The 1.5B model's moons introduction claimed an improvement its run did not have, and only
    # the abstract and Results were read for claims.
    tex = identical_project / "latex" / "template.tex"
    claim = "Label smoothing alone can improve test accuracy over the baseline."
    for title in ("Introduction", "Conclusions and Future Work"):
        tex.write_text(
            CORRECT.replace("\\end{document}", f"\\section{{{title}}}\n{claim}\n\\end{{document}}")
        )
        [found] = check_paper(identical_project, tex).contradicted
        assert found.sentence == claim, title
    tex.write_text(
        CORRECT.replace("\\end{document}", f"\\section{{Background}}\n{claim}\n\\end{{document}}")
    )
    assert check_paper(identical_project, tex).contradicted == [], "another part's words"


def test_a_claim_is_flagged_only_when_every_run_contradicts_it(identical_project: Path):
    better = json.loads(json.dumps(IDENTICAL_RUNS))
    better["moons"]["means"]["test_accuracy_mean"] = 0.9712
    (identical_project / "run_2").mkdir()
    (identical_project / "run_2" / "final_info.json").write_text(json.dumps(better))
    report = check_paper(identical_project, identical_project / "latex" / "template.tex")
    assert report.contradicted == [], "run_2 did improve test accuracy: the paper may mean it"


# -- the write-up checkpoint waits for every number --------------------------------------------


class InventingResearch:
    """TEST-ONLY: the moons research, but the write-up claims a result no run produced and the
    fix round does not remove it."""

    # four decimals: a test accuracy of 0.972, or a timing's relative difference of 97.2 %, both
    # happen in real runs and would trace 97.2 % by chance
    INVENTED = "It also reaches 97.2146\\% on a held-out set we never built."

    def __init__(self, root: Path) -> None:
        from support.research_script import MoonsResearch

        self.moons = MoonsResearch(root)

    def writeup(self, request) -> str:
        from support.research_script import whole_file_edit

        reply = self.moons.writeup(request)
        tex = (self.moons.root / "latex" / "template.tex").read_text()
        if "RESULTS HERE" in tex:  # the first draft: add the invented claim to Results
            return reply.replace("of each run.", "of each run. " + self.INVENTED)
        if "match no value the runs recorded" in json.dumps(request):  # the fix round: ignored
            return whole_file_edit("latex/template.tex", tex, "Kept as it was.")
        return reply  # the citation rounds, as the moons research answers them


def _with_aider(root: Path) -> None:
    """The draft's own check is what these tests are about: with [paper] writer = "sections"
    the section's check refuses the number or the claim before it reaches the paper
    (tests/writeup/test_writeup.py), so the write-up here is aider's, which lets one through."""
    from labtui.core.settings.config import load_config, save_config

    config = load_config(root)
    config.paper.writer = "aider"
    save_config(config, root)


class WaivingPort:
    """TEST-ONLY: approves everything it may; at a blocked write-up it waives once, with a reason."""

    def __init__(self) -> None:
        self.asked = []

    def ask(self, request):
        from labtui.core.checkpoints import Decision

        self.asked.append(request)
        if request.stage == "compile":
            return Decision("abort", "enough")
        if "approve" in request.options:
            return Decision("approve")
        return Decision("waive", "quoted from the original paper, not measured here")


def test_an_invented_number_blocks_approval_until_the_researcher_waives_it(project_with_runs):
    from labtui.core.journal import read_events
    from labtui.core.pipeline.session import Session

    root, llm_server = project_with_runs
    port = WaivingPort()
    assert Session.open(root).run(port) == "stopped"
    first, again = [r for r in port.asked if "paper drafted" in r.title][:2]
    assert "approve" not in first.options and "waive" in first.options
    assert "1 number(s) in the paper match no run" in first.title
    assert "`97.2146\\%` on line" in first.body
    assert "approve" in again.options and "quoted from the original paper" in again.body
    fix_prompts = [
        r for r in llm_server.requests_for("scripted-writeup") if "match no value" in json.dumps(r)
    ]
    assert fix_prompts, "the untraced number went back to the model first"
    saved = json.loads((root / PROVENANCE).read_text())
    assert saved["traced"] and saved["untraced"][0]["waived"].startswith("quoted")
    decided = [
        (e.action, e.note)
        for e in read_events(root / ".labtui" / "journal.jsonl")
        if e.type == "CheckpointDecided" and e.stage == "writeup"
    ]
    assert ("waive", "quoted from the original paper, not measured here") in decided


def test_auto_mode_stops_at_an_untraced_number_instead_of_approving_it(project_with_runs):
    from labtui.core.checkpoints import AutoApprove
    from labtui.core.pipeline.session import Session

    root, _ = project_with_runs
    assert Session.open(root).run(AutoApprove()) == "stopped"
    assert json.loads((root / PROVENANCE).read_text())["untraced"][0]["waived"] == ""
    assert not (root / "paper.pdf").exists(), "nothing was compiled from an unchecked paper"


@pytest.fixture
def project_with_runs(tmp_path, llm_server, arxiv_server, monkeypatch):
    """A moons project wired to the scripted servers, its write-up inventing one number."""
    from conftest import TEST_API_KEY, wire_project
    from support.research_script import model_name

    from labtui.core.workspace.project import Project

    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    project = Project.create(tmp_path / "inv", "moons")
    wire_project(project.root, llm_server.url, arxiv_server.url)
    _with_aider(project.root)
    research = InventingResearch(project.root)
    research.moons.install(llm_server)
    llm_server.default(model_name("writeup").removeprefix("openai/"), research.writeup)
    return project.root, llm_server


class ClaimingResearch(InventingResearch):
    """TEST-ONLY: the moons research, but the Results claim an improvement the runs do not show
    (doubling the width changes test accuracy only within noise), and the fix round keeps it."""

    CLAIM = "Doubling the hidden layer significantly improves test accuracy."

    def writeup(self, request) -> str:
        from support.research_script import whole_file_edit

        reply = self.moons.writeup(request)
        tex = (self.moons.root / "latex" / "template.tex").read_text()
        if "RESULTS HERE" in tex:
            return reply.replace("of each run.", "of each run. " + self.CLAIM)
        if "claim about the results every run contradicts" in json.dumps(request):
            return whole_file_edit("latex/template.tex", tex, "Kept as it was.")
        return reply


def test_a_contradicted_claim_blocks_approval_until_the_researcher_waives_it(
    tmp_path, llm_server, arxiv_server, monkeypatch
):
    from conftest import TEST_API_KEY, wire_project
    from support.research_script import model_name

    from labtui.core.pipeline.session import Session
    from labtui.core.workspace.project import Project

    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    project = Project.create(tmp_path / "claim", "moons")
    wire_project(project.root, llm_server.url, arxiv_server.url)
    _with_aider(project.root)
    research = ClaimingResearch(project.root)
    research.moons.install(llm_server)
    llm_server.default(model_name("writeup").removeprefix("openai/"), research.writeup)
    port = WaivingPort()
    assert Session.open(project.root).run(port) == "stopped"
    first, again = [r for r in port.asked if "paper drafted" in r.title][:2]
    assert "approve" not in first.options and "waive" in first.options
    assert "1 sentence(s) claim what the runs contradict" in first.title
    assert "match no run" not in first.title, "its numbers are all traced"
    assert ClaimingResearch.CLAIM in first.body and "within noise" in first.body
    assert "approve" in again.options
    fix_prompts = [
        r
        for r in llm_server.requests_for("scripted-writeup")
        if ClaimingResearch.CLAIM in json.dumps(r) and "You wrote that" in json.dumps(r)
    ]
    assert fix_prompts, "the contradicted sentence went back to the model first"
    [saved] = json.loads((project.root / PROVENANCE).read_text())["contradicted"]
    assert saved["sentence"] == ClaimingResearch.CLAIM and saved["waived"].startswith("quoted")


def test_runs_named_by_number_are_names_not_results():
    # Recorded words (qwen15 moons b8 abstract): "1" and "3" of "run 1-3" were traced to
    # LEARNING_RATE 0.01 read as 1 % and to N_SEEDS 3.
    text = (
        "early stopping (run 1-3) against run\\_0, runs 1 and 2, run~4, Run 5, 6 and run 7 "
        "reached 0.9367 over 3 seeds; in run 1, 93.4\\% and run 2, 0.9 and run 3 or 4"
    )
    found = numbers_to_check(f"\\begin{{abstract}}{text}\\end{{abstract}}")
    assert [w.text for w in found] == ["0.9367", "3", "93.4\\%", "0.9"]
    listed = numbers_to_check(
        "\\section{Results}\n1. Accuracy was 0.93.\n  2) Loss 0.2 fell.\n3.5 ran"
    )
    assert [w.text for w in listed] == ["0.93", "0.2", "3.5"], "a list's numbers are names"


def test_a_whole_number_is_a_setting_as_written_never_times_a_hundred():
    rate = Source(0.01, "run_0", "LEARNING_RATE", "c0ffee", kind="config")
    [one, pct] = numbers_to_check("\\begin{abstract}trained 1 model at 1\\%\\end{abstract}")
    report = trace_written([one, pct], [rate])
    assert [w.text for w in report.untraced] == ["1"]
    assert [(w.text, s.what) for w, s in report.traced] == [("1\\%", "LEARNING_RATE")]


def test_a_reviewers_summary_that_the_runs_contradict_is_refused(identical_project: Path):
    # Issue 28: the reviewer's summary said loss increased where it fell. Here the runs are
    # identical: a summary that calls run_1 an improvement is refused, one that says so passes.
    from labtui.core.provenance.checks import text_contradiction
    from labtui.core.review.grounding import PaperIndex, ground_review

    claims = "The paper shows that the change improves test accuracy over the baseline."
    problem = text_contradiction(identical_project, claims)
    assert problem.startswith("says that ") and ", but " in problem
    assert text_contradiction(identical_project, "Test accuracy is unchanged by it.") == ""
    index = PaperIndex(
        "We train a network on two moons and report test accuracy. " * 20,
        lambda summary: text_contradiction(identical_project, summary),
    )
    fields = {
        "Summary": f"We train a network on two moons. {claims}",
        "Strengths": [],
        "Weaknesses": [],
    }
    with pytest.raises(ValueError, match=r"field 'Summary' says that .*: say what the runs show"):
        ground_review(fields, index)
    # a summary naming too little of the paper, and nothing it lacks, is said to (it once
    # raised an IndexError listing the absent terms it did not have)
    with pytest.raises(ValueError, match="names too little of this paper: say what"):
        ground_review({**fields, "Summary": "It reports accuracy on a task."}, index)


# -- a setting the code has is a traced fact, whatever its case or wherever the code sets it ----

SETTINGS_SCRIPT = """import argparse

n_features = 64  # a lowercase constant is as much a setting as EPOCHS


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--out_dir", default="run_0")
    return parser.parse_args()
"""

SETTINGS_PAPER = r"""\begin{abstract}
With 64 features, a learning rate of 0.0003 and 20 epochs the network reaches 0.9367.
\end{abstract}
"""


def test_a_lowercase_constant_and_an_argparse_default_are_traced(tmp_path: Path):
    root = tmp_path / "p"
    root.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@x.org"], ["config", "user.name", "t"]):
        _git(root, *args)
    (root / "experiment.py").write_text(SETTINGS_SCRIPT)
    _git(root, "add", "experiment.py")
    _git(root, "commit", "-qm", "baseline")
    (root / "run_0").mkdir()
    (root / "run_0" / "final_info.json").write_text(json.dumps(BASE))
    argv = ["python", "experiment.py", "--out_dir=run_0", "--epochs", "20"]
    write_run_record(root / "run_0", RunRecord(argv=argv, commit=_git(root, "rev-parse", "HEAD")))
    (root / "paper.tex").write_text(SETTINGS_PAPER)

    report = check_paper(root, root / "paper.tex")
    assert report.untraced == []
    traced = {w.text: (s.what, s.kind) for w, s in report.traced}
    assert traced["64"] == ("n_features", "config")
    assert traced["0.0003"] == ("--lr", "config"), "the default the command line left alone"
    assert traced["20"] == ("--epochs", "config"), "the command line's value"
    settings = {s.what: s.value for s in run_sources(root) if s.kind == "config"}
    assert settings["--epochs"] == 20, "the command line's value replaces the default 10"
