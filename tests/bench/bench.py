"""Benchmarks for the closing notes (not run by pytest): startup, the TUI, end-to-end wall times.

    .venv/bin/python tests/bench/bench.py [--repeat 5] [--lines 100000] [--skip-pipeline]
                                          [--skip-tui] [--skip-pty-stream] [--tracemalloc]

- `labtui --help` and `labtui --version`: wall time of the console script, median of N runs.
- `import labtui.tui.cli`: what the CLI pays before parsing arguments.
- first paint of the app (Textual, headless, 100x30): App.run_test until mounted.
- the TUI (tui_bench.py, which documents its methods): first paint of the real `labtui` in a
  pty and where its time goes; 100k log lines through run_process with and without the app;
  key-press-to-paint latency while they stream; memory.
- the whole pipeline, `labtui new` + `labtui run --headless --auto` on the moons template against
  the scripted LLM server and the loopback arXiv server (the test doubles from tests/): once as
  the tests wire it (one reviewer), once with the reviewer's defaults (3 reviewers reflecting up
  to twice, an Area Chair) and one improvement round; then `labtui review` on its PDF.
- reading a paper for the reviewer: `paper_markdown` (structure) against `pdf_text` (plain) on
  a long article compiled here with TeX.
- the reviewer's ensemble against a model that takes 1 s per answer (the scripted server, slowed):
  3 reviewers working at once, each reflecting, then the Area Chair.

Prints one table and one JSON line (`{"bench": "labtui", "results": {...}}`). Needs no GPU and no
network; about a minute with the defaults (+20 s with --tracemalloc). Numbers only: nothing here
asserts a goal.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from tui_bench import Row, json_line, machine, print_machine, print_table, tui_rows  # noqa: E402

from labtui.core.settings.templates import copy_template  # noqa: E402


def timed(argv: list[str], **kwargs) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - started


def median_row(key: str, label: str, repeat: int, argv: list[str], goal: str = "") -> Row:
    samples = [timed(argv) for _ in range(repeat)]
    return Row(
        key,
        label,
        statistics.median(samples) * 1000,
        "ms",
        goal,
        f"median of {repeat}, best {min(samples) * 1000:.0f} ms",
    )


def labtui() -> str:
    return str(Path(sys.executable).with_name("labtui"))


def startup_rows(repeat: int) -> list[Row]:
    return [
        median_row("help_ms", "labtui --help", repeat, [labtui(), "--help"]),
        median_row("version_ms", "labtui --version", repeat, [labtui(), "--version"]),
        median_row(
            "import_cli_ms",
            "import labtui.tui.cli",
            repeat,
            [sys.executable, "-c", "import labtui.tui.cli"],
        ),
        median_row("python_ms", "(bare python -c pass)", repeat, [sys.executable, "-c", "pass"]),
    ]


# The app against an idle session (every attribute of the Session protocol, nothing to run).
FIRST_PAINT = """
import asyncio, time
started = time.perf_counter()
from labtui.tui.app import LabtuiApp
from labtui.core.events import Bus
class Idle:
    project_name = "bench"
    budget_usd = 10.0
    commit_log = None
    project_root = None
    bus = Bus()
    def history(self): return []
    def model_problems(self): return []
    def stage_models(self): return {}
    def leave_note(self, text): return None
    def run(self, port): return "finished"
    def request_stop(self): pass
async def main():
    app = LabtuiApp(Idle(), auto=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        print(f"{time.perf_counter() - started:.3f}")
asyncio.run(main())
"""


def first_paint_headless_row(repeat: int) -> Row:
    samples = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", FIRST_PAINT], capture_output=True, text=True, check=True
        )
        samples.append(float(out.stdout.strip().splitlines()[-1]))
    return Row(
        "first_paint_headless_ms",
        "app import + mount (headless)",
        statistics.median(samples) * 1000,
        "ms",
        note=f"median of {repeat}, best {min(samples) * 1000:.0f} ms; in-process clock, "
        "until run_test's pilot.pause() returns (it waits for the app to go idle)",
    )


def pipeline_rows(*, reviewers: bool) -> list[Row]:
    """The pipeline end to end; with ``reviewers``, the review as a researcher would run it."""
    from conftest import TEST_API_KEY, wire_project
    from support.fake_arxiv import FakeArxiv
    from support.research_script import MoonsResearch
    from support.scripted_llm import ScriptedLLMServer

    from labtui.core.settings.config import load_config, save_config
    from labtui.core.settings.sections import ReviewSection
    from labtui.core.stage_list import STAGES

    os.environ["LABTUI_API_KEY"] = TEST_API_KEY
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLMServer() as llm, FakeArxiv() as arxiv:
        root = Path(tmp) / "demo"
        new_s = timed([labtui(), "new", str(root), "--template", "moons"])
        wire_project(root, llm.url, arxiv.url)
        if reviewers:
            config = load_config(root)
            config.review = ReviewSection(improvements=1)
            save_config(config, root)
        MoonsResearch(root).install(llm)
        started = time.perf_counter()
        out = subprocess.run(
            [labtui(), "run", "--headless", "--auto"], cwd=root, capture_output=True, text=True
        )
        run_s = time.perf_counter() - started
        if out.returncode != 0:
            raise RuntimeError(out.stdout[-2000:] + out.stderr[-2000:])
        prompt = sum(u.get("prompt_tokens", 0) for u in llm.usage.values())
        completion = sum(u.get("completion_tokens", 0) for u in llm.usage.values())
        note = (
            f"{len(STAGES)} stages; {len(llm.requests)} LLM requests; "
            f"{prompt:,} prompt + {completion:,} completion tokens (scripted)"
        )
        if not reviewers:
            return [
                Row("new_s", "labtui new (+ baseline)", new_s, "s"),
                Row("pipeline_s", "labtui run --headless --auto", run_s, "s", note=note),
            ]
        reviewed = len(llm.requests_for("scripted-review"))
        env = {**os.environ, "LABTUI_API_BASE": llm.url, "LABTUI_MODEL": "openai/scripted-review"}
        review_s = timed([labtui(), "review", str(root / "paper.pdf")], env=env)
        return [
            Row(
                "pipeline_reviewers_s",
                "the same, 3 reviewers + 1 improvement round",
                run_s,
                "s",
                note=f"{note}; {reviewed} of them the reviewer's",
            ),
            Row(
                "review_cli_s",
                "labtui review paper.pdf (defaults)",
                review_s,
                "s",
                note="3 reviewers, each reflecting, and the Area Chair: 7 requests",
            ),
        ]


LONG_PAPER_SECTIONS = 12


def long_paper(folder: Path) -> Path:
    """An article of about 20 pages, compiled here: sections, subsections, a table per section."""
    from labtui.core.latex.compile import compile_latex

    words = "regularisation width noise seeds baseline accuracy network training loss".split()
    paragraph = " ".join(words[(i * 7) % len(words)] for i in range(160)) + "."
    body = []
    for number in range(1, LONG_PAPER_SECTIONS + 1):
        body.append(f"\\section{{Section {number}}}\n" + f"{paragraph}\n\n" * 3)
        body.append(f"\\subsection{{Part {number}.1}}\n" + f"{paragraph}\n\n" * 3)
        body.append(
            "\\begin{tabular}{lrr}Method & Acc & Loss\\\\ A & 0.93 & 0.21\\\\ "
            "B & 0.85 & 0.40\\end{tabular}\n\n"
        )
    tex = folder / "long.tex"
    tex.write_text(
        "\\documentclass{article}\\title{A Long Paper}\\author{labtui}\\begin{document}"
        "\\maketitle\\begin{abstract}"
        + paragraph
        + "\\end{abstract}\n"
        + "".join(body)
        + "\\end{document}\n"
    )
    outcome = compile_latex(tex, folder / "long.pdf", timeout_s=300)
    if not outcome.ok:
        raise RuntimeError(outcome.log_tail)
    return folder / "long.pdf"


REVIEW_LATENCY_S = 1.0


def ensemble_rows() -> list[Row]:
    """Wall time of a 3-reviewer panel when each answer takes REVIEW_LATENCY_S, against the sum
    of the answers' latencies (what reviewers one after another would wait)."""
    from conftest import TEST_API_KEY
    from support.research_script import scripted_reviewer
    from support.scripted_llm import Fault, ScriptedLLMServer

    from labtui.core.review.reviewer import review_panel, standalone_llm
    from labtui.core.settings.prompts import load_prompt
    from labtui.core.settings.sections import ReviewSection

    os.environ["LABTUI_API_KEY"] = TEST_API_KEY
    with ScriptedLLMServer() as llm:
        llm.default("scripted-review", Fault(delay_s=REVIEW_LATENCY_S, then=scripted_reviewer))
        os.environ["LABTUI_API_BASE"] = llm.url
        reviewer = standalone_llm("openai/scripted-review", 1.0, emit=lambda event: None)
        reviewer.chat([{"role": "user", "content": "warm up litellm"}])
        started = time.perf_counter()
        paper = "# The width of an MLP on two moons"  # what REVIEW's points name
        review_panel(reviewer, load_prompt, paper, ReviewSection())
        wall = time.perf_counter() - started
        answers = len(llm.requests_for("scripted-review")) - 1
    return [
        Row(
            "ensemble_s",
            f"3 reviewers + Area Chair, {REVIEW_LATENCY_S:g} s per answer",
            wall,
            "s",
            note=f"{answers} answers: {answers * REVIEW_LATENCY_S:g} s one after another",
        )
    ]


def paper_reading_rows(repeat: int) -> list[Row]:
    from labtui.core.pdf.document import page_count, pdf_text
    from labtui.core.pdf.markdown import paper_markdown

    with tempfile.TemporaryDirectory() as tmp:
        pdf = long_paper(Path(tmp))
        pages = page_count(pdf)
        rows = []
        for key, label, read in (
            ("paper_markdown_ms", "paper_markdown (reviewer's reading)", paper_markdown),
            ("pdf_text_ms", "pdf_text (plain)", pdf_text),
        ):
            samples = []
            for _ in range(repeat):
                started = time.perf_counter()
                text = read(pdf)
                samples.append((time.perf_counter() - started) * 1000)
            headings = sum(line.startswith("#") for line in text.splitlines())
            rows.append(
                Row(
                    key,
                    label,
                    statistics.median(samples),
                    "ms",
                    note=f"{pages} pages, {len(text):,} characters, {headings} headings",
                )
            )
        return rows


def template_rows() -> list[Row]:
    """Each bundled template's smoke run (LABTUI_SMOKE=1), `experiment.py` then `plot.py`, in a
    fresh copy; the default (GPU-sized) runs are minutes to hours and are not timed here."""
    import tempfile

    from labtui.core.settings.templates import list_templates

    templates = TESTS.parent / "templates"
    rows = []
    for name in list_templates():
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch) / name
            copy_template(templates / name, root)
            env = {**os.environ, "LABTUI_SMOKE": "1"}
            run_s = timed([sys.executable, "experiment.py", "--out_dir=run_0"], cwd=root, env=env)
            plot_s = timed([sys.executable, "plot.py"], cwd=root, env=env)
        rows.append(
            Row(
                f"template_{name}_smoke_s",
                f"template {name}: smoke run",
                run_s,
                "s",
                note=f"plot.py {plot_s:.1f} s",
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--lines", type=int, default=100_000, help="lines the chatty run prints")
    parser.add_argument("--skip-pipeline", action="store_true")
    parser.add_argument("--skip-tui", action="store_true")
    parser.add_argument("--skip-pty-stream", action="store_true", help="no (e): pty + 100k lines")
    parser.add_argument("--tracemalloc", action="store_true", help="one more, traced, app run")
    parser.add_argument("--skip-templates", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = startup_rows(args.repeat)
    rows.append(first_paint_headless_row(args.repeat))
    if not args.skip_tui:
        tui, _ = tui_rows(
            args.repeat, args.lines, pty_stream=not args.skip_pty_stream, trace=args.tracemalloc
        )
        rows += tui
    rows += paper_reading_rows(args.repeat)
    rows += ensemble_rows()
    if not args.skip_pipeline:
        rows += pipeline_rows(reviewers=False)
        rows += pipeline_rows(reviewers=True)
    if not args.skip_templates:
        rows += template_rows()
    info = machine(load)
    print_machine(info)
    print_table(rows)
    print(json_line(rows, machine=info))


if __name__ == "__main__":
    main()
