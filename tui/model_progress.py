"""Setting up the local model in a terminal without the app (``labtui model pull``, ``labtui run
--headless``): one Rich progress bar per step — the server's build (seconds, with pip's latest
line), the download (bytes), the assembly and the checksum."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.filesize import decimal
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

if TYPE_CHECKING:
    from labtui.core.local_model.progress import Progress as Step


class SetUpProgress:
    """A ``ProgressSink`` drawn with Rich on stderr; use it as a context manager. Where stderr is
    no terminal (a log file), a line a step and a quarter of its bytes instead of bars."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)
        self._said: dict[str, int] = {}  # step -> the quarters of it said (log files)
        self._bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[size]}"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            TextColumn("[dim]{task.fields[detail]}"),
            console=self._console,
        )
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> SetUpProgress:
        self._bars.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._bars.stop()

    def __call__(self, step: Step) -> None:
        if not self._console.is_terminal:
            self._log(step)
            return
        if step.total is None and not step.done and step.step not in self._tasks:
            self._said_once(step)  # a step with no length (a source skipped): a line, not a bar
            return
        detail = step.detail[:48]
        task = self._tasks.get(step.step)
        if task is None:
            # a step that cannot say how far it is (the build) gets a pulsing bar, no bytes
            total = step.total if step.unit == "B" else None
            task = self._bars.add_task(step.step, total=total, detail=detail, size="")
            self._tasks[step.step] = task
        completed = step.done if step.unit == "B" else 0
        size = sized(step)
        self._bars.update(task, completed=completed, detail=detail, size=size)
        if step.total is not None and step.done >= step.total:
            self._bars.update(task, completed=step.total)

    def _said_once(self, step: Step) -> None:
        if step.step not in self._said:
            self._said[step.step] = 0
            self._bars.console.print(f"{step.step}: {step.detail}" if step.detail else step.step)

    def _log(self, step: Step) -> None:
        quarter = int((step.fraction or 0.0) * 4)
        if self._said.get(step.step, -1) >= quarter:
            return
        self._said[step.step] = quarter
        words = sized(step) or step.detail[:100]
        print(f"labtui: {step.step}{': ' if words else ''}{words}", file=self._console.file)


def sized(step: Step) -> str:
    """ "312.4 MB of 1.1 GB" for a step in bytes, "" for one in seconds."""
    if step.unit != "B":
        return ""
    done = decimal(int(step.done))
    return f"{done} of {decimal(int(step.total))}" if step.total else done
