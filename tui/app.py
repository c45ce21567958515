"""The Textual app: four live panes fed by engine events, and checkpoints answered by modal.

Threading model (the only rules that matter here):

- ``Session.run`` blocks, so it runs in a thread worker. That thread emits events on the bus and
  blocks in ``CheckpointPort.ask``. It never touches a widget: the bus subscriber only puts the
  event in an ``EventInbox`` and posts a message (both thread-safe); the checkpoint port only
  posts a message and waits on a ``threading.Event``.
- Every widget change happens on the UI thread, in message handlers and a flush timer, in the
  order the engine emitted the events.
- Bursty events (log lines, stream chunks, GPU samples) are not posted one by one: they wait in
  the inbox and are drained in batches, every ``FLUSH_INTERVAL_S`` or when a later event that
  was posted arrives, so 100k log lines cost a handful of renders, not 100k messages.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import App, SuspendNotSupported, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from labtui.core.checkpoints import AutoApprove, CheckpointPort
from labtui.core.engine.status import project_open_problems
from labtui.core.errors import LabtuiError
from labtui.core.events import CheckpointDecided, ErrorEvent, Event

from .editor import edit_product, open_in_editor
from .endings import describe_crash, detached_message, pipeline_exit_code
from .engine_bridge import (
    RESUME_HINT,
    CheckpointAsked,
    EngineEvent,
    EventInbox,
    TuiCheckpointPort,
)
from .event_routing import apply_events
from .exit_status import EXIT_FAILED, EXIT_OK
from .palette import key_groups, system_commands
from .panes import LogsPane
from .screens import (
    EXIT_NO_MODEL,
    CheckpointScreen,
    ConfirmQuitScreen,
    ErrorScreen,
    HelpScreen,
    MainScreen,
    ModelCheck,
    NoModelScreen,
    NoteScreen,
)
from .screens.detach import DETACH, STOP, DetachScreen
from .session import Session
from .status import Clock, Progress

__all__ = ["EXIT_NO_MODEL", "LabtuiApp", "run_tui"]

FLUSH_INTERVAL_S = 0.1


class LabtuiApp(App[None]):
    """labtui's front end: renders a Session's events and answers its checkpoints."""

    CSS_PATH = "labtui.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "q",
            "request_quit",
            "Quit",
            tooltip="Quit; while a stage runs, asks first and stops at a safe point (resumable)",
            id="app.quit",
        ),
        Binding("question_mark", "help", "Help", tooltip="This list of keys", id="app.help"),
    ]

    def __init__(
        self,
        session: Session,
        *,
        auto: bool = False,
        clock: Clock = time.monotonic,
        edit_file: Callable[[Path], str] | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.auto = auto
        self.title = "labtui"
        self.outcome: str | None = None
        self.open_problems: list[str] = []  # the paper's, read when the pipeline finished
        self.progress = Progress(phase="opening the project…")
        self._project = ("", "local")  # name and cluster, once the session's facts are read
        # A StartingSession opens its project (labtui.toml: pydantic, ~200 ms) after the first
        # frame; every other session has its facts in memory and shows them in it.
        self._facts_later = bool(getattr(session, "opens_after_paint", False))
        if not self._facts_later:
            self._take_facts()
        self._clock = clock
        self._edit_file = edit_file or self._edit_in_terminal
        self._inbox = EventInbox()
        self._port: CheckpointPort = AutoApprove() if auto else TuiCheckpointPort(self)
        self._main: MainScreen | None = None
        self._model_check: Worker[list[str]] | None = None
        self._pipeline: Worker[str] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._last_error: ErrorEvent | None = None
        self._crashed = False
        self._quitting = False
        self._decided: set[str] = set()  # checkpoints seen decided (live), by id
        # Attached to a background engine (tui/remote_session.py): quitting may detach.
        self.detachable = bool(getattr(session, "detachable", False))

    # -- screens ---------------------------------------------------------------------------

    def get_default_screen(self) -> MainScreen:
        name, cluster = self._project
        self._main = MainScreen(
            name,
            self.progress,
            self._clock,
            commit_log=self.session.commit_log,
            cluster=cluster,
            id="main",
        )
        return self._main

    @property
    def main_screen(self) -> MainScreen:
        assert self._main is not None, "the main screen exists once the app is composed"
        return self._main

    def on_main_screen_ready(self) -> None:
        # Panes wrap text at the width they have when it is written: start only once the first
        # layout has given every pane its size, so what is painted never depends on timing.
        self.call_after_refresh(self._start_up)

    def _start_up(self) -> None:
        """Show the project and paint the journal, then check the model (off the UI thread)
        before starting."""
        if self._facts_later:
            try:
                self._take_facts()
            except Exception as error:
                self._startup_failed("open the project", error)
                return
            self.main_screen.show_project(*self._project)
        try:
            history = self.session.history()
        except Exception as error:
            self._startup_failed("read the journal", error)
            return
        self._apply_events(history, replay=True)
        # What is painted now (the widgets, the journal's events) lives as long as the app: out
        # of the collector's full passes, which otherwise walk it all while a run streams (40 ms
        # a pass on a 2-core machine: a key's whole budget). on_unmount gives it back.
        gc.freeze()
        self.main_screen.query_one(LogsPane).preload_plotext()  # while the model is checked
        self._set_phase("checking the model…")
        self._model_check = self._check_model()

    def _take_facts(self) -> None:
        session = self.session
        self.title = f"labtui — {session.project_name}"
        self.progress.budget_usd = session.budget_usd
        self.progress.models = session.stage_models()
        self.progress.phase = ""
        self._project = (session.project_name, getattr(session, "cluster", "local"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="startup", name="model-check")
    def _check_model(self) -> ModelCheck:
        # model_problems() may import litellm and read provider settings: seconds, not frames.
        return ModelCheck.of(self.session)

    def _model_checked(self, check: ModelCheck) -> None:
        if check.problems:
            self._set_phase("no model")
            self.push_screen(NoModelScreen(check.problems, check.offer), self._model_set_up)
            return
        self.set_interval(FLUSH_INTERVAL_S, self._flush_bursts, name="flush-bursts")
        self._unsubscribe = self.session.bus.subscribe(self._on_bus_event)
        self._set_phase("running")
        self._pipeline = self._run_pipeline()

    def _model_set_up(self, ready: bool | None) -> None:
        """The no-model screen set up the local model: check again, and start."""
        if ready:
            self._set_phase("checking the model…")
            self._model_check = self._check_model()

    def _startup_failed(self, what: str, error: BaseException | None) -> None:
        """Nothing starts; say what failed and how to fix it."""
        self._crashed = True
        self._set_phase("not started")
        if isinstance(error, LabtuiError):
            message, hint = error.message, error.hint
        else:
            message, hint = f"{type(error).__name__}: {error}", ""
        hint = hint or "Fix the cause above and run labtui again."
        self.push_screen(ErrorScreen(f"Could not {what}", message, hint))

    def on_unmount(self) -> None:
        # Runs however the app ends (q, ctrl+q, an exception): stop feeding widgets that are
        # gone and never leave the pipeline thread blocked on a question nobody can answer.
        gc.unfreeze()  # a test's next app must not keep this one alive
        if self._unsubscribe is not None:
            self._unsubscribe()
        if isinstance(self._port, TuiCheckpointPort):
            self._port.close()
        if self._pipeline is not None and self.outcome is None:
            if self.detachable:
                self.session.detach()  # type: ignore[attr-defined]  # the run goes on
            else:
                self.session.request_stop()

    # -- engine events ---------------------------------------------------------------------

    def _on_bus_event(self, event: Event) -> None:
        """Bus subscriber. Runs on the pipeline thread: queue and post, never touch widgets."""
        if self._inbox.put(event):
            self.post_message(EngineEvent(event))

    def on_engine_event(self, message: EngineEvent) -> None:
        events = self._inbox.take_until(message.event)
        if not self._closing_down():
            self._apply_events(events)

    def _flush_bursts(self) -> None:
        events = self._inbox.take_bursty()
        if not self._closing_down():
            self._apply_events(events)

    def _apply_events(self, events: list[Event], *, replay: bool = False) -> None:
        apply_events(
            self.main_screen,
            self.progress,
            events,
            replay=replay,
            notice=lambda event: self._notice(event, replay=replay),
        )

    def _notice(self, event: Event, *, replay: bool) -> None:
        """What the app itself keeps of an event on its way to the panes."""
        if isinstance(event, ErrorEvent):
            self._last_error = event
        if isinstance(event, CheckpointDecided) and not replay:
            self._close_decided_checkpoint(event.checkpoint_id)

    def _set_phase(self, phase: str) -> None:
        self.progress.phase = phase
        if self._main is not None and self._main.is_mounted:
            self._main.status.refresh_status()

    # -- checkpoints -----------------------------------------------------------------------

    def on_checkpoint_asked(self, message: CheckpointAsked) -> None:
        if message.request.checkpoint_id in self._decided:  # answered elsewhere meanwhile
            message.answer.give(None)
            return
        # Events emitted before the question are on screen before the modal covers them.
        self._flush_bursts()
        screen = CheckpointScreen(
            message.request,
            edit_file=self.edit_product,
        )
        self.push_screen(screen, callback=message.answer.give)

    def _close_decided_checkpoint(self, checkpoint_id: str) -> None:
        """A question decided elsewhere (another attached front end, a rewind) leaves the
        screen here too; a modal still open on it would answer nothing."""
        self._decided.add(checkpoint_id)
        for screen in self.screen_stack:
            if (
                isinstance(screen, CheckpointScreen)
                and screen.request.checkpoint_id == checkpoint_id
            ):
                screen.pop_until_active()
                screen.dismiss(None)
                self.notify("this checkpoint was answered elsewhere", title="Answered")
                return

    def edit_product(self, product: str) -> str:
        """Open a project file in the researcher's editor; an error message, or "" when done."""
        return edit_product(self.session.project_root, product, self._edit_file)

    def _edit_in_terminal(self, path: Path) -> str:
        """The researcher's editor on ``path``, with the terminal handed over meanwhile."""
        try:
            with self.suspend():
                return open_in_editor(path)
        except SuspendNotSupported:
            return "this terminal cannot be handed to an editor; edit the file and press a"

    # -- notes, help and the command palette -------------------------------------------------

    def action_leave_note(self) -> None:
        self.push_screen(NoteScreen(), callback=self._note_written)

    def _note_written(self, note: str | None) -> None:
        if note:
            self.session.leave_note(note)
            self.notify("the next LLM call will read your note", title="Note kept")

    def action_interrupt(self) -> None:
        """Escape: stop the LLM call or run under way; a checkpoint then asks what next. With
        nothing under way (or a question open) it does nothing."""
        if self.pipeline_running and self.session.interrupt():
            self.notify("stopping the work under way; a checkpoint follows", title="Interrupt")

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(key_groups(LabtuiApp)))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        return system_commands(self)

    # -- the pipeline worker ---------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="pipeline", name="pipeline")
    def _run_pipeline(self) -> str:
        return self.session.run(self._port)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker, state = event.worker, event.state
        if worker is self._model_check:
            if state == WorkerState.SUCCESS and isinstance(worker.result, ModelCheck):
                self._model_checked(worker.result)
            elif state == WorkerState.ERROR:
                self._startup_failed("check the model settings", worker.error)
        elif worker is self._pipeline:
            if state == WorkerState.SUCCESS:
                self._pipeline_ended(str(worker.result))
            elif state == WorkerState.ERROR:
                self._pipeline_crashed(worker.error)

    def _pipeline_ended(self, outcome: str) -> None:
        self.outcome = outcome
        if outcome == "finished":
            self.open_problems = project_open_problems(self.session.project_root)
        if self._closing_down():
            return
        self._flush_bursts()
        self.main_screen.dialogue.clear_streaming()
        self._set_phase(outcome)
        if self._quitting:
            self.exit(return_code=self.exit_code)
            return
        self.main_screen.dialogue.write(
            Text(f"■ pipeline {outcome} — press q to quit", style="bold")
        )
        if outcome == "failed":
            message = self._last_error.message if self._last_error else "The pipeline failed."
            hint = (self._last_error.hint if self._last_error else "") or RESUME_HINT
            self.push_screen(ErrorScreen("The pipeline failed", message, hint))

    def _pipeline_crashed(self, error: BaseException | None) -> None:
        self._crashed = True
        self.outcome = "failed"
        if self._closing_down():
            return
        self._flush_bursts()
        self._set_phase("crashed")
        if self._quitting:
            self.exit(return_code=EXIT_FAILED)
            return
        title, message, hint = describe_crash(error)
        # The dialog goes away; the dialogue pane keeps the record.
        self.main_screen.apply(ErrorEvent(message=f"{title}: {message}", hint=hint))
        self.push_screen(ErrorScreen(title, message, hint))

    def _closing_down(self) -> bool:
        """The app is closing and its panes are gone: a pipeline that ends just then (the
        quit's own stop) has nowhere left to say so. The pane's own widgets go first, before
        the pane: those are what saying it needs. The flush timer can tick while the screens
        are being taken down (Textual stops running before it removes them)."""
        if not self.is_running:
            return True
        return not self.main_screen.query("DialoguePane #dialogue-streaming")

    @property
    def pending_events(self) -> int:
        """Events emitted but not yet rendered."""
        return len(self._inbox)

    @property
    def pipeline_running(self) -> bool:
        return self._pipeline is not None and self.outcome is None

    @property
    def exit_code(self) -> int:
        return pipeline_exit_code(
            crashed=self._crashed, outcome=self.outcome, open_problems=self.open_problems
        )

    # -- quitting --------------------------------------------------------------------------

    async def action_quit(self) -> None:
        # ctrl+q (Textual's own quit key) must not skip the confirmation that q gives.
        self.action_request_quit()

    def action_request_quit(self) -> None:
        if not self.pipeline_running:
            self.exit(return_code=self.exit_code)
        elif self._quitting:
            # Second q while stopping: leave now; on_unmount has already asked for the stop.
            self.exit(
                return_code=EXIT_OK,
                message="labtui: the pipeline stops at its next safe point; the project stays "
                "resumable.",
            )
        elif self.detachable:
            pid = getattr(self.session, "engine_pid", 0)
            self.push_screen(DetachScreen(pid), callback=self._detach_or_stop)
        else:
            self.push_screen(ConfirmQuitScreen(), callback=self._quit_confirmed)

    def _detach_or_stop(self, choice: str | None) -> None:
        if choice == STOP:
            self._quit_confirmed(True)
        elif choice == DETACH:
            self.exit(return_code=EXIT_OK, message=detached_message(self.session))

    def _quit_confirmed(self, stop: bool | None) -> None:
        if not stop or not self.pipeline_running:
            if stop:
                self.exit(return_code=self.exit_code)
            return
        self._quitting = True
        self.session.request_stop()
        if isinstance(self._port, TuiCheckpointPort):
            # A question left open would keep the pipeline waiting forever: it ends unanswered,
            # and resume asks it again.
            self._port.close()
        self._set_phase("stopping…")
        self.main_screen.dialogue.write(
            Text("■ stopping at the next safe point (q again leaves now)", style="bold")
        )


def run_tui(session: Session, auto: bool = False) -> int:
    """Run the app until the researcher quits; the process exit code."""
    app = LabtuiApp(session, auto=auto)
    app.run()
    return app.return_code if app.return_code is not None else EXIT_FAILED
