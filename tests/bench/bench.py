"""Benchmarks for the closing notes (not run by pytest): startup and end-to-end wall times.

    .venv/bin/python tests/bench/bench.py [--repeat 5] [--skip-pipeline]

- `labtui --help` and `labtui --version`: wall time of the console script, median of N runs.
- `import labtui.tui.cli`: what the CLI pays before parsing arguments.
- first paint of the app (Textual, headless, 100x30): App.run_test until mounted.
- the whole pipeline, `labtui new` + `labtui run --headless --auto` on the moons template against
  the scripted LLM server and the loopback arXiv server (the test doubles from tests/).
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


def timed(argv: list[str], **kwargs) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - started


def median_of(repeat: int, argv: list[str]) -> tuple[float, float]:
    samples = [timed(argv) for _ in range(repeat)]
    return statistics.median(samples), min(samples)


def labtui() -> str:
    return str(Path(sys.executable).with_name("labtui"))


def bench_startup(repeat: int) -> None:
    for args in (["--help"], ["--version"]):
        med, best = median_of(repeat, [labtui(), *args])
        print(
            f"labtui {' '.join(args):<10} median {med * 1000:6.0f} ms   best {best * 1000:6.0f} ms"
        )
    med, best = median_of(repeat, [sys.executable, "-c", "import labtui.tui.cli"])
    print(f"import labtui.tui.cli  median {med * 1000:6.0f} ms   best {best * 1000:6.0f} ms")
    med, best = median_of(repeat, [sys.executable, "-c", "pass"])
    print(f"(bare python -c pass   median {med * 1000:6.0f} ms)")


FIRST_PAINT = """
import asyncio, time, sys
started = time.perf_counter()
from labtui.tui.app import LabtuiApp
from labtui.core.events import Bus
class Idle:
    project_name = "bench"
    bus = Bus()
    def history(self): return []
    def model_problems(self): return []
    def run(self, port): return "finished"
    def request_stop(self): pass
async def main():
    app = LabtuiApp(Idle(), auto=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        print(f"{time.perf_counter() - started:.3f}")
asyncio.run(main())
"""


def bench_first_paint(repeat: int) -> None:
    samples = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", FIRST_PAINT], capture_output=True, text=True, check=True
        )
        samples.append(float(out.stdout.strip().splitlines()[-1]))
    print(
        f"app first paint        median {statistics.median(samples) * 1000:6.0f} ms   "
        f"best {min(samples) * 1000:6.0f} ms  (import + mount, headless 100x30)"
    )


def bench_pipeline() -> None:
    from conftest import TEST_API_KEY, wire_project
    from fake_arxiv import FakeArxiv
    from research_script import MoonsResearch
    from scripted_llm import ScriptedLLMServer

    os.environ["LABTUI_API_KEY"] = TEST_API_KEY
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLMServer() as llm, FakeArxiv() as arxiv:
        root = Path(tmp) / "demo"
        new_s = timed([labtui(), "new", str(root), "--template", "moons"])
        wire_project(root, llm.url, arxiv.url)
        MoonsResearch(root).install(llm)
        started = time.perf_counter()
        out = subprocess.run(
            [labtui(), "run", "--headless", "--auto"], cwd=root, capture_output=True, text=True
        )
        run_s = time.perf_counter() - started
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        tokens = {m: u for m, u in llm.usage.items()}
        print(f"labtui new (+ baseline) {new_s:6.1f} s")
        print(
            f"labtui run --auto       {run_s:6.1f} s  (7 stages; {len(llm.requests)} LLM requests)"
        )
        print(f"scripted token usage    {tokens}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-pipeline", action="store_true")
    args = parser.parse_args()
    bench_startup(args.repeat)
    bench_first_paint(args.repeat)
    if not args.skip_pipeline:
        bench_pipeline()


if __name__ == "__main__":
    main()
