"""The Textual front end against a scripted fake Session: panes, checkpoints, screens, snapshots.

The fake emits real ``labtui.core.events`` from the worker thread, exactly as the pipeline does,
and asks one checkpoint through the port it is given. Every timestamp and number is fixed so the
snapshots are stable. Async tests run under ``asyncio.run`` (no pytest-asyncio needed).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from textual.pilot import Pilot
from textual.widgets import Input, RichLog, Static

from labtui.core.checkpoints import ACTIONS, CheckpointPort, Checkpoints, Decision
from labtui.core.errors import Aborted
from labtui.core.events import (
    AgentChunk,
    AgentMessage,
    Bus,
    CodeDiff,
    CompileResult,
    CostUpdate,
    ErrorEvent,
    Event,
    GpuSample,
    LatexUpdated,
    LogLine,
    Notice,
    RunFinished,
    StageFinished,
    StageStarted,
)
from labtui.tui.app import EventInbox, LabtuiApp
from labtui.tui.panes import LatexPane, flatten_means
from labtui.tui.screens import CheckpointScreen, ConfirmQuitScreen, ErrorScreen, NoModelScreen

TS = 1_700_000_000.0  # every event carries this: nothing displayed may depend on the clock
SIZE = (100, 30)
NO_MODEL = "LABTUI_MODEL is not set and labtui.toml has no [models] default."

DIFF = """\
diff --git a/experiment.py b/experiment.py
index 3b18e51..a9c4f02 100644
--- a/experiment.py
+++ b/experiment.py
@@ -12,7 +12,8 @@ def train(model, data, lr):
     opt = torch.optim.AdamW(model.parameters(), lr=lr)
-    loss_fn = nn.CrossEntropyLoss()
+    # label smoothing regularises the over-confident char model
+    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
     for step, (x, y) in enumerate(data):
"""

LATEX = r"""\documentclass{article}
\usepackage{graphicx}
\title{Label Smoothing for Character Models}
\begin{document}
\maketitle
\section{Introduction}
We study label smoothing \citep{szegedy2016}.
\end{document}
"""

BODY = """\
**Plan:** add label smoothing (0.1) to the loss and compare validation loss with `run_0`.

- one run, same seed
- expected: lower val loss
"""


def ev(cls: type[Event], **fields: object) -> Event:
    return cls(ts=TS, **fields)  # type: ignore[call-arg]


def before_checkpoint() -> list[Event]:
    return [
        ev(StageStarted, stage="ideas"),
        ev(
            AgentMessage,
            stage="ideas",
            role="ideator",
            text="Try **label smoothing** on the char model.",
        ),
        ev(AgentChunk, stage="ideas", role="critic", text="Cheap and "),
        ev(AgentChunk, stage="ideas", role="critic", text="well studied"),
        ev(
            AgentMessage,
            stage="ideas",
            role="critic",
            text="Cheap and well studied; novelty is low.",
        ),
        ev(
            CostUpdate,
            stage="ideas",
            model="openai/scripted",
            tokens_in=1200,
            tokens_out=300,
            cost_usd=0.04,
            stage_tokens_in=1200,
            stage_tokens_out=300,
            stage_cost_usd=0.04,
            total_cost_usd=0.04,
            budget_usd=10.0,
        ),
        ev(StageFinished, stage="ideas", summary="1 idea"),
        ev(StageStarted, stage="experiments"),
        ev(
            CodeDiff,
            stage="experiments",
            commit="3f2a9c1e0b7d",
            message="Add label smoothing",
            files=["experiment.py"],
            diff=DIFF,
        ),
        ev(
            LogLine, stage="experiments", run_id="run_1", stream="stdout", text="step 0 loss 4.1742"
        ),
        ev(
            LogLine,
            stage="experiments",
            run_id="run_1",
            stream="stdout",
            text="step 100 loss 2.0315",
        ),
        ev(
            LogLine,
            stage="experiments",
            run_id="run_1",
            stream="stderr",
            text="warning: slow dataloader",
        ),
        ev(
            GpuSample,
            stage="experiments",
            gpus=[
                {
                    "index": 0,
                    "name": "NVIDIA H100",
                    "util": 87,
                    "mem_used_mb": 12288,
                    "mem_total_mb": 81559,
                    "temp_c": 64,
                }
            ],
        ),
        ev(
            RunFinished,
            stage="experiments",
            run_id="run_1",
            returncode=0,
            wall_s=12.3,
            means={"shakespeare_char": {"means": {"val_loss": 1.4712, "train_loss": 1.2}}},
        ),
        ev(LatexUpdated, stage="writeup", path="latex/template.tex", text=LATEX),
        ev(
            CompileResult,
            stage="compile",
            ok=False,
            errors=[{"line": 7, "message": "Undefined control sequence \\citep"}],
        ),
        ev(
            CostUpdate,
            stage="experiments",
            model="openai/scripted",
            tokens_in=800,
            tokens_out=900,
            cost_usd=0.08,
            stage_tokens_in=800,
            stage_tokens_out=900,
            stage_cost_usd=0.08,
            total_cost_usd=0.12,
            budget_usd=10.0,
        ),
    ]


def after_checkpoint() -> list[Event]:
    return [
        ev(Notice, stage="experiments", text="Running without a sandbox."),
        ev(StageFinished, stage="experiments", summary="val_loss 1.47 (baseline 1.52)"),
    ]


class FakeSession:
    """A scripted Session: emits real events from the worker thread and asks one checkpoint."""

    project_name = "char-smoothing"

    def __init__(
        self,
        *,
        history: Sequence[Event] = (),
        problems: Sequence[str] = (),
        log_lines: int = 0,
        checkpoint: bool = True,
        options: tuple[str, ...] = ACTIONS,
        error: BaseException | None = None,
        wait_for_stop: bool = False,
    ) -> None:
        self.bus = Bus()
        self._history = list(history)
        self._problems = list(problems)
        self._log_lines = log_lines
        self._checkpoint = checkpoint
        self._options = options
        self._error = error
        self._wait_for_stop = wait_for_stop
        self.decisions: list[Decision] = []
        self.started = threading.Event()
        self.asking = threading.Event()
        self.stop_requested = threading.Event()
        self.raised: BaseException | None = None
        self.outcome: str | None = None

    def history(self) -> list[Event]:
        return list(self._history)

    def model_problems(self) -> list[str]:
        return list(self._problems)

    def request_stop(self) -> None:
        self.stop_requested.set()

    def run(self, port: CheckpointPort) -> str:
        self.started.set()
        if self._error is not None:
            raise self._error
        for event in before_checkpoint():
            self.bus.emit(event)
        for n in range(self._log_lines):
            self.bus.emit(
                ev(LogLine, stage="experiments", run_id="run_2", stream="stdout", text=f"line {n}")
            )
        if self._wait_for_stop:
            self.stop_requested.wait(10)
            self.outcome = "stopped"
            return self.outcome
        if self._checkpoint:
            checkpoints = Checkpoints(port, self.bus.emit)
            self.asking.set()
            try:
                decision = checkpoints.ask("experiments", "Run the plan?", BODY, self._options)
            except Aborted as error:
                self.raised = error
                self.outcome = "stopped"
                return self.outcome
            self.decisions.append(decision)
        for event in after_checkpoint():
            self.bus.emit(event)
        self.outcome = "finished"
        return self.outcome


# -- helpers ---------------------------------------------------------------------------------


async def wait_until(pilot: Pilot, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)


async def wait_for_checkpoint(pilot: Pilot) -> CheckpointScreen:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, CheckpointScreen))
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, CheckpointScreen)
    return screen


async def wait_for_end(pilot: Pilot) -> None:
    app = pilot.app
    assert isinstance(app, LabtuiApp)
    await wait_until(pilot, lambda: app.outcome is not None)
    await pilot.pause(0.15)  # one flush interval
    await pilot.pause()


@dataclass
class Seen:
    """What the panes showed, captured while the app still runs (widgets go away on exit)."""

    dialogue: list[str]
    logs: list[str]
    diff_header: str
    diff_body: str
    gpu: str
    latex_body: str
    latex_status: str
    sub_title: str


def rich_log_lines(app: LabtuiApp, selector: str) -> list[str]:
    return [strip.text.rstrip() for strip in app.main_screen.query_one(selector, RichLog).lines]


def static_text(app: LabtuiApp, selector: str) -> str:
    return str(app.main_screen.query_one(selector, Static).render())


def capture(app: LabtuiApp) -> Seen:
    return Seen(
        dialogue=rich_log_lines(app, "#dialogue-log"),
        logs=rich_log_lines(app, "#run-log"),
        diff_header=static_text(app, "#diff-header"),
        diff_body=static_text(app, "#diff-body"),
        gpu=static_text(app, "#gpu-status"),
        latex_body=static_text(app, "#latex-body"),
        latex_status=static_text(app, "#latex-status"),
        sub_title=app.sub_title,
    )


def run_app(app: LabtuiApp, steps: Callable[[Pilot], Awaitable[None]]) -> Seen:
    """Run ``app`` headless, do ``steps``, and return what the panes showed at the end."""
    seen: list[Seen] = []

    async def test() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await steps(pilot)
            if app.is_running:
                seen.append(capture(app))

    asyncio.run(test())
    return seen[0] if seen else None  # type: ignore[return-value]


def decide(keys: Sequence[str]) -> tuple[FakeSession, LabtuiApp, Seen]:
    """Run the script, answer the checkpoint with ``keys``, wait for the end."""
    session = FakeSession()
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_for_checkpoint(pilot)
        await pilot.press(*keys)
        await wait_for_end(pilot)

    return session, app, run_app(app, steps)


# -- checkpoints -----------------------------------------------------------------------------


def test_approve_returns_approve_to_the_pipeline() -> None:
    session, app, seen = decide(["a"])
    assert session.decisions == [Decision("approve")]
    assert app.outcome == "finished"
    assert any("you chose approve" in line for line in seen.dialogue)


def test_revise_with_a_note() -> None:
    session, _, _ = decide(["r", *"use 0.05", "enter"])
    assert session.decisions == [Decision("revise", "use 0.05")]


def test_skip() -> None:
    session, _, _ = decide(["s"])
    assert session.decisions == [Decision("skip")]


def test_q_in_the_modal_aborts() -> None:
    session, _, _ = decide(["q"])
    assert session.decisions == [Decision("abort")]


def test_revise_needs_a_note_and_escape_goes_back() -> None:
    session = FakeSession()
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        await pilot.press("r", "enter")  # empty note: refused, the modal stays
        assert app.screen is screen and screen.revising
        await pilot.press("escape")
        assert not screen.revising
        await pilot.press("s")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert session.decisions == [Decision("skip")]


def test_only_the_offered_options_are_live() -> None:
    session = FakeSession(options=("approve", "abort"))
    app = LabtuiApp(session)
    footer_keys: list[str] = []

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        footer_keys.extend(key for key, active in screen.active_bindings.items() if active.enabled)
        await pilot.press("s", "r")  # not offered: nothing happens
        assert app.screen is screen and not screen.revising
        await pilot.press("a")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert session.decisions == [Decision("approve")]
    assert {"a", "q"} <= set(footer_keys) and not {"s", "r"} & set(footer_keys)


def test_auto_never_shows_the_modal() -> None:
    session = FakeSession()
    app = LabtuiApp(session, auto=True)
    screens: list[str] = []

    async def steps(pilot: Pilot) -> None:
        await wait_for_end(pilot)
        screens.extend(type(screen).__name__ for screen in app.screen_stack)

    run_app(app, steps)
    assert session.decisions == [Decision("approve")]
    assert screens == ["MainScreen"]


def test_closing_with_a_question_open_releases_the_pipeline() -> None:
    session = FakeSession()
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_for_checkpoint(pilot)
        await pilot.press("ctrl+q")

    run_app(app, steps)  # returns at all: the worker thread was not left blocked
    assert isinstance(session.raised, Aborted)
    assert session.decisions == []
    assert session.stop_requested.is_set()


# -- panes -----------------------------------------------------------------------------------


def test_events_reach_every_pane() -> None:
    _, _, seen = decide(["a"])
    dialogue = "\n".join(seen.dialogue)
    assert "ideator" in dialogue and "label smoothing" in dialogue
    assert "⏸ checkpoint: Run the plan?" in dialogue
    assert "Running without a sandbox." in dialogue
    assert "3f2a9c1 Add label smoothing" in seen.diff_header
    assert "label_smoothing=0.1" in seen.diff_body
    assert "warning: slow dataloader" in seen.logs
    assert any("run_1 finished in 12.3 s" in line for line in seen.logs)
    assert any("shakespeare_char.val_loss=1.471" in line for line in seen.logs)
    assert "GPU0 NVIDIA H100 87%" in seen.gpu
    assert "\\maketitle" in seen.latex_body
    assert "l.7: Undefined control sequence" in seen.latex_status
    assert seen.sub_title == "experiments · $0.12 / $10.00 · finished"


def test_history_is_painted_on_mount() -> None:
    history = [*before_checkpoint(), *after_checkpoint()]
    session = FakeSession(history=history, problems=["LABTUI_MODEL is not set."])

    async def steps(pilot: Pilot) -> None:
        await pilot.pause()

    seen = run_app(LabtuiApp(session), steps)
    assert "Running without a sandbox." in "\n".join(seen.dialogue)
    assert "Add label smoothing" in seen.diff_header
    assert "warning: slow dataloader" in seen.logs
    assert seen.sub_title.startswith("experiments · $0.12 / $10.00")


def test_error_events_are_shown_with_their_fix() -> None:
    history = [ev(ErrorEvent, stage="compile", message="pdflatex failed", hint="install texlive")]
    seen = run_app(LabtuiApp(FakeSession(history=history, problems=["x"])), wait_for_end_or_pause)
    dialogue = "\n".join(seen.dialogue)
    assert "pdflatex failed" in dialogue and "fix: install texlive" in dialogue


async def wait_for_end_or_pause(pilot: Pilot) -> None:
    await pilot.pause()


def test_a_thousand_log_lines_arrive_without_stalling() -> None:
    session = FakeSession(log_lines=1000)

    async def steps(pilot: Pilot) -> None:
        started = time.monotonic()
        await wait_for_end(pilot)
        assert time.monotonic() - started < 5

    seen = run_app(LabtuiApp(session, auto=True), steps)
    assert seen.logs.count("── run_2 ──") == 1
    assert sum(line.startswith("line ") for line in seen.logs) == 1000
    assert seen.logs[-1] == "line 999"


def test_the_log_stays_bounded() -> None:
    session = FakeSession(log_lines=12_000)
    seen = run_app(LabtuiApp(session, auto=True), wait_for_end)
    assert len(seen.logs) <= 5000
    assert seen.logs[-1] == "line 11999"


def test_inbox_keeps_emission_order() -> None:
    inbox = EventInbox()
    lines = [ev(LogLine, run_id="r", stream="stdout", text=str(n)) for n in range(3)]
    finished = ev(RunFinished, run_id="r", returncode=0, wall_s=1.0)
    assert not inbox.put(lines[0]) and not inbox.put(lines[1])
    assert inbox.put(finished)
    assert not inbox.put(lines[2])
    # The timer must not take the line emitted after RunFinished before RunFinished itself.
    assert inbox.take_bursty() == lines[:2]
    assert inbox.take_bursty() == []
    assert inbox.take_until(finished) == [finished]
    assert inbox.take_bursty() == [lines[2]]


def test_means_are_flattened_without_the_means_level() -> None:
    assert flatten_means({"ds": {"means": {"acc": 0.91234, "n": 3}}}) == ["ds.acc=0.9123", "ds.n=3"]


def test_tab_cycles_panes_and_m_maximises() -> None:
    app = LabtuiApp(FakeSession(), auto=True)
    pane_ids = ("dialogue", "diff", "logs", "latex")

    def focused_pane() -> str | None:
        focused = app.focused
        assert focused is not None
        return next(node.id for node in focused.ancestors if node.id in pane_ids)

    async def steps(pilot: Pilot) -> None:
        await wait_for_end(pilot)
        order = []
        for _ in pane_ids:
            order.append(focused_pane())
            await pilot.press("tab")
        assert order == list(pane_ids)
        assert focused_pane() == "dialogue"
        await pilot.press("shift+tab", "m")
        assert app.screen.maximized is app.main_screen.query_one(LatexPane)
        await pilot.press("m")
        assert app.screen.maximized is None

    run_app(app, steps)


# -- screens ---------------------------------------------------------------------------------


def test_no_model_screen_and_the_pipeline_does_not_start() -> None:
    session = FakeSession(problems=[NO_MODEL])
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_until(pilot, lambda: isinstance(app.screen, NoModelScreen))
        await pilot.press("q")

    run_app(app, steps)
    assert not session.started.is_set()
    assert app.return_code == 2


def test_a_crash_shows_the_error_dialog() -> None:
    app = LabtuiApp(FakeSession(error=RuntimeError("CUDA out of memory")))

    async def steps(pilot: Pilot) -> None:
        await wait_until(pilot, lambda: isinstance(app.screen, ErrorScreen))
        message = app.screen.query_one("#error-message", Static).render()
        assert "RuntimeError: CUDA out of memory" in str(message)
        await pilot.press("q")  # any key closes it; it does not quit
        assert not isinstance(app.screen, ErrorScreen) and app.is_running
        await pilot.press("q")  # now q quits at once: the pipeline is over

    run_app(app, steps)
    assert app.return_code == 1


def test_quit_while_running_asks_then_stops_cooperatively() -> None:
    session = FakeSession(wait_for_stop=True)
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_until(pilot, session.started.is_set)
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmQuitScreen)
        await pilot.press("n")
        assert not session.stop_requested.is_set()
        await pilot.press("q", "y")
        await wait_until(pilot, lambda: not app.is_running)

    run_app(app, steps)
    assert session.stop_requested.is_set()
    assert app.outcome == "stopped" and app.return_code == 0


# -- snapshots -------------------------------------------------------------------------------


def test_snapshot_main(snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot) -> None:
        await wait_for_checkpoint(pilot)
        await pilot.press("a")
        await wait_for_end(pilot)

    assert snap_compare(LabtuiApp(FakeSession()), terminal_size=SIZE, run_before=run_before)


def test_snapshot_checkpoint_modal(snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot) -> None:
        await wait_for_checkpoint(pilot)

    assert snap_compare(LabtuiApp(FakeSession()), terminal_size=SIZE, run_before=run_before)


def test_snapshot_checkpoint_revise(snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        screen.query_one(Input).cursor_blink = False
        await pilot.press("r", *"use 0.05")

    assert snap_compare(LabtuiApp(FakeSession()), terminal_size=SIZE, run_before=run_before)


def test_snapshot_no_model(snap_compare: Callable[..., bool]) -> None:
    session = FakeSession(problems=[NO_MODEL])

    async def run_before(pilot: Pilot) -> None:
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, NoModelScreen))

    assert snap_compare(LabtuiApp(session), terminal_size=SIZE, run_before=run_before)


def test_snapshot_error(snap_compare: Callable[..., bool]) -> None:
    session = FakeSession(error=RuntimeError("CUDA out of memory"))

    async def run_before(pilot: Pilot) -> None:
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ErrorScreen))

    assert snap_compare(LabtuiApp(session), terminal_size=SIZE, run_before=run_before)
