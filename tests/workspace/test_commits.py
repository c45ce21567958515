"""CommitLog against real git repositories made in a temporary folder: the history as a labtui
project writes it (stage-prefixed messages, run tags), one commit's diff, the working tree."""

from __future__ import annotations

from pathlib import Path

import git
import pytest
from support.git_history import HISTORY, commit, init_repo

from labtui.core.errors import LabtuiError
from labtui.core.workspace.history import (
    MAX_DIFF_BYTES,
    WORKING_TREE_MESSAGE,
    CommitEntry,
    CommitLog,
    newest_of_next_group,
    newest_of_previous_group,
    run_of,
    stage_of,
)

# (message, files written) of a small project's history, oldest first.


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository with HISTORY committed; the run_1 results and the notebook commit tagged."""
    root = tmp_path / "project"
    repo = init_repo(root)
    shas = [commit(repo, message, files) for message, files in HISTORY]
    repo.create_tag("labtui/smoothing/run_1", ref=shas[5], message="run_1 of smoothing")
    repo.create_tag("labtui/smoothing/run_2", ref=shas[7])  # a lightweight tag names the run
    return root, shas


# -- entries -----------------------------------------------------------------------------------


def test_entries_are_oldest_first_with_stage_run_and_tags(project):
    root, shas = project
    entries = CommitLog(root).entries()
    assert [entry.sha for entry in entries] == shas
    assert [(entry.stage, entry.run, entry.message) for entry in entries] == [
        ("", "", "labtui: new project from template moons"),
        ("baseline", "run_0", "baseline: run_0 results"),
        ("ideas", "", "ideas: 1 idea"),
        ("experiments", "run_1", "experiments: run_1 code (attempt 1)"),
        ("experiments", "run_1", "experiments: run_1 code (attempt 2)"),
        ("experiments", "run_1", "experiments: run_1 results for smoothing"),
        ("plots", "", "plots: figures for run_0, run_1"),  # several runs: none of them
        ("", "run_2", "notebook: record the results"),  # the run comes from the tag
    ]
    assert entries[5].tags == ("labtui/smoothing/run_1",)
    assert entries[7].tags == ("labtui/smoothing/run_2",)
    assert all(entry.tags == () for entry in entries[:5])


def test_entries_limit_keeps_the_newest(project):
    root, shas = project
    assert [entry.sha for entry in CommitLog(root).entries(limit=3)] == shas[-3:]


def test_entries_of_a_repository_without_commits(tmp_path):
    init_repo(tmp_path / "empty")
    assert CommitLog(tmp_path / "empty").entries() == []


def at_minute(monkeypatch: pytest.MonkeyPatch, minute: int) -> None:
    """The next commits are dated ``minute`` minutes into the day (date order is tested)."""
    date = f"2024-05-01T12:{minute:02d}:00+00:00"
    monkeypatch.setenv("GIT_AUTHOR_DATE", date)
    monkeypatch.setenv("GIT_COMMITTER_DATE", date)


def test_a_searchs_branches_are_listed_in_date_order_beside_head(tmp_path, monkeypatch):
    """A climb commits its attempts on labtui/climb/<idea> in a worktree and a tree search each
    node on labtui/tree/<idea>/node-<n>: the diff pane steps through them before the best is
    merged into HEAD. Other branches stay out, and a merged commit is listed once."""
    root = tmp_path / "project"
    repo = init_repo(root)
    at_minute(monkeypatch, 0)
    start = commit(repo, "baseline: run_0 results", {"experiment.py": "score = 0.5\n"})
    worktree = tmp_path / "climb"
    repo.git.worktree("add", "-q", "-b", "labtui/climb/toy", str(worktree), start)
    climb = git.Repo(worktree)
    at_minute(monkeypatch, 1)
    commit(climb, "experiments: run_1 code (attempt 1)", {"experiment.py": "score = 0.6\n"})
    at_minute(monkeypatch, 2)
    commit(repo, "experiments: climb attempt 1 keep: set SCORE to 0.6", {"ledger.tsv": "1\n"})
    at_minute(monkeypatch, 3)
    commit(climb, "experiments: run_1 results (kept)", {"run_1/final_info.json": "{}\n"})
    at_minute(monkeypatch, 4)
    repo.git.branch("labtui/tree/toy/node-1", start)
    repo.git.branch("feature", start)
    for branch, message in (
        ("labtui/tree/toy/node-1", "experiments: run_1 code (node 1)"),
        ("feature", "my own work"),
    ):
        repo.git.checkout("-q", branch)
        commit(repo, message, {"other.py": "x = 1\n"})
    repo.git.checkout("-q", "main")
    listed = [entry.message for entry in CommitLog(root).entries()]
    assert listed == [
        "baseline: run_0 results",
        "experiments: run_1 code (attempt 1)",
        "experiments: climb attempt 1 keep: set SCORE to 0.6",
        "experiments: run_1 results (kept)",
        "experiments: run_1 code (node 1)",
    ]
    at_minute(monkeypatch, 5)
    repo.git.merge("--no-ff", "-q", "-m", "experiments: the climb's best", "labtui/climb/toy")
    listed = [entry.message for entry in CommitLog(root).entries()]
    assert listed.count("experiments: run_1 results (kept)") == 1
    assert listed[-1] == "experiments: the climb's best"
    assert [entry.message for entry in CommitLog(root).entries(limit=2)] == listed[-2:]


def test_only_the_first_line_of_a_message_is_listed(tmp_path):
    repo = init_repo(tmp_path / "repo")
    commit(repo, "review: scores\n\nrun_7 was the best", {"review.md": "ok\n"})
    (entry,) = CommitLog(tmp_path / "repo").entries()
    assert (entry.message, entry.stage, entry.run) == ("review: scores", "review", "")


def test_stage_and_run_labels():
    assert stage_of("writeup: fill the paper") == "writeup"
    assert stage_of("baseline: run_0 results") == "baseline"
    assert stage_of("labtui: keep changes") == ""
    assert stage_of("experiments run_1") == ""
    assert run_of("experiments: run_12 code") == "run_12"
    assert run_of("my_run_3 and xrun_4") == ""
    assert run_of("plots: run_1, run_2") == ""
    assert run_of("run_1 again run_1") == "run_1"
    assert run_of("notebook", ["v1", "labtui/idea/run_5"]) == "run_5"


# -- groups ------------------------------------------------------------------------------------


def entries_of(*labels: tuple[str, str]) -> list[CommitEntry]:
    return [CommitEntry(f"{n:040x}", "m", stage, run, ()) for n, (stage, run) in enumerate(labels)]


def test_group_jumps_land_on_the_newest_commit_of_a_group():
    entries = entries_of(
        ("", ""),  # 0
        ("baseline", "run_0"),  # 1
        ("experiments", "run_1"),  # 2
        ("experiments", "run_1"),  # 3
        ("experiments", "run_2"),  # 4
        ("experiments", "run_2"),  # 5
    )
    assert newest_of_previous_group(entries, 4) == 3
    assert newest_of_previous_group(entries, 3) == 1
    assert newest_of_previous_group(entries, 0) is None
    assert newest_of_previous_group(entries, None) == 5  # from a commit newer than the list
    assert newest_of_next_group(entries, 1) == 3
    assert newest_of_next_group(entries, 2) == 5
    assert newest_of_next_group(entries, 4) == 5  # the last group: its newest commit
    assert newest_of_next_group(entries, 5) is None
    assert newest_of_next_group(entries, None) is None
    assert newest_of_previous_group([], None) is None


# -- show --------------------------------------------------------------------------------------


def test_show_the_root_commit_against_the_empty_tree(project):
    root, shas = project
    info = CommitLog(root).show(shas[0])
    assert info.sha == shas[0]
    assert info.message == "labtui: new project from template moons"
    assert sorted(info.files) == [".gitignore", "experiment.py"]
    assert "new file mode" in info.diff
    assert "+lr = 0.1" in info.diff


def test_show_a_later_commit_against_its_parent(project):
    root, shas = project
    info = CommitLog(root).show(shas[4][:10])  # an abbreviated sha resolves to the full one
    assert info.sha == shas[4]
    assert info.files == ["experiment.py"]
    assert "-epochs = 10" in info.diff
    assert "+epochs = 20" in info.diff
    assert "lr = 0.1" not in info.diff


def test_show_keeps_the_whole_message_and_odd_file_names(tmp_path):
    repo = init_repo(tmp_path / "repo")
    sha = commit(repo, "writeup: fill\n\nsection 2 rewritten", {"a b/naïve.tex": "x\n"})
    info = CommitLog(tmp_path / "repo").show(sha)
    assert info.message == "writeup: fill\n\nsection 2 rewritten"
    assert info.files == ["a b/naïve.tex"]


def test_a_huge_diff_is_cut(tmp_path):
    repo = init_repo(tmp_path / "repo")
    line = "x" * 99 + "\n"
    sha = commit(repo, "data: big", {"big.txt": line * (MAX_DIFF_BYTES // 100 + 5000)})
    diff = CommitLog(tmp_path / "repo").show(sha).diff
    assert MAX_DIFF_BYTES <= len(diff) < MAX_DIFF_BYTES + 200
    assert diff.endswith("diff cut at 2 MB; git has it all")


@pytest.mark.parametrize("sha", ["0" * 40, "nonsense", "HEAD~99"])
def test_show_an_unknown_commit(project, sha):
    root, _ = project
    with pytest.raises(LabtuiError) as raised:
        CommitLog(root).show(sha)
    assert f"no commit {sha}" in raised.value.message
    assert raised.value.hint


@pytest.mark.parametrize("sha", ["", "--output=/tmp/x", "HEAD --stat"])
def test_show_refuses_what_is_not_a_commit_id(project, sha):
    root, _ = project
    with pytest.raises(LabtuiError, match="is not a commit id"):
        CommitLog(root).show(sha)


# -- working tree ------------------------------------------------------------------------------


def test_a_clean_working_tree(project):
    root, _ = project
    (root / "train.log").write_text("ignored\n")  # matched by .gitignore: not listed
    info = CommitLog(root).working_tree()
    assert (info.sha, info.message, info.files, info.diff) == ("", WORKING_TREE_MESSAGE, [], "")


def test_working_tree_shows_staged_unstaged_and_untracked(project):
    root, _ = project
    repo = git.Repo(root)
    (root / "experiment.py").write_text("lr = 0.05\nepochs = 30\n")  # unstaged
    (root / "ideas.json").write_text('["smoothing"]\n')
    repo.git.add("ideas.json")  # staged
    (root / "scratch.py").write_text("print(1)\n")  # untracked
    (root / "train.log").write_text("ignored\n")
    info = CommitLog(root).working_tree()
    assert info.files == ["experiment.py", "ideas.json", "scratch.py"]
    assert "+epochs = 30" in info.diff
    assert '+["smoothing"]' in info.diff
    assert info.diff.endswith("untracked files (not in git yet):\n?? scratch.py\n")
    assert "train.log" not in info.diff


def test_working_tree_before_the_first_commit(tmp_path):
    repo = init_repo(tmp_path / "repo")
    (tmp_path / "repo" / "a.py").write_text("a = 1\n")
    repo.git.add("a.py")
    (tmp_path / "repo" / "b.py").write_text("b = 2\n")
    info = CommitLog(tmp_path / "repo").working_tree()
    assert info.files == ["a.py", "b.py"]
    assert "+a = 1" in info.diff
    assert "?? b.py" in info.diff


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["entries", "working_tree", "show"])
def test_not_a_repository(tmp_path, call):
    folder = tmp_path / "plain"
    folder.mkdir()
    log = CommitLog(folder)
    with pytest.raises(LabtuiError, match="is not a git repository") as raised:
        log.show("HEAD") if call == "show" else getattr(log, call)()
    assert raised.value.hint


def test_a_folder_inside_a_repository_is_not_the_repository(project):
    root, _ = project
    assert (root / "run_0").is_dir()
    with pytest.raises(LabtuiError, match="is not a git repository"):
        CommitLog(root / "run_0").entries()


def test_a_missing_folder(tmp_path):
    with pytest.raises(LabtuiError, match="does not exist"):
        CommitLog(tmp_path / "gone").entries()


def test_a_surrounding_git_process_does_not_redirect_the_log(project, tmp_path, monkeypatch):
    root, shas = project
    other = tmp_path / "other"
    init_repo(other)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert [entry.sha for entry in CommitLog(root).entries()] == shas
