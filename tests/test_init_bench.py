"""The public-repository bench of `labtui init` (tests/bench/init_bench.py --repos, issue 43): its
data file and the table it writes, on rows made here; nothing is cloned and nothing runs."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent / "bench"
ISSUE_30 = {"karpathy/makemore", "danielmamay/grokking", "karpathy/nanoGPT"}


@pytest.fixture
def init_bench(monkeypatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("init_bench")


def test_the_data_file_lists_ten_repositories_of_different_shapes(init_bench) -> None:
    repos = init_bench.read_repos(BENCH / "init_repos.toml")
    assert len(repos) >= 10
    assert len({repo.name for repo in repos}) == len(repos)
    assert len({repo.kind for repo in repos}) == len(repos)
    assert all(re.fullmatch(r"[0-9a-f]{40}", repo.commit) for repo in repos)
    assert all(repo.source.startswith("github:") and repo.shape for repo in repos)
    assert not {repo.owner_name for repo in repos} & ISSUE_30


def test_the_table_has_a_row_each_and_the_reason_of_each_failure(init_bench) -> None:
    ran = {
        "name": "a", "source": "github:o/a", "commit": "0" * 40, "shape": "long words",
        "kind": "argparse", "drafted": {"command": "{python} train.py --steps 10",
                                        "metrics": {"val_loss": "lower"}},
        "final": {"command": "{python} train.py --steps 400"}, "run_0": {"val_loss": 0.123456},
        "wall_s": 12.5, "returncode": 0, "as_proposed": True,
    }  # fmt: skip
    failed = {
        "name": "b", "source": "github:o/b", "commit": "1" * 40, "shape": "plain", "kind": "",
        "drafted": {"command": "", "metrics": {}}, "wall_s": 3.0, "returncode": 2,
        "as_proposed": False, "reason": "no metric named\nfix: name one",
    }  # fmt: skip
    surveyed = {
        "name": "c",
        "source": "github:o/c",
        "commit": "2" * 40,
        "shape": "s",
        "drafted": {},
    }
    table = init_bench.markdown_table([ran, failed, surveyed])
    rows = [line for line in table.splitlines() if line.startswith("| o/")]
    assert rows[0] == (
        "| o/a | `00000000` | argparse | `{python} train.py --steps 10` → run as "
        "`{python} train.py --steps 400` | val_loss (lower) | val_loss 0.1235 | 12.5 s | yes |"
    )
    assert rows[1].endswith("| `(none)` | (none) | — | 3.0 s | no (exit 2) |")
    assert rows[2].endswith("| — | — | — |")
    assert "**b** (exit 2):\n    no metric named\n    fix: name one" in table


def test_open_questions_are_read_from_the_proposal(init_bench, tmp_path: Path) -> None:
    (tmp_path / ".labtui/init").mkdir(parents=True)
    (tmp_path / ".labtui/init/labtui.toml").write_text(
        "# To decide (the repository does not say):\n#   - Which script?\n#     Say so.\n"
        '#   - Which metric?\n\n[experiment]\ncommand = "{python} x.py"\n'
        '[results]\nsource = "stdout"\nmetrics = { acc = "higher" }\n'
    )
    proposal = init_bench.proposal_of(tmp_path)
    assert proposal["questions"] == ["Which script? Say so.", "Which metric?"]
    assert proposal["command"] == "{python} x.py"
    assert proposal["metrics"] == {"acc": "higher"}


def test_a_blob_the_snapshot_lacks_is_found(init_bench, tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    (repo / "a.txt").write_text("kept\n")
    (repo / "big.bin").write_text("gone\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=repo, check=True)
    blob = subprocess.run(
        ["git", "rev-parse", "HEAD:big.bin"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    (repo / f".git/objects/{blob[:2]}/{blob[2:]}").unlink()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    assert init_bench.missing_blobs(repo, head.stdout.strip()) == ["big.bin"]
