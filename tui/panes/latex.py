"""The LaTeX pane: the last compile's outcome, the draft's figures, and the draft itself.

Diagnostics (compile status, one line per error and warning, the figures) sit above the
highlighted, numbered draft and take at most half the pane; in a small pane `d` gives them the
whole pane (and wraps long messages), and `d` again brings the draft back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from labtui.core.events import CompileResult, LatexUpdated

from .base import Pane, clip_lines, number_lines

# A log can hold hundreds of warnings (one per undefined citation); past this many the rest
# are counted, not listed, so a bad compile never floods the pane.
SHOWN_MESSAGES = 60
# LaTeX ends most warnings with "on input line N."; the line number is shown up front already.
_INPUT_LINE_SUFFIX = re.compile(r"\s*on input line \d+\.?\s*$")
# Theme colours such as $text-muted are "auto" colours, which Content styles render white.
MUTED = "$text 60%"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def compile_summary(event: CompileResult) -> Content:
    """'✔ compiled · 4 pages · 2 warnings' or '✘ failed · 1 error · 2 warnings'."""
    warnings = Content.styled(
        plural(len(event.warnings), "warning"), "$text-warning" if event.warnings else ""
    )
    if event.ok:
        parts = [Content.styled("✔ compiled", "bold $text-success")]
        if event.pages:
            parts.append(Content(plural(event.pages, "page")))
        return Content(" · ").join([*parts, warnings])
    failed = Content.styled("✘ failed", "bold $text-error")
    errors = Content.styled(plural(len(event.errors), "error"), "$text-error")
    return Content(" · ").join([failed, errors, warnings])


def describe_compile_error(message: Mapping[str, Any], draft_name: str = "") -> str:
    """'l.42: Undefined control sequence \\foo', naming the file when it is not the draft."""
    line = message.get("line")
    file = str(message.get("file") or "")
    text = str(message.get("message") or message.get("text") or message).strip()
    if line:
        text = _INPUT_LINE_SUFFIX.sub("", text) or text
    # The draft's own file name would repeat on every line; bibtex's messages name it already.
    if file == draft_name or text.lower().startswith(f"{file.lower()}:"):
        file = ""
    where = " ".join(part for part in (file, f"l.{line}" if line else "") if part)
    return f"{where}: {text}" if where else text


def compile_status(event: CompileResult | None, draft_name: str = "") -> Content:
    """The summary line, then every error (first) and warning on a line of its own."""
    if event is None:
        return Content.styled("Not compiled yet.", MUTED)
    messages = [("✘", "$text-error", m) for m in event.errors]
    messages += [("⚠", "$text-warning", m) for m in event.warnings]
    lines = [compile_summary(event)]
    lines += [
        Content.assemble((f"{mark} ", style), (describe_compile_error(m, draft_name), style))
        for mark, style, m in messages[:SHOWN_MESSAGES]
    ]
    if len(messages) > SHOWN_MESSAGES:
        more = len(messages) - SHOWN_MESSAGES
        lines.append(Content.styled(f"… {more} more not shown", MUTED))
    return Content("\n").join(lines)


def figure_list(figures: Sequence[Mapping[str, Any]]) -> Content:
    """A heading with counts, then '✔ train_loss.png' or '✘ missing: fig.png (l.57)' per figure."""
    missing = [f for f in figures if not f.get("exists")]
    counts = plural(len(figures), "figure")
    if missing:
        counts += f", {len(missing)} missing"
    lines = [Content.styled(counts, MUTED)]
    for figure in figures:
        name = str(figure.get("path", ""))
        if figure.get("exists"):
            lines.append(Content.assemble(("✔ ", "$text-success"), name))
        else:
            line = figure.get("line")
            where = f" (l.{line})" if line else ""
            lines.append(Content.styled(f"✘ missing: {name}{where}", "$text-error"))
    return Content("\n").join(lines)


class LatexPane(Pane):
    """Compile status, errors and warnings, the draft's figures, and the highlighted draft."""

    TITLE = "LaTeX"
    HANDLES = (LatexUpdated, CompileResult)
    # One key, two faces: the footer says where `d` goes next. check_action hides the other.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "d",
            "show_diagnostics",
            "Diagnostics",
            tooltip="Show the compile errors and warnings, with their lines",
            id="latex.diagnostics",
        ),
        Binding(
            "d",
            "show_draft",
            "Draft",
            tooltip="Back from the diagnostics to the highlighted draft",
            id="latex.draft",
        ),
    ]
    DEFAULT_CSS = """
    LatexPane #latex-diagnostics {
        height: auto;
        max-height: 50%;
        scrollbar-size-vertical: 1;
        background: $boost;
    }
    LatexPane #latex-status, LatexPane #latex-figures {
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    LatexPane #latex-figures {
        display: none;
    }
    LatexPane.-has-figures #latex-figures {
        display: block;
    }
    LatexPane.-diagnostics #latex-diagnostics {
        height: 1fr;
        max-height: 100%;
    }
    LatexPane.-diagnostics #latex-status, LatexPane.-diagnostics #latex-figures {
        text-wrap: wrap;
    }
    LatexPane.-diagnostics #latex-scroll {
        display: none;
    }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._compile: CompileResult | None = None
        self._draft_name = ""

    def compose(self) -> ComposeResult:
        # Not focusable while the draft is shown: tab moves between panes, one stop each.
        diagnostics = VerticalScroll(id="latex-diagnostics", can_focus=False)
        with diagnostics:
            yield Static(compile_status(None), id="latex-status")
            yield Static(id="latex-figures")
        with ScrollableContainer(id="latex-scroll", classes="code-scroll"):
            yield Static("No LaTeX yet.", id="latex-body", classes="code")

    @property
    def showing_diagnostics(self) -> bool:
        return self.has_class("-diagnostics")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "show_diagnostics":
            return not self.showing_diagnostics
        if action == "show_draft":
            return self.showing_diagnostics
        return True

    def action_show_diagnostics(self) -> None:
        self._show_diagnostics(True)

    def action_show_draft(self) -> None:
        self._show_diagnostics(False)

    def _show_diagnostics(self, show: bool) -> None:
        diagnostics = self.query_one("#latex-diagnostics", VerticalScroll)
        diagnostics.can_focus = show
        self.set_class(show, "-diagnostics")
        # Focus follows what is visible, so the arrow keys scroll it and `d` stays in reach.
        target = diagnostics if show else self.query_one("#latex-scroll", ScrollableContainer)
        target.focus()
        self.refresh_bindings()

    def _on_LatexUpdated(self, event: LatexUpdated) -> None:
        self.border_subtitle = event.path
        self._draft_name = PurePosixPath(event.path).name
        # pygments (~0.3 s with textual.highlight): imported when a draft first shows
        from textual.highlight import highlight  # noqa: PLC0415

        body = number_lines(highlight(clip_lines(event.text), language="latex"))
        self.query_one("#latex-body", Static).update(body)
        self.query_one("#latex-figures", Static).update(figure_list(event.figures))
        self.set_class(bool(event.figures), "-has-figures")
        self._render_status()  # the draft's name decides which file names the status shows

    def _on_CompileResult(self, event: CompileResult) -> None:
        self._compile = event
        self._render_status()

    def _render_status(self) -> None:
        self.query_one("#latex-status", Static).update(
            compile_status(self._compile, self._draft_name)
        )
