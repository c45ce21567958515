"""Which edit format a real model gets right (not run by pytest): one code change per template,
asked as labtui's function edit (``[models] edit_format = "function"``) and, with ``--formats``,
as aider's whole file or SEARCH/REPLACE diff.

    .venv/bin/python tests/bench/edit_formats.py --url http://127.0.0.1:8765/v1 \
        --model openai/local [--templates moons,diffusion_2d,grokking] [--formats function,whole]

For each template and format: a fresh project (`Project.create`), the change asked through the
coder the experiments stage uses, then computed: did the file change, does it parse, did the
change land (a word the change needs is in the new code), did the entry point and every other
definition stay byte-identical, does the template's smoke run (LABTUI_SMOKE=1) still finish,
and the model's time and tokens. Every exchange is written to OUT/<template>-<format>.json.
Numbers only: nothing here asserts a goal.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

CHANGES = {  # one change per template that no setting makes, and the word it cannot do without
    "moons": (
        "In train, add Gaussian input noise as augmentation: before each minibatch's forward "
        "pass, add noise with standard deviation 0.05 to the minibatch inputs (use the "
        "function's random generator).",
        "0.05",
    ),
    "diffusion_2d": (  # the template clips gradients already: another change here
        "In train, add Gaussian noise with standard deviation 0.01 to x0 right after it is "
        "taken from x_train, as data augmentation (use torch.randn with the function's "
        "generator).",
        "0.01",
    ),
    "grokking": (
        "In train, clip the gradient norm to 1.0 after loss.backward() and before the "
        "optimizer step, with torch.nn.utils.clip_grad_norm_.",
        "clip_grad_norm_",
    ),
}


def definitions_outside(code: str, changed: str) -> dict[str, str]:
    """The source of every top-level statement except the definition ``changed``."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    kept = {}
    for node in tree.body:
        name = getattr(node, "name", "") or f"line {node.lineno}"
        if name != changed:
            kept[name] = ast.get_source_segment(code, node) or ""
    return kept


def smoke_runs(root: Path, python: str) -> str:
    """'ok' when the template's smoke run finishes in two minutes, else why not."""
    env = {**os.environ, "LABTUI_SMOKE": "1"}
    try:
        done = subprocess.run(
            [python, "experiment.py", "--out_dir", "run_smoke"],
            cwd=root, env=env, capture_output=True, text=True, timeout=240, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timed out (240 s)"
    return "ok" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr[-200:]}"


def try_format(template: str, edit_format: str, out: Path, python: str) -> dict[str, Any]:
    from labtui.core.checkpoints import ResearcherNotes
    from labtui.core.events import CostUpdate
    from labtui.core.llm.budget import Ledger
    from labtui.core.stage_context import StageContext, StageServices
    from labtui.core.workspace.project import Project

    change, needed = CHANGES[template]
    work = Path(tempfile.mkdtemp(prefix=f"fmt-{template}-"))
    project = Project.create(work / "p", template)
    project.config.models.edit_format = edit_format
    events: list[Any] = []
    ledger = Ledger(0.0, events.append)
    services = StageServices(
        project, events.append, lambda: ledger, ResearcherNotes(events.append), lambda _: {}
    )
    ctx = StageContext(services, "experiments", [])
    before = (project.root / "experiment.py").read_text()
    started = time.monotonic()
    editor = ctx.code_editor()
    if edit_format == "function" and not WHOLE_FALLBACK:
        editor._fallback_factory = _no_fallback  # measure the format alone
    prompt = ctx.prompt(
        "search_edit", run_id="run_1", step_text="a format trial", change=change,
        budget_s="60", notes="",
    )  # fmt: skip
    result = editor.edit(["experiment.py"], prompt, commit_message="format trial")
    wall = time.monotonic() - started
    after = (project.root / "experiment.py").read_text()
    calls = [e for e in events if isinstance(e, CostUpdate)]
    row = {
        "template": template,
        "format": edit_format,
        "changed": after != before,
        "parses": _parses(after),
        "landed": needed in after and needed not in before,
        "rest_kept": definitions_outside(before, "train") == definitions_outside(after, "train"),
        "entry_point": 'if __name__ == "__main__":' in after,
        "smoke": smoke_runs(project.root, python) if after != before and _parses(after) else "-",
        "wall_s": round(wall, 1),
        "calls": len(calls),
        "model_s": round(sum(c.seconds for c in calls), 1),
        "tokens_in": sum(c.tokens_in for c in calls),
        "tokens_out": sum(c.tokens_out for c in calls),
        "error": (result.error or "")[:300],
        "lines_changed": _lines_changed(before, after),
    }
    (out / f"{template}-{edit_format}.json").write_text(
        json.dumps({**row, "reply": result.reply, "diff_after": after}, indent=1)
    )
    return row


WHOLE_FALLBACK = os.environ.get("EDIT_FORMATS_FALLBACK", "") == "1"


class _NoFallback:
    """Instead of aider's whole file: the format's failure, as an unchanged result."""

    def edit(self, files: list[str], prompt: str, **_: Any) -> Any:
        from labtui.core.coding.coder import EditResult

        return EditResult(False, [], None, "", "the function edit failed; no fallback here")


def _no_fallback() -> _NoFallback:
    return _NoFallback()


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def _lines_changed(before: str, after: str) -> int:
    import difflib

    return sum(
        1
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="")
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--templates", default="moons,diffusion_2d,grokking")
    parser.add_argument("--formats", default="function")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="edit-formats-"))
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    from recording_proxy import Recorder, RecordingProxy, StageTracker

    tracker = StageTracker(out / "no-journal.jsonl")
    tracker.current = lambda: "experiments"  # type: ignore[method-assign]  # no journal here
    with RecordingProxy(args.url, Recorder(out / "exchanges.jsonl"), tracker) as proxy:
        os.environ.update(LABTUI_MODEL=args.model, LABTUI_API_BASE=proxy.base_url)
        os.environ.setdefault("LABTUI_API_KEY", "none")
        rows = []
        for template in args.templates.split(","):
            for edit_format in args.formats.split(","):
                row = try_format(template, edit_format, out, sys.executable)
                rows.append(row)
                print(json.dumps(row), flush=True)
    (out / "rows.json").write_text(json.dumps(rows, indent=1))
    print(f"\n{out}")


if __name__ == "__main__":
    main()
