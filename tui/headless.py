"""Headless front end: events printed readably with rich, checkpoints asked on stdin.

This is the same seam the Textual app uses (a bus subscriber and a CheckpointPort), so whatever a
headless run prints is what the panes would show.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.console import Console
from rich.markup import escape

from labtui.core.checkpoints import CheckpointRequest, Decision
from labtui.core.events import (
    AgentChunk,
    AgentMessage,
    CheckpointDecided,
    CheckpointRequested,
    CodeDiff,
    CompileResult,
    CostUpdate,
    ErrorEvent,
    EstimateChecked,
    EstimateMade,
    Event,
    GpuSample,
    JobState,
    LatexUpdated,
    LogLine,
    MetricPointData,
    MetricsReported,
    Notice,
    Refused,
    ResearcherNote,
    RunAbandoned,
    RunFinished,
    RunStarted,
    SearchEnded,
    SearchStarted,
    SearchStep,
    StageFinished,
    StageStarted,
)
from labtui.core.machine.metric_lines import point_of

from .editor import edit_product, open_in_editor
from .job_words import elapsed_words, ended, not_shown

ROLE_STYLES = {"aider": "cyan", "reviewer": "magenta", "novelty": "yellow", "ideator": "green"}
MAX_MESSAGE_CHARS = 2000
STATUS_STYLES = {"keep": "green", "ok": "green", "discard": "dim", "crash": "red", "buggy": "red"}


SHOWN_LINES_PER_S = 200.0  # of one run's stream: more is a flood no one reads as it passes
SHOWN_BURST_LINES = 2000  # shown at once before the rate applies (a run's start, a traceback)
_CONTROLS = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|.)?|[\x00-\x08\x0b-\x1f\x7f]"
)


def without_controls(text: str) -> str:
    """``text`` with terminal escape sequences and control characters (but tab and newline)
    removed: one regex pass over a whole pipe read."""
    return _CONTROLS.sub("", text)


@dataclass
class LineRate:
    """A token bucket of lines: ``take`` says how many of a read may be shown now, and counts
    the rest as skipped. ``clock`` is injectable for tests."""

    per_s: float = SHOWN_LINES_PER_S
    burst: float = SHOWN_BURST_LINES
    clock: Callable[[], float] = time.monotonic
    tokens: float = SHOWN_BURST_LINES
    last: float | None = None
    skipped: int = 0

    def take(self, lines: int) -> int:
        now = self.clock()
        if self.last is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.per_s)
        self.last = now
        shown = min(lines, int(self.tokens))
        self.tokens -= shown
        self.skipped += lines - shown
        return shown


class HeadlessPrinter:
    """A bus subscriber that prints each event as one or a few lines."""

    def __init__(
        self,
        console: Console | None = None,
        *,
        show_logs: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console or Console(highlight=False)
        self.show_logs = show_logs
        self._lock = threading.Lock()
        self._gpu_reported = False
        self._search: SearchStarted | None = None  # the search whose steps are printed
        self._jobs: dict[str, JobState] = {}  # the last state printed of each job, by job id
        self._rates: dict[tuple[str, str], LineRate] = {}  # per run and stream
        self._clock = clock  # for the rates (injectable: tests freeze it)

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._print(event)

    def _print_lines(self, event: LogLine) -> None:
        """One pipe read of a run's output, written to the console's file as it is: never
        parsed as markup nor wrapped by Rich (a terminal wraps it), its escape sequences and
        control characters removed (the run's code is not to drive the researcher's terminal),
        and over ``SHOWN_LINES_PER_S`` a flood is shown in samples with the count of what was
        not (the run folder's log has every line)."""
        key = (event.run_id, event.stream)
        rate = self._rates.get(key) or self._rates.setdefault(key, LineRate(clock=self._clock))
        count = event.text.count("\n") + 1
        shown = rate.take(count)
        if not shown:
            return  # a flood past its rate: counted, never split
        prefix = f"{event.run_id}│ "
        text = "\n".join(prefix + line for line in event.text.rsplit("\n", shown)[-shown:])
        self._write_run_text(event.run_id, event.stream, rate, without_controls(text))

    def _write_run_text(self, run_id: str, stream: str, rate: LineRate, text: str) -> None:
        parts = [text] if text else []
        if rate.skipped:
            parts.insert(0, f"{run_id}│ {not_shown(rate.skipped, [stream])}")
            rate.skipped = 0
        text = "\n".join(parts)
        if self.console.is_terminal and self.console.color_system:
            text = ("\x1b[31m" if stream == "stderr" else "\x1b[2m") + text + "\x1b[0m"
        self.console.file.write(text + "\n")
        self.console.file.flush()

    def _say_skipped(self, run_id: str | None = None) -> None:
        """What a run's flood left unshown, once the run (or its stage) is over."""
        for (run, stream), rate in self._rates.items():
            if rate.skipped and (run_id is None or run == run_id):
                self._write_run_text(run, stream, rate, "")

    def _print(self, event: Event) -> None:
        out = self.console.print
        match event:
            case StageStarted():
                out(f"\n[bold reverse] {escape(event.stage)} [/]")
            case StageFinished():
                self._say_skipped()
                out(
                    f"[bold]{escape(event.stage)}[/] {escape(event.status)}: {escape(event.summary)}"
                )
            case AgentChunk():
                pass  # the whole AgentMessage follows; chunks would interleave with logs
            case AgentMessage():
                style = ROLE_STYLES.get(event.role, "blue")
                text = (
                    event.text
                    if len(event.text) <= MAX_MESSAGE_CHARS
                    else (event.text[:MAX_MESSAGE_CHARS] + f" … ({len(event.text)} chars)")
                )
                out(f"[{style}]{escape(event.role)}[/]: {escape(text)}")
            case CodeDiff():
                out(
                    f"[green]commit {escape(event.commit[:8])}[/] {escape(event.message)} ({escape(', '.join(event.files))})"
                )
            case LogLine():
                if self.show_logs:
                    self._print_lines(event)
            case MetricsReported() if not self.show_logs:
                # Without the log lines, the newest point of each read says how the run goes.
                out(f"[dim]{escape(event.run_id)}│ {escape(metrics_words(event.points[-1]))}[/]")
            case RunFinished():
                self._say_skipped(event.run_id)
                status = "ok" if event.returncode == 0 and not event.error_tail else "failed"
                out(
                    f"[bold]{escape(event.run_id)}[/] {status} in {event.wall_s:.1f} s {escape(str(event.means))}"
                )
            case GpuSample():
                if not self._gpu_reported:
                    self._gpu_reported = True
                    names = ", ".join(g.get("name", "?") for g in event.gpus)
                    on = f" on {escape(event.host)}" if event.host else ""
                    out(f"[dim]GPUs{on}: {escape(names)}[/]")
            case JobState():
                out(job_state_line(event, self._jobs.get(event.job_id)))
                self._jobs[event.job_id] = event
            case LatexUpdated():
                out(f"[dim]{escape(event.path)} updated ({len(event.text.splitlines())} lines)[/]")
            case CompileResult():
                if event.ok:
                    out(f"[green]compiled[/] {escape(event.pdf)}: {event.pages} page(s)")
                else:
                    first = event.errors[0] if event.errors else {}
                    out(
                        f"[red]compile failed[/] line {escape(str(first.get('line')))}: {escape(str(first.get('message', '')))}"
                    )
            case CostUpdate():
                out(
                    f"[dim]cost: {event.tokens_in}+{event.tokens_out} tokens, "
                    f"${event.total_cost_usd:.4f} of ${event.budget_usd:.2f}[/]"
                )
            case CheckpointRequested():
                out(f"\n[bold yellow]checkpoint[/] {escape(event.title)}\n{escape(event.body)}")
            case CheckpointDecided():
                note = f": {escape(event.note)}" if event.note else ""
                out(f"[yellow]decision[/] {escape(event.action)}{note}")
            case Notice():
                out(f"[yellow]note[/] {escape(event.text)}")
            case EstimateMade() | EstimateChecked():
                out(f"[dim]{escape(event.text)}[/]")
            case Refused():
                subject = f" {event.subject}" if event.subject else ""
                out(
                    f"[yellow]refused {escape(event.what)}{escape(subject)}[/]: {escape(event.reason)}"
                )
            case RunAbandoned():
                out(
                    f"[red]{escape(event.run_id)} abandoned[/] after {event.attempts} attempt(s): "
                    f"{escape(event.problem)}"
                )
            case ResearcherNote():
                out(f"[bold]your note[/] {escape(event.text)}")
            case RunStarted():
                of = f" ({event.index} of {event.total})" if event.total else ""
                out(f"[bold]{escape(event.run_id)}[/]{of}: {escape(event.command)}")
            case SearchStarted():
                self._search = event
                out(search_started_line(event))
            case SearchStep():
                metric = self._search.metric if self._search is not None else ""
                out(search_step_line(event, metric))
            case SearchEnded():
                out(search_ended_line(event, self._search))
            case ErrorEvent():
                hint = f"\n  [bold]fix:[/] {escape(event.hint)}" if event.hint else ""
                out(f"[bold red]error[/] {escape(event.message)}{hint}")


class TerminalCheckpointPort:
    """Asks checkpoints on a TTY: a approve, r revise (asks for a note), e edit, s skip,
    i improve (at the review: revise the paper by it, recompile, review again), w waive (asks for
    the reason, where a stage blocks approval), q abort. Only the offered options are accepted."""

    KEYS: ClassVar[dict[str, str]] = {
        "a": "approve",
        "r": "revise",
        "e": "edit",
        "s": "skip",
        "i": "improve",
        "w": "waive",
        "t": "retry",
        "b": "rewind",
        "q": "abort",
    }

    def __init__(
        self,
        console: Console | None = None,
        stream=None,
        *,
        root: Path | None = None,
        edit_file: Callable[[Path], str] = open_in_editor,
    ) -> None:
        self.console = console or Console(highlight=False)
        self.stream = stream or sys.stdin
        self.root = root  # the project: checkpoint products are relative to it
        self._edit_file = edit_file

    def _read(self, prompt: str) -> str:
        self.console.print(prompt, end="")
        line = self.stream.readline()
        if not line:  # EOF: nobody is there to decide; stop safely
            return "q"
        return line.strip()

    def ask(self, request: CheckpointRequest) -> Decision:
        keys = [k for k, action in self.KEYS.items() if action in request.options]
        prompt = "[bold]" + " · ".join(f"{k} {self.KEYS[k]}" for k in keys) + "[/] > "
        while True:
            answer = self._read(prompt).lower()[:1] or "a"
            if answer not in keys:
                self.console.print(f"[red]press one of: {', '.join(keys)}[/]")
                continue
            action = self.KEYS[answer]
            if action == "edit":
                problem = edit_product(self.root, request.product, self._edit_file)
                if problem:
                    self.console.print(f"[red]{escape(problem)}[/]")
                    continue
                return Decision("edit", request.product)
            note = ""
            if action in ("revise", "waive"):
                ask = "note for the agents > " if action == "revise" else "why may they stand? > "
                note = self._read(ask)
                if not note:
                    self.console.print("[red]a note is needed[/]")
                    continue
            return Decision(action, note)


JOB_STYLES = {"PENDING": "yellow", "RUNNING": "cyan", "COMPLETED": "green"}


def job_state_line(event: JobState, before: JobState | None) -> str:
    """'run_1: Slurm job 12 PENDING (Priority)', '… RUNNING on node7', '… TIMEOUT after 1:05';
    a resumed session's first word of a job it submitted before: 'run_1: re-attached to Slurm
    job 12: RUNNING on node7 · 0:42'. While it runs the job is told again every half minute or
    so, dim: '… still RUNNING on node7 · 1:30'."""
    style = JOB_STYLES.get(event.state, "red" if ended(event) else "")
    state = f"[{style}]{escape(event.state)}[/]" if style else escape(event.state)
    seen = (event.state, event.reason, event.node)
    again = before is not None and (before.state, before.reason, before.node) == seen
    words = f"still {state}" if again else state
    if event.reason and event.state != "COMPLETED":
        words += f" ({escape(event.reason)})"
    if event.node and not ended(event):
        words += f" on {escape(event.node)}"
    if ended(event) and event.elapsed_s >= 1:
        words += f" after {elapsed_words(event.elapsed_s)}"
    elif event.state == "RUNNING" and (again or event.reattached):
        words += f" · {elapsed_words(event.elapsed_s)}"
    run = f"[bold]{escape(event.run_id)}[/]"
    if event.reattached and before is None:
        return f"{run}: re-attached to Slurm job {escape(event.job_id)}: {words}"
    line = f"{run}: Slurm job {escape(event.job_id)} {words}"
    return f"[dim]{line}[/]" if again else line


def search_started_line(event: SearchStarted) -> str:
    """'climb of wider begins: toy.score, higher is better, from 0.5 · noise 0.02 · at most 100
    attempts of 60 s each'."""
    unit = "attempts" if event.strategy == "climb" else "nodes"
    return (
        f"[bold]{escape(event.strategy)}[/] of {escape(event.idea)} begins: "
        f"{escape(event.metric)}, {escape(event.direction)} is better, from {event.baseline:.4g}"
        f" · noise {event.noise:.4g} · at most {event.limit} {unit} of "
        f"{event.run_budget_s:g} s each · ledger {escape(event.ledger)}"
    )


def search_step_line(event: SearchStep, metric: str) -> str:
    """'climb attempt 5: discard toy.score 0.65 (best 0.7) — set SCORE to 0.65 · 0.4 s · 1.7k
    tokens', or 'tree node 3 (debug of 2): ok …'; a new best is marked ★."""
    if event.strategy == "climb":
        what = f"climb attempt {event.step}"
    else:
        action = event.action or "draft"
        of = f" of {event.parent}" if event.parent else ""
        what = f"tree node {event.step} ({escape(action)}{of})"
    style = STATUS_STYLES.get(event.status, "")
    status = f"[{style}]{escape(event.status)}[/]" if style else escape(event.status)
    if event.value is None:
        named = "no result"
    else:
        named = f"{escape(metric)} {event.value:.4g}" if metric else f"{event.value:.4g}"
    best = f" (best {event.best:.4g})" if event.best is not None else ""
    line = f"[bold]{what}[/]: {status} {named}{best}"
    if event.new_best:
        line += " [bold green]★ new best[/]"
    line += f" — {escape(event.description)}"
    if event.problem and event.status in ("crash", "buggy"):
        line += f": [red]{escape(event.problem[:200])}[/]"
    line += f" · {seconds_words(event.wall_s)}"
    if event.tokens:
        line += f" · {tokens_words(event.tokens)} tokens"
    return line


def search_ended_line(event: SearchEnded, started: SearchStarted | None) -> str:
    """'climb ended (100 attempts made): 100 steps, 3 keep · 96 discard · 1 crash; best
    toy.score 0.72 at attempt 6; 3 seed run(s): 0.71 ± 0.01'."""
    unit = "attempt" if event.strategy == "climb" else "node"
    counts = " · ".join(f"{n} {escape(status)}" for status, n in event.counts.items())
    metric = f"{escape(started.metric)} " if started is not None else ""
    if event.best_step:
        best = f"best {metric}{event.best:.4g} at {unit} {event.best_step}"
    else:
        best = f"nothing beat the baseline ({metric}{event.best:.4g}) beyond the noise"
    line = (
        f"[bold]{escape(event.strategy)} ended[/] ({escape(event.reason)}): "
        f"{event.steps} step(s){', ' + counts if counts else ''}; {best}"
    )
    if event.seed_runs and event.seed_mean is not None:
        spread = f" ± {event.seed_std:.4g}" if event.seed_std is not None else ""
        line += f"; {event.seed_runs} seed run(s): {event.seed_mean:.4g}{spread}"
    return line


def seconds_words(seconds: float) -> str:
    """'0.4 s', '95 s', '12 min', '2.5 h'."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def tokens_words(tokens: int) -> str:
    """'850', '1.7k', '12k', '1.2M'."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 10_000:
        return f"{tokens / 1000:.1f}k"
    if tokens < 1_000_000:
        return f"{tokens / 1000:.0f}k"
    return f"{tokens / 1_000_000:.1f}M"


def metrics_words(point: MetricPointData) -> str:
    """'epoch 25/200 · train_loss 0.31 · test_accuracy 0.82' for one reported point."""
    progress = point_of(point).progress
    values = [f"{name} {value:.4g}" for name, value in point["values"].items()]
    return " · ".join([progress, *values] if progress else values)
