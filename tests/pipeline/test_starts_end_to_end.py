"""The two new starts, each to a reviewed PDF, for real (the scripted LLM server and loopback
arXiv stand in for the world):

- a researcher's own repository from `labtui init`: its own train.py runs, its metrics.json is
  read, plot.py is written for it, only the named sections of its own draft are written, every
  number in the paper is traced (to runs, to the run's arguments, to imported earlier results),
  and everything is committed on labtui's branch: main is never touched;
- a topic alone from `labtui new DIR --idea`: ideas with no code, then the code written for the
  chosen idea at the plan, and the rest of the pipeline as for a template."""

from __future__ import annotations

import json

import pytest
from conftest import TEST_API_KEY, run_labtui, wire_project
from support.research_repo import PAPER, RepoResearch, git, make_repository
from support.research_topic import TOPIC, TopicResearch

from labtui.core.pdf.document import pdf_text

pytestmark = pytest.mark.slow


def test_a_repository_goes_from_init_to_a_reviewed_paper_on_its_own_branch(
    tmp_path, llm_server, arxiv_server, network_guard, monkeypatch
):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    root = make_repository(tmp_path / "repo")
    main = git(root, "rev-parse", "main")
    done = run_labtui("init", "--yes", "--no-model", "--idea", "smaller learning rate", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    earlier = run_labtui("import", "outputs/lr05/metrics.json", "--commit", main, cwd=root)
    assert earlier.returncode == 0, earlier.stderr
    wire_project(root, llm_server.url, arxiv_server.url)
    RepoResearch(root).install(llm_server)

    ran = run_labtui("run", "--headless", "--auto", cwd=root, timeout=600)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr
    assert "pipeline finished" in ran.stdout

    # The repository's own script ran the change; its metrics.json was read into final_info.
    record = json.loads((root / "run_1/labtui_run.json").read_text())
    assert record["argv"][1:] == ["train.py", "--output_dir", "run_1", "--lr", "0.5"]
    assert record["results"]["files"] == ["run_1/metrics.json"]
    assert "0.1 * args.lr" in git(root, "show", "HEAD:train.py")
    # plot.py did not exist: it was written for the repository, and drew the runs.
    assert (root / "plot.py").is_file() and (root / "accuracy.png").is_file()
    # Only the named sections of the researcher's own draft were written.
    tex = (root / "paper/main.tex").read_text()
    intro = PAPER.split("\\section{Introduction}")[1].split("\\section{Experiments}")[0]
    assert intro in tex, "the introduction is the researcher's, untouched"
    assert "TO BE WRITTEN" not in tex and "matters little here" in tex
    # Every number is traced: the runs, the run's --lr, and the imported earlier result.
    provenance = json.loads((root / "provenance.json").read_text())
    assert provenance["untraced"] == [] and not provenance.get("contradicted")
    traced = {entry["number"]: (entry["run"], entry["what"]) for entry in provenance["traced"]}
    assert traced["0.97"] == ("imported_1", "main eval.accuracy")
    assert traced["0.5"] == ("run_0", "--lr"), "the learning rate traces to the run's argument"
    assert len(traced) == 4
    smaller = json.loads((root / "run_1/final_info.json").read_text())["main"]["means"]
    assert f"{smaller['eval.accuracy']:.3f}" in pdf_text(root / "paper.pdf")
    assert json.loads((root / "review.json").read_text())["decision"] in ("Accept", "Reject")
    # All of it on labtui's branch; the researcher's main is exactly as it was.
    assert git(root, "rev-parse", "main") == main
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "labtui/smaller-learning-rate"
    assert git(root, "status", "--porcelain") == ""


def test_a_topic_alone_goes_to_a_reviewed_paper_with_code_the_agents_wrote(
    tmp_path, llm_server, arxiv_server, network_guard, monkeypatch
):
    monkeypatch.setenv("LABTUI_API_KEY", TEST_API_KEY)
    root = tmp_path / "blobs"
    created = run_labtui("new", str(root), "--idea", TOPIC)
    assert created.returncode == 0, created.stderr
    wire_project(root, llm_server.url, arxiv_server.url)
    TopicResearch(root).install(llm_server)

    ran = run_labtui("run", "--headless", "--auto", cwd=root, timeout=600)
    # the scripted writer leaves two sections of the agents' skeleton as placeholders (code
    # writes the third, the setup): the pipeline finishes with the paper incomplete, exit
    # status 3 (0 is every stage done)
    assert ran.returncode == 3, ran.stdout[-4000:] + ran.stderr
    assert "pipeline finished: paper incomplete: 2 open problem(s)" in ran.stdout
    assert "Written for this topic" in ran.stdout  # the plan checkpoint shows the code written
    log = git(root, "log", "--format=%s").splitlines()
    for step in (
        "plan: write prepare.py",
        "plan: write experiment.py",
        "baseline: run_0 results",
        "plan: write latex/template.tex",
        "plan: write plot.py",
    ):
        assert any(line.startswith(step) for line in log), step  # fmt: skip
    newest_first = log.index
    assert newest_first("plan: 1 run(s) for ridge_strength") > newest_first(
        "experiments: run_1 results for ridge_strength"
    )
    assert "RIDGE = 10.0" in (root / "experiment.py").read_text()
    ridge = json.loads((root / "run_1/final_info.json").read_text())["blobs"]["means"]
    assert f"{ridge['test_accuracy']:.3f}" in pdf_text(root / "paper.pdf")
    assert "Problem Setting" in pdf_text(root / "paper.pdf")  # the skeleton the agents adapted
    provenance = json.loads((root / "provenance.json").read_text())
    assert provenance["untraced"] == [] and provenance["traced"]
    assert json.loads((root / "review.json").read_text())["decision"] in ("Accept", "Reject")
