"""The app's actions by name: the command palette's commands (ctrl+p), a rewind per stage reached
among them, and the keys the help screen (?) lists, grouped by where they work."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from textual.app import SystemCommand
from textual.binding import Binding

from labtui.core.errors import LabtuiError

from .panes import DialoguePane, DiffPane, LatexPane, LogsPane
from .screens import (
    CheckpointScreen,
    ConfirmQuitScreen,
    IdeaPickerScreen,
    KeyGroups,
    MainScreen,
    NoteScreen,
)


class PaletteApp(Protocol):
    """What the palette's commands use of the app (tui/app.py's LabtuiApp, which imports this
    module: naming it here would close an import cycle)."""

    session: Any  # labtui.tui.session.Session
    progress: Any  # labtui.tui.progress.Progress

    @property
    def main_screen(self) -> MainScreen: ...

    @property
    def pipeline_running(self) -> bool: ...

    def notify(self, message: str, *, title: str = ..., severity: Any = ...) -> None: ...

    def action_leave_note(self) -> None: ...

    def action_help(self) -> None: ...

    def action_interrupt(self) -> None: ...

    def action_request_quit(self) -> None: ...

    def action_change_theme(self) -> Any: ...


def system_commands(app: PaletteApp) -> Iterable[SystemCommand]:
    """The palette's commands: what the app's keys do, and while the pipeline runs, stopping,
    interrupting and rewinding it."""
    # Quit goes through the confirmation (the built-in one would not), so build the list.
    main = app.main_screen
    yield SystemCommand("Leave a note", "A note the next LLM call reads", app.action_leave_note)
    yield SystemCommand("Keys", "Every key, screen by screen", app.action_help)
    for pane in (DialoguePane, DiffPane, LogsPane, LatexPane):
        yield SystemCommand(
            f"Show {pane.TITLE.lower()}",
            f"Focus and maximise the {pane.TITLE.lower()} pane",
            lambda pane=pane: main.show_pane(pane),
        )
    if main.maximized is not None:
        yield SystemCommand("Restore panes", "Back to all four panes", main.minimize)
    if app.pipeline_running:
        yield SystemCommand(
            "Stop the pipeline", "Stop at the next safe point", app.action_request_quit
        )
        yield SystemCommand(
            "Interrupt", "Stop the LLM call or run under way (escape)", app.action_interrupt
        )
        yield from rewind_commands(app)
    yield SystemCommand("Theme", "Change the colours", app.action_change_theme)
    yield SystemCommand(
        "Quit", "Quit labtui (asks first while a stage runs)", app.action_request_quit
    )


def rewind_commands(app: PaletteApp) -> Iterable[SystemCommand]:
    """One palette command per stage the project has reached (while the pipeline runs)."""
    reached = [stage for stage, state in app.progress.stages.items() if state != "pending"]
    for stage in reached:
        yield SystemCommand(
            f"Rewind to {stage}",
            f"Back to the commit before {stage} started (the work after it is kept on a "
            "tag); the pipeline goes on from there",
            lambda stage=stage: rewind_to(app, stage),
        )


def rewind_to(app: PaletteApp, stage: str) -> None:
    try:
        app.session.request_rewind(stage)
    except LabtuiError as error:
        app.notify(f"{error.message}\n{error.hint}", title="Cannot rewind", severity="error")
        return
    app.notify(f"back to before {stage} at the next checkpoint", title="Rewind")


def key_groups(app: type[Any]) -> KeyGroups:
    """What the help screen lists: every binding, grouped by where it works (``app``: the app's
    class, whose own bindings work everywhere)."""

    def bindings(*owners: type[Any]) -> list[Binding]:
        return [b for owner in owners for b in owner.BINDINGS if isinstance(b, Binding)]

    palette = Binding("ctrl+p", "command_palette", "Command palette: the main actions by name")
    leave_now = Binding("ctrl+q", "quit", "Quit (asks first while a stage runs)")
    return [
        ("Everywhere", [*bindings(app), palette, leave_now]),
        ("Main screen", bindings(MainScreen)),
        (DialoguePane.TITLE + " pane", bindings(DialoguePane)),
        (DiffPane.TITLE + " pane", bindings(DiffPane)),
        (LogsPane.TITLE + " pane", bindings(LogsPane)),
        (LatexPane.TITLE + " pane", bindings(LatexPane)),
        ("At a checkpoint", bindings(CheckpointScreen)),
        ("Picking ideas", bindings(IdeaPickerScreen)),
        ("Leaving a note", bindings(NoteScreen)),
        ("Quitting while a stage runs", bindings(ConfirmQuitScreen)),
    ]
