"""The LaTeX pane on its own: compile status, errors and warnings, figures, draft, the `d` key.

A tiny app mounts one LatexPane (plus a footer, to show its keys) and feeds it real events, the
way the main screen routes them. Terminal sizes match a pane of the 2×2 grid in an 80×24 and a
160×48 terminal. Async tests run under ``asyncio.run`` (no pytest-asyncio needed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from support.pane_app import PaneApp
from textual.app import ComposeResult
from textual.pilot import Pilot
from textual.widgets import Footer, Static

from labtui.core.events import CompileResult, Event, LatexUpdated
from labtui.core.latex.checks import referenced_figures
from labtui.tui.panes import LatexPane
from labtui.tui.panes.latex import compile_status, compile_summary, describe_compile_error

TS = 1_700_000_000.0  # nothing shown may depend on the clock
SMALL = (38, 10)  # a 38×9 pane (80×24 terminal) and the footer
LARGE = (78, 23)  # a 78×22 pane (160×48 terminal) and the footer

DRAFT = r"""\documentclass{article}
\usepackage{graphicx}
\usepackage{natbib}
\graphicspath{{../}}
\title{Label Smoothing for Character Models}
\author{labtui}
\begin{document}
\maketitle

\begin{abstract}
Label smoothing lowers the validation loss of a character-level model.
\end{abstract}

\section{Introduction}
Over-confident predictions hurt generalisation \citep{szegedy2016}.

\section{Method}
We replace the one-hot targets by a mixture with the uniform distribution.
\begin{figure}[t]
  \centering
  \includegraphics[width=0.7\textwidth]{train_loss.png}
  \caption{Training loss.}
  \label{fig:train}
\end{figure}

\section{Results}
Figure~\ref{fig:val} shows the validation loss.
\begin{figure}[t]
  \centering
  \includegraphics[width=0.7\textwidth]{val_loss.png}
  \caption{Validation loss.}
  \label{fig:val2}
\end{figure}

\bibliographystyle{plainnat}
\bibliography{references}
\end{document}
"""

FIGURES = [
    {"path": "train_loss.png", "exists": True, "line": 21},
    {"path": "val_loss.png", "exists": False, "line": 30},
]
ERROR = {
    "file": "template.tex",
    "line": 15,
    "message": "Undefined control sequence \\citep",
    "kind": "error",
}
WARNINGS = [
    {
        "file": "template.tex",
        "line": 27,
        "message": "Reference `fig:val' on page 1 undefined on input line 27.",
        "kind": "warning",
    },
    {
        "file": "bibtex",
        "line": None,
        "message": 'BibTeX: I didn\'t find a database entry for "szegedy2016"',
        "kind": "warning",
    },
    {
        "file": "references.bib",
        "line": 4,
        "message": "BibTeX: I was expecting a `,' or a `}'",
        "kind": "warning",
    },
]

DRAFT_EVENT = LatexUpdated(
    ts=TS, stage="writeup", path="latex/template.tex", text=DRAFT, figures=FIGURES
)
FAILED = CompileResult(ts=TS, stage="compile", ok=False, errors=[ERROR], warnings=WARNINGS)
COMPILED = CompileResult(
    ts=TS, stage="compile", ok=True, pdf="paper.pdf", pages=4, warnings=WARNINGS[:1]
)


class LatexApp(PaneApp):
    """One LatexPane filling the screen, styled as in labtui, fed ``events`` on mount."""

    def __init__(self, events: Sequence[Event] = ()) -> None:
        super().__init__()
        self.events = list(events)

    def compose(self) -> ComposeResult:
        yield LatexPane(id="latex")
        yield Footer()

    def on_mount(self) -> None:
        pane = self.query_one(LatexPane)
        for event in self.events:
            pane.apply(event)
        self.query_one("#latex-scroll").focus()


def run_pane(
    events: Sequence[Event],
    steps: Callable[[Pilot[None]], Awaitable[None]],
    size: tuple[int, int] = SMALL,
) -> None:
    async def test() -> None:
        async with LatexApp(events).run_test(size=size) as pilot:
            await pilot.pause()
            await steps(pilot)

    asyncio.run(test())


def text_of(pilot: Pilot[None], selector: str) -> str:
    return str(pilot.app.query_one(selector, Static).render())


def footer_keys(pilot: Pilot[None]) -> dict[str, str]:
    return {
        key: active.binding.description for key, active in pilot.app.screen.active_bindings.items()
    }


# -- what is shown ---------------------------------------------------------------------------


def test_failed_compile_lists_errors_first_then_warnings_with_lines() -> None:
    async def steps(pilot: Pilot[None]) -> None:
        status = text_of(pilot, "#latex-status").splitlines()
        assert status == [
            "✘ failed · 1 error · 3 warnings",
            "✘ l.15: Undefined control sequence \\citep",
            "⚠ l.27: Reference `fig:val' on page 1 undefined",
            '⚠ BibTeX: I didn\'t find a database entry for "szegedy2016"',
            "⚠ references.bib l.4: BibTeX: I was expecting a `,' or a `}'",
        ]

    run_pane([DRAFT_EVENT, FAILED], steps)


def test_successful_compile_shows_pages_and_warning_count() -> None:
    assert str(compile_summary(COMPILED)) == "✔ compiled · 4 pages · 1 warning"
    clean = CompileResult(ts=TS, ok=True, pages=1)
    assert str(compile_summary(clean)) == "✔ compiled · 1 page · 0 warnings"


def test_figures_are_listed_with_missing_ones_marked() -> None:
    async def steps(pilot: Pilot[None]) -> None:
        assert text_of(pilot, "#latex-figures").splitlines() == [
            "2 figures, 1 missing",
            "✔ train_loss.png",
            "✘ missing: val_loss.png (l.30)",
        ]
        assert pilot.app.query_one("#latex-figures").display

    run_pane([DRAFT_EVENT], steps)


def test_a_draft_without_figures_shows_no_figure_list() -> None:
    no_figures = LatexUpdated(ts=TS, path="latex/template.tex", text="\\documentclass{article}")

    async def steps(pilot: Pilot[None]) -> None:
        assert not pilot.app.query_one("#latex-figures").display
        assert text_of(pilot, "#latex-status") == "Not compiled yet."

    run_pane([no_figures], steps)


def test_the_draft_is_numbered_and_shown_whole() -> None:
    async def steps(pilot: Pilot[None]) -> None:
        body = text_of(pilot, "#latex-body").splitlines()
        assert body[0] == " 1 \\documentclass{article}"
        assert body[14].startswith("15 Over-confident predictions")
        assert pilot.app.query_one(LatexPane).border_subtitle == "latex/template.tex"

    run_pane([DRAFT_EVENT], steps)


def test_a_compile_seen_before_its_draft_names_files_until_the_draft_arrives() -> None:
    async def steps(pilot: Pilot[None]) -> None:
        assert "✘ template.tex l.15: Undefined" in text_of(pilot, "#latex-status")
        pilot.app.query_one(LatexPane).apply(DRAFT_EVENT)
        await pilot.pause()
        assert "✘ l.15: Undefined" in text_of(pilot, "#latex-status")

    run_pane([FAILED], steps)


def test_an_error_without_a_line_or_file_is_shown_as_it_is() -> None:
    timeout = {"file": "template.tex", "line": None, "message": "compilation took too long"}
    assert describe_compile_error(timeout, "template.tex") == "compilation took too long"
    assert describe_compile_error({"text": "odd"}) == "odd"


def test_hundreds_of_warnings_are_counted_not_listed() -> None:
    many = [{"file": "t.tex", "line": n, "message": f"w{n}"} for n in range(1, 201)]
    status = str(compile_status(CompileResult(ts=TS, ok=True, pages=2, warnings=many), "t.tex"))
    lines = status.splitlines()
    assert lines[0] == "✔ compiled · 2 pages · 200 warnings"
    assert lines[-1] == "… 140 more not shown"
    assert len(lines) == 62


def test_figures_found_by_the_core_reach_the_pane(tmp_path: Path) -> None:
    (tmp_path / "train_loss.png").write_bytes(b"png")
    latex_dir = tmp_path / "latex"
    latex_dir.mkdir()
    event = LatexUpdated(
        ts=TS,
        path="latex/template.tex",
        text=DRAFT,
        figures=referenced_figures(DRAFT, latex_dir),
    )

    async def steps(pilot: Pilot[None]) -> None:
        assert text_of(pilot, "#latex-figures").splitlines()[1:] == [
            "✔ train_loss.png",
            "✘ missing: val_loss.png (l.30)",
        ]

    run_pane([event], steps)


# -- the `d` key -----------------------------------------------------------------------------


def test_d_switches_between_draft_and_diagnostics() -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app = pilot.app
        pane = app.query_one(LatexPane)
        assert footer_keys(pilot)["d"] == "Diagnostics"
        await pilot.press("d")
        assert pane.showing_diagnostics
        assert not app.query_one("#latex-scroll").display
        assert app.focused is app.query_one("#latex-diagnostics")
        assert footer_keys(pilot)["d"] == "Draft"
        await pilot.press("d")
        assert not pane.showing_diagnostics
        assert app.query_one("#latex-scroll").display
        assert app.focused is app.query_one("#latex-scroll")
        assert footer_keys(pilot)["d"] == "Diagnostics"

    run_pane([DRAFT_EVENT, FAILED], steps)


def test_the_pane_is_one_tab_stop_whichever_view_is_shown() -> None:
    async def steps(pilot: Pilot[None]) -> None:
        pane = pilot.app.query_one(LatexPane)

        def stops() -> list[str | None]:
            return [w.id for w in pilot.app.screen.focus_chain if pane in w.ancestors_with_self]

        assert stops() == ["latex-scroll"]
        await pilot.press("d")
        assert stops() == ["latex-diagnostics"]

    run_pane([DRAFT_EVENT, FAILED], steps)


def test_diagnostics_take_at_most_half_the_pane_beside_the_draft() -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app = pilot.app
        diagnostics = app.query_one("#latex-diagnostics").outer_size.height
        draft = app.query_one("#latex-scroll").outer_size.height
        assert 0 < diagnostics <= draft
        await pilot.press("d")
        await pilot.pause()
        assert app.query_one("#latex-diagnostics").outer_size.height == diagnostics + draft

    run_pane([DRAFT_EVENT, FAILED], steps)


# -- snapshots -------------------------------------------------------------------------------


async def show_diagnostics(pilot: Pilot[None]) -> None:
    await pilot.press("d")
    await pilot.pause()


def test_snapshot_small_failed(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LatexApp([DRAFT_EVENT, FAILED]), terminal_size=SMALL)


def test_snapshot_small_diagnostics(snap_compare: Callable[..., bool]) -> None:
    app = LatexApp([DRAFT_EVENT, FAILED])
    assert snap_compare(app, terminal_size=SMALL, run_before=show_diagnostics)


def test_snapshot_large_failed(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LatexApp([DRAFT_EVENT, FAILED]), terminal_size=LARGE)


def test_snapshot_large_compiled(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(LatexApp([DRAFT_EVENT, COMPILED]), terminal_size=LARGE)
