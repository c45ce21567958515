"""``[notify] command``: the researcher's own command, run when something needs them.

A bus subscriber turns six kinds of moment into a notification: a checkpoint waits (not under
``--auto``, where nobody waits), a run failed every fix attempt and was abandoned, the spend
reached ``budget_share`` of the budget (once), the pipeline ended, a hill-climb or tree search
found a new best, and a search ended. Each is run in one
background thread, in order, without a shell (the event's text is a word of the command, never
shell code), with the text in the placeholders and the environment the field's doc lists, and
stopped after ``command_timeout_s``. Nothing of it may hold up or crash the engine: the subscriber only
queues, a full queue drops, and a command that fails is said once as a Notice.
"""

from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..events import (
    CheckpointRequested,
    CostUpdate,
    Event,
    Notice,
    PipelineEnded,
    RunAbandoned,
    SearchEnded,
    SearchStarted,
    SearchStep,
)
from ..settings.sections import NotifySection

QUEUE_SIZE = 32  # notifications waiting at most; beyond, new ones are dropped
_STOP = None  # the worker's end mark


@dataclass(frozen=True)
class Notification:
    event: str  # checkpoint | run_failed | budget | ended | best | search
    stage: str
    message: str


def notification_for(
    event: Event,
    settings: NotifySection,
    *,
    budget_usd: float,
    search: SearchStarted | None = None,
) -> Notification | None:
    """What ``event`` is worth saying (None: nothing). Budget is judged here, once-ness by the
    Notifier; ``search`` is how the search a step or end belongs to began (its idea, metric)."""
    if isinstance(event, CheckpointRequested):
        return Notification("checkpoint", event.stage, f"checkpoint waits: {event.title}")
    if isinstance(event, RunAbandoned):
        return Notification(
            "run_failed",
            event.stage,
            f"{event.run_id} failed {event.attempts} attempt(s) and was abandoned: {event.problem}",
        )
    if isinstance(event, CostUpdate):
        cap = event.budget_usd or budget_usd
        if cap > 0 and event.total_cost_usd >= settings.budget_share * cap:
            return Notification(
                "budget",
                event.stage,
                f"spent ${event.total_cost_usd:.2f} of the ${cap:.2f} budget",
            )
        return None
    if isinstance(event, PipelineEnded):
        return Notification("ended", event.stage, f"pipeline {event.outcome}")
    if isinstance(event, SearchStep) and event.new_best and event.value is not None:
        unit = "attempt" if event.strategy == "climb" else "node"
        return Notification(
            "best",
            event.stage,
            f"{_search_name(event.strategy, search)}: new best {_metric(search)}"
            f"{event.value:.4g} at {unit} {event.step}",
        )
    if isinstance(event, SearchEnded):
        return Notification("search", event.stage, _ended_message(event, search))
    return None


def _search_name(strategy: str, search: SearchStarted | None) -> str:
    """'climb of wider_hidden_layer', 'tree search of …' ('climb' when its start is unknown)."""
    name = "climb" if strategy == "climb" else "tree search"
    return f"{name} of {search.idea}" if search is not None else name


def _metric(search: SearchStarted | None) -> str:
    return f"{search.metric} " if search is not None else ""


def _ended_message(event: SearchEnded, search: SearchStarted | None) -> str:
    """'climb of wider ended (100 attempts made): best toy.score 0.72 at attempt 6; seed mean
    0.71 ± 0.01 over 3 run(s)'."""
    unit = "attempt" if event.strategy == "climb" else "node"
    if event.best_step:
        best = f"best {_metric(search)}{event.best:.4g} at {unit} {event.best_step}"
    else:
        best = f"nothing beat the baseline ({_metric(search)}{event.best:.4g})"
    message = f"{_search_name(event.strategy, search)} ended ({event.reason}): {best}"
    if event.seed_runs and event.seed_mean is not None:
        spread = f" ± {event.seed_std:.4g}" if event.seed_std is not None else ""
        message += f"; seed mean {event.seed_mean:.4g}{spread} over {event.seed_runs} run(s)"
    return message


def command_words(command: str, note: Notification, project: str, directory: Path) -> list[str]:
    """The command's words with the placeholders filled (each stays one word)."""
    values = _values(note, project, directory)
    words = []
    for word in shlex.split(command):
        for name, value in values.items():
            word = word.replace("{" + name + "}", value)
        words.append(word)
    return words


def command_env(note: Notification, project: str, directory: Path) -> dict[str, str]:
    values = _values(note, project, directory)
    return {
        **os.environ,
        "LABTUI_EVENT": values["event"],
        "LABTUI_PROJECT": values["project"],
        "LABTUI_STAGE": values["stage"],
        "LABTUI_MESSAGE": values["message"],
        "LABTUI_PROJECT_DIR": values["dir"],
    }


def _values(note: Notification, project: str, directory: Path) -> dict[str, str]:
    message = " ".join(note.message.split())  # one line, for a notification's title bar
    return {
        "event": note.event,
        "project": project,
        "stage": note.stage,
        "message": message,
        "dir": str(directory),
    }


class Notifier:
    """The bus subscriber and its background worker. ``close`` lets queued notifications go
    out (each within its timeout) before the session's journal closes."""

    def __init__(
        self,
        settings: NotifySection,
        *,
        project: str,
        directory: Path,
        budget_usd: float,
        spent_usd: float,
        emit: Callable[[Event], None],
    ) -> None:
        self.settings = settings
        self.project = project
        self.directory = directory
        self.budget_usd = budget_usd
        self.checkpoints_wait = True  # False under --auto: nobody waits at its checkpoints
        self._emit = emit
        self._budget_said = budget_usd > 0 and spent_usd >= settings.budget_share * budget_usd
        self._failed = False
        self._search: SearchStarted | None = None  # the search whose steps are told
        self._queue: queue.Queue[Notification | None] = queue.Queue(QUEUE_SIZE)
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        if isinstance(event, SearchStarted):
            self._search = event
        note = notification_for(
            event, self.settings, budget_usd=self.budget_usd, search=self._search
        )
        if note is None or note.event not in self.settings.on:
            return
        if note.event == "checkpoint" and not self.checkpoints_wait:
            return
        if note.event == "budget":
            with self._lock:
                if self._budget_said:
                    return
                self._budget_said = True
        self._start()
        try:
            self._queue.put_nowait(note)
        except queue.Full:  # the command is slower than the events: never hold the engine up
            pass

    def close(self) -> None:
        """Send what is queued, waiting at most each command's timeout, then stop the worker."""
        worker = self._worker
        if worker is None:
            return
        try:
            self._queue.put(_STOP, timeout=self.settings.command_timeout_s)
        except queue.Full:
            return
        worker.join(timeout=self.settings.command_timeout_s * (self._queue.qsize() + 2))

    def _start(self) -> None:
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._work, daemon=True, name="labtui-notify"
                )
                self._worker.start()

    def _work(self) -> None:
        while (note := self._queue.get()) is not _STOP:
            problem = self._run(note)
            if problem and not self._failed:
                self._failed = True
                self._say(
                    f"the [notify] command failed ({problem}); fix [notify] command in "
                    f"{self.directory / 'labtui.toml'}. Later failures are not said again."
                )

    def _run(self, note: Notification) -> str:
        """Run the command for ``note``; what went wrong, '' when nothing did."""
        words = command_words(self.settings.command, note, self.project, self.directory)
        try:
            proc = subprocess.Popen(
                words,
                cwd=self.directory,
                env=command_env(note, self.project, self.directory),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its whole group can be stopped at the timeout
            )
        except OSError as exc:
            return f"{words[0] if words else 'the command'} could not start: {exc.strerror or exc}"
        try:
            _, stderr = proc.communicate(timeout=self.settings.command_timeout_s)
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            return f"still running after {self.settings.command_timeout_s:g} s ([notify] command_timeout_s); stopped"
        if proc.returncode != 0:
            tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no stderr"]
            return f"exit status {proc.returncode}: {tail[0][:200]}"
        return ""

    def _say(self, text: str) -> None:
        try:
            self._emit(Notice(text=text))
        except Exception:  # the journal closed meanwhile: the notice has nowhere to go
            pass


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # already gone
        pass
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a grandchild of its own session holds the pipe
        pass


def notifier_for(
    settings: NotifySection,
    *,
    project: str,
    directory: Path,
    budget_usd: float,
    spent_usd: float,
    emit: Callable[[Event], None],
) -> Notifier | None:
    """A Notifier when ``[notify] command`` is set, else None."""
    if not settings.command.strip():
        return None
    return Notifier(
        settings,
        project=project,
        directory=directory,
        budget_usd=budget_usd,
        spent_usd=spent_usd,
        emit=emit,
    )
