"""A small git history for the tests of the commit browser."""

from __future__ import annotations

from pathlib import Path

import git

HISTORY: list[tuple[str, dict[str, str]]] = [
    (
        "labtui: new project from template moons",
        {"experiment.py": "lr = 0.1\nepochs = 10\n", ".gitignore": "*.log\n"},
    ),
    ("baseline: run_0 results", {"run_0/final_info.json": '{"val_loss": 1.52}\n'}),
    ("ideas: 1 idea", {"ideas.json": "[]\n"}),
    ("experiments: run_1 code (attempt 1)", {"experiment.py": "lr = 0.05\nepochs = 10\n"}),
    ("experiments: run_1 code (attempt 2)", {"experiment.py": "lr = 0.05\nepochs = 20\n"}),
    ("experiments: run_1 results for smoothing", {"run_1/final_info.json": "{}\n"}),
    ("plots: figures for run_0, run_1", {"plot.py": "import matplotlib\n"}),
    ("notebook: record the results", {"notes.md": "# notes\n"}),
]


def init_repo(root: Path) -> git.Repo:
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as writer:
        writer.set_value("user", "name", "labtui")
        writer.set_value("user", "email", "labtui@localhost")
    return repo


def commit(repo: git.Repo, message: str, files: dict[str, str]) -> str:
    root = Path(repo.working_dir)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    repo.git.add("--all")
    repo.git.commit("-m", message, "--no-verify")
    return repo.head.commit.hexsha
