"""The Textual front end against a scripted fake Session (tests/support/tui_scenes.py): checkpoint keys,
notes, help, the palette, panes, quitting. The pictures are in test_tui_snapshots.py; a real
pipeline under the TUI is in test_tui_pipeline.py. Async tests run under ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.pilot import settle, wait_for
from support.tui_scenes import (
    ASKS,
    LOCAL_NOT_SET_UP,
    META_REVIEW,
    NO_MODEL,
    REVIEWERS,
    Ask,
    FakeSession,
    ScriptedSetUp,
    ev,
    local_offer,
    review_details,
    up_to_experiments,
    writeup_in_progress,
)
from textual.pilot import Pilot
from textual.widgets import Input, RichLog, Static

from labtui.core.checkpoints import Decision
from labtui.core.errors import Aborted, LabtuiError
from labtui.core.events import ErrorEvent, LogLine, RunFinished
from labtui.core.machine.metric_lines import metrics_reported
from labtui.core.review.form import SCORE_RANGES
from labtui.core.review.record import ReviewRecord
from labtui.tui.app import LabtuiApp
from labtui.tui.engine_bridge import EventInbox
from labtui.tui.keybar import KeyBar
from labtui.tui.palette import key_groups
from labtui.tui.panes import LatexPane, Pane, flatten_means
from labtui.tui.panes.logs import RunLog
from labtui.tui.review_card import ReviewCard, score_table
from labtui.tui.screens import (
    CheckpointScreen,
    ConfirmQuitScreen,
    ErrorScreen,
    HelpScreen,
    NoModelScreen,
    NoteScreen,
)

SIZE = (100, 30)


# -- helpers ---------------------------------------------------------------------------------


async def wait_for_checkpoint(pilot: Pilot) -> CheckpointScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, CheckpointScreen))
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, CheckpointScreen)
    return screen


async def wait_for_end(pilot: Pilot) -> None:
    app = pilot.app
    assert isinstance(app, LabtuiApp)
    await settle(pilot, lambda: app.outcome is not None)


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
    status: str


def rich_log_lines(app: LabtuiApp, selector: str) -> list[str]:
    return [strip.text.rstrip() for strip in app.main_screen.query_one(selector, RichLog).lines]


def static_text(app: LabtuiApp, selector: str) -> str:
    return str(app.main_screen.query_one(selector, Static).render())


def capture(app: LabtuiApp) -> Seen:
    return Seen(
        dialogue=rich_log_lines(app, "#dialogue-log"),
        logs=list(app.main_screen.query_one("#run-log", RunLog).lines),
        diff_header=static_text(app, "#diff-header"),
        diff_body=static_text(app, "#diff-body"),
        gpu=static_text(app, "#gpu-status"),
        latex_body=static_text(app, "#latex-body"),
        latex_status=static_text(app, "#latex-status"),
        status=static_text(app, "#status-summary") + "\n" + static_text(app, "#status-stages"),
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
    only = Ask("experiments", "run", "Run the plan?", "body", options=("approve", "abort"))
    session = FakeSession(ask=only)
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
        await pilot.press("ctrl+q")  # Textual's quit key asks first too
        assert isinstance(app.screen, ConfirmQuitScreen)
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running)

    run_app(app, steps)  # returns at all: the worker thread was not left blocked
    assert isinstance(session.raised, Aborted)
    assert session.decisions == []
    assert session.stop_requested.is_set()


def keybar_text(screen: CheckpointScreen) -> str:
    return str(screen.query_one(KeyBar).render())


@pytest.mark.parametrize(
    ("ask", "decided"),
    [(ASKS["review"], Decision("improve")), (None, Decision("approve"))],
    ids=["at the review", "at a run, where it is inert"],
)
def test_i_asks_for_an_improvement_round_where_one_is_offered(ask, decided) -> None:
    session = FakeSession(ask=ask) if ask else FakeSession()  # a run: no improve offered
    app = LabtuiApp(session)
    keys: list[str] = []

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        keys.append(keybar_text(screen))
        await pilot.press("i")
        if app.screen is screen:  # nothing happened: approve instead
            await pilot.press("a")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert session.decisions == [decided]
    assert ("i Improve" in keys[0]) == (decided.action == "improve") and "a Approve" in keys[0]


def test_the_review_card_shows_scores_spread_reviewers_and_the_last_round() -> None:
    session = FakeSession(ask=ASKS["review"])
    app = LabtuiApp(session)
    shown: dict[str, str] = {}

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        card = screen.query_one(ReviewCard)
        for widget in card.query(Static):
            key = widget.id or " ".join(sorted(widget.classes))
            shown[key] = shown.get(key, "") + str(widget.render()) + "\n"
        assert not screen.query("Markdown")  # the card replaces the Markdown body
        await pilot.press("a")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert shown["review-decision"].startswith(
        "Reject · overall 4.0/10 (threshold 6) · 3 reviewers"
    )
    scores = shown["review-scores"]
    assert "R1  R2  R3" in scores and "before → after" in scores
    overall = next(line for line in scores.splitlines() if line.startswith("Overall"))
    assert overall.split() == [
        "Overall",
        "4.00",
        "±",
        "0.82",
        "/10",
        "3",
        "5",
        "4",
        "3.00",
        "→",
        "4.00",
        "↑",
    ]
    confidence = next(line for line in scores.splitlines() if line.startswith("Confidence"))
    assert confidence.endswith("4.00 → 3.67 ↓")
    assert "round 1 · commit 1a2b3c4d · 3 pages" in shown["review-round"]
    assert "round 2 undone: the paper does not compile" in shown["review-undone"]
    text = "".join(shown.values())
    for item in (*META_REVIEW["Strengths"], *META_REVIEW["Weaknesses"]):
        assert " ".join(item.split()) in " ".join(text.split())


def test_one_reviewer_and_no_round_leave_out_the_spread_and_the_columns() -> None:
    reviewer = REVIEWERS[0]
    details = {
        **review_details(),
        "reviews": [reviewer],
        "scores": {name: {"mean": float(reviewer[name]), "spread": 0.0} for name in SCORE_RANGES},
        "improvements": [],
    }
    lines = score_table(ReviewRecord.from_json(details, "the test")).plain.splitlines()
    assert lines[0].split() == ["score", "value"]
    assert lines[8].split() == ["Overall", "3", "/10"] and len(lines) == 10
    assert "±" not in "".join(lines)


def test_a_review_without_details_shows_the_markdown_body() -> None:
    plain = Ask("review", "review", "review: Reject", "**Reject** — Overall 3", "review.json")
    session = FakeSession(ask=plain)
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        assert not screen.query(ReviewCard) and screen.query("Markdown")
        await pilot.press("a")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert session.decisions == [Decision("approve")]


def review_card_shows(details: dict) -> dict[str, str]:
    """The text of each part of the review card built for ``details``, keyed by id or classes."""
    ask = Ask("review", "review", "review: Reject", "**Reject**", "review.json", details=details)
    session = FakeSession(ask=ask)
    shown: dict[str, str] = {}

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        for widget in screen.query_one(ReviewCard).query(Static):
            key = widget.id or " ".join(sorted(widget.classes))
            shown[key] = shown.get(key, "") + str(widget.render()) + "\n"
        await pilot.press("a")
        await wait_for_end(pilot)

    run_app(LabtuiApp(session), steps)
    return shown


def test_the_review_card_says_that_the_reviewer_is_uncalibrated() -> None:
    from labtui.core.review.calibration_store import UNCALIBRATED

    lines = review_card_shows(review_details())["review-decision"].splitlines()
    assert lines == ["Reject · overall 4.0/10 (threshold 6) · 3 reviewers", UNCALIBRATED]


def test_the_review_card_shows_the_reviewers_calibration_and_a_failed_probe(tmp_path) -> None:
    from labtui.core.review.calibration_store import save_calibration, save_probe

    details = review_details()
    reviewer = details["reviewer"]
    metrics = {
        "papers": 100,
        "balanced_accuracy": 0.61,
        "balanced_accuracy_ci": [0.52, 0.7],
        "roc_auc": 0.64,
        "accept_rate": 0.38,
        "human_accept_rate": 0.4,
    }
    benchmark = {"name": "ICLR 2022", "sampled": 100}
    record = {"reviewer": reviewer, "metrics": metrics, "benchmark": benchmark}
    save_calibration(record, tmp_path / "calibration.json")
    lines = review_card_shows(details)["review-decision"].splitlines()
    assert lines[1] == (
        "this reviewer: balanced accuracy 0.61 (95% CI 0.52–0.70) on 100 ICLR 2022 papers · "
        "AUC 0.64 · accepts 38% (humans 40%)"
    )
    assert len(lines) == 2, "no hint for a calibrated reviewer"

    save_probe(reviewer, {"noticed": False, "paper": "paper.pdf", "alterations": []})
    lines = review_card_shows(details)["review-decision"].splitlines()
    assert lines[1].endswith("· FLAGGED: accepted a results table with impossible values")
    another = {**details, "reviewer": {**reviewer, "model": "openai/another"}}
    assert (
        review_card_shows(another)["review-decision"]
        .splitlines()[1]
        .startswith("uncalibrated reviewer")
    ), "a calibration is the reviewer's own: another model is not calibrated by it"


def test_a_review_record_without_its_reviewer_shows_no_trust_line() -> None:
    details = {key: value for key, value in review_details().items() if key != "reviewer"}
    shown = review_card_shows(details)
    assert shown["review-decision"] == "Reject · overall 4.0/10 (threshold 6) · 3 reviewers\n"


def test_the_trust_line_is_muted_uncalibrated_a_warning_and_a_failed_probe_an_error() -> None:
    from labtui.core.review.calibration_store import PROBE_FAILED, UNCALIBRATED, Trust
    from labtui.tui.review_card import trust_lines

    measured = trust_lines(
        Trust("this reviewer: balanced accuracy 0.61 on 100 ICLR 2022 papers", True)
    )
    assert {span.style for span in measured.spans} == {"$text-muted"}
    flagged = trust_lines(Trust(UNCALIBRATED, calibrated=False, flagged=PROBE_FAILED))
    styled = {flagged.plain[span.start : span.end]: span.style for span in flagged.spans}
    assert styled[f"{UNCALIBRATED} · "] == "$text-warning"
    assert styled["FLAGGED: accepted a results table with impossible values"] == (
        "bold $text-error"
    )


# -- panes -----------------------------------------------------------------------------------


def test_events_reach_every_pane() -> None:
    session = FakeSession(script=writeup_in_progress)
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_for_checkpoint(pilot)
        await pilot.press("a")
        await wait_for_end(pilot)

    seen = run_app(app, steps)
    dialogue = "\n".join(seen.dialogue)
    assert "ideator" in dialogue and "double the hidden layer" in dialogue
    assert "⏸ checkpoint: experiments: 1 run(s)" in dialogue
    assert "Running without a sandbox." in dialogue
    assert "3f2a9c1" in seen.diff_header and "run_1 code" in seen.diff_header
    assert "HIDDEN_UNITS = 32" in seen.diff_body
    assert "warning: 10% of labels flipped (label_noise=0.1)" in seen.logs
    assert any("run_1 finished in 1.9 s" in line for line in seen.logs)
    assert "GPU0" in seen.gpu and "87%" in seen.gpu
    assert "\\maketitle" in seen.latex_body
    assert "Undefined control sequence" in seen.latex_status
    assert "val_curve.png" in seen.latex_status
    assert "$0.12 / $10.00" in seen.status
    assert "4.8k tok" in seen.status and "finished" in seen.status
    assert "✔ ideas" in seen.status and "✔ experiments" in seen.status


def test_history_is_painted_on_mount() -> None:
    session = FakeSession(history=writeup_in_progress(), problems=["LABTUI_MODEL is not set."])

    async def steps(pilot: Pilot) -> None:
        await pilot.pause()

    seen = run_app(LabtuiApp(session), steps)
    assert "Filled *Introduction*" in "\n".join(seen.dialogue) or "Filled" in "\n".join(
        seen.dialogue
    )
    assert "run_1 code" in seen.diff_header
    assert "warning: 10% of labels flipped (label_noise=0.1)" in seen.logs
    assert "$0.12 / $10.00" in seen.status and "▶ writeup" in seen.status


def test_error_events_are_shown_with_their_fix() -> None:
    history = [ev(ErrorEvent, stage="compile", message="pdflatex failed", hint="install texlive")]
    seen = run_app(LabtuiApp(FakeSession(history=history, problems=["x"])), wait_for_end_or_pause)
    dialogue = "\n".join(seen.dialogue)
    assert "pdflatex failed" in dialogue and "fix: install texlive" in dialogue


async def wait_for_end_or_pause(pilot: Pilot) -> None:
    await pilot.pause()


def test_a_thousand_log_lines_all_arrive_in_order() -> None:
    # How fast is measured by tests/bench/bench.py, not here.
    session = FakeSession(log_lines=1000)
    seen = run_app(LabtuiApp(session, auto=True), wait_for_end)
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


def test_metric_events_do_not_cut_a_batch_of_log_lines() -> None:
    """Each read's MetricsReported follows its LogLine: the lines still reach the logs pane in
    one write, and the points reach the plot."""
    from labtui.tui.panes import LogsPane

    events: list = []
    for epoch in (1, 2, 3):
        log = ev(LogLine, run_id="run_1", stream="stdout", text=f"epoch {epoch} loss 0.{epoch}")
        events += [log, metrics_reported(log)]
    writes: list[int] = []

    async def steps(pilot: Pilot) -> None:
        main = app.main_screen
        write = main.write_log_lines
        main.write_log_lines = lambda lines, **kw: (writes.append(len(lines)), write(lines, **kw))  # type: ignore[method-assign]
        app._apply_events(events)
        assert main.query_one(LogsPane)._series.plottable() == ["loss"]

    # No scripted events of the session's own: on a busy machine they could arrive after the
    # patch and be counted as a write of theirs.
    app = LabtuiApp(FakeSession(script=list, ask=None, wait_for_stop=True), auto=True)
    run_app(app, steps)
    assert writes == [3]


def test_means_are_flattened_without_the_means_level() -> None:
    assert flatten_means({"ds": {"means": {"acc": 0.91234, "n": 3}}}) == ["ds.acc=0.9123", "ds.n=3"]


def test_tab_cycles_panes_and_m_maximises() -> None:
    app = LabtuiApp(FakeSession(), auto=True)
    pane_ids = ("dialogue", "diff", "logs", "latex")

    def focused_pane() -> str | None:
        focused = app.focused
        assert focused is not None
        return next(node.id for node in focused.ancestors if node.id in pane_ids)

    def bordered() -> list[str]:
        """The panes drawn as focused: marked, and in a border colour no other pane has."""
        colours = {pane.id: pane.styles.border_top[1] for pane in app.main_screen.query(Pane)}
        marked = [pane.id for pane in app.main_screen.query(".-focused")]
        for pane_id in marked:
            others = [colour for other, colour in colours.items() if other not in marked]
            assert colours[pane_id] not in others
        return marked

    async def steps(pilot: Pilot) -> None:
        await wait_for_end(pilot)
        order = []
        for _ in pane_ids:
            order.append(focused_pane())
            assert bordered() == [focused_pane()]
            await pilot.press("tab")
        assert order == list(pane_ids)
        latex = app.main_screen.query_one(LatexPane)
        next(w for w in latex.query("*") if w.focusable).focus()  # not by tab: the border too
        await pilot.pause()
        assert bordered() == ["latex"]
        app.main_screen.set_focus(None)
        assert bordered() == []
        await pilot.press("tab")
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
        await wait_for(pilot, lambda: isinstance(app.screen, NoModelScreen))
        await pilot.press("q")

    run_app(app, steps)
    assert not session.started.is_set()
    assert app.return_code == 2


def test_the_local_model_set_up_from_the_no_model_screen_then_the_pipeline_starts() -> None:
    set_up = ScriptedSetUp()
    session = FakeSession(problems=[LOCAL_NOT_SET_UP], offer=local_offer(set_up))
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, NoModelScreen))
        offer = str(app.screen.query_one("#no-model-offer", Static).render())
        assert "Qwen2.5-Coder-1.5B-Instruct" in offer and "1.1 GB" in offer
        await pilot.press("l")
        await wait_for(pilot, lambda: len(app.screen.query(".no-model-step")) == 2)
        await pilot.press("l")  # a second l while it works starts nothing more
        session._problems = []  # set up: the next check finds the model
        set_up.release.set()
        await wait_for(pilot, session.started.is_set)

    run_app(app, steps)


def test_a_failed_set_up_is_said_on_the_screen_and_can_be_tried_again() -> None:
    set_up = ScriptedSetUp(fail=LabtuiError("the disk is full (/cache)", "free 1.2 GB there"))
    session = FakeSession(problems=[LOCAL_NOT_SET_UP], offer=local_offer(set_up))
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, NoModelScreen))
        await pilot.press("l")
        set_up.release.set()
        problems = app.screen.query_one("#no-model-problems", Static)
        await wait_for(pilot, lambda: "disk is full" in str(problems.render()))
        assert "free 1.2 GB" in str(problems.render())
        assert app.screen.check_action("set_up_local", ()) is True  # l may try again
        await pilot.press("q")

    run_app(app, steps)
    assert not session.started.is_set() and app.return_code == 2


def test_a_crash_shows_the_error_dialog() -> None:
    app = LabtuiApp(FakeSession(error=RuntimeError("CUDA out of memory")))

    async def steps(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen))
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
        await wait_for(pilot, session.started.is_set)
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmQuitScreen)
        await pilot.press("n")
        assert not session.stop_requested.is_set()
        await pilot.press("q", "y")
        await wait_for(pilot, lambda: not app.is_running)

    run_app(app, steps)
    assert session.stop_requested.is_set()
    assert app.outcome == "stopped" and app.return_code == 0


@pytest.mark.parametrize(("problems", "code"), [([], 0), (["Results, line 70: no number"], 3)])
def test_a_finished_run_exits_incomplete_while_its_paper_has_open_problems(
    tmp_path: Path, problems: list[str], code: int
) -> None:
    """The exit status labtui run --headless gives, read from the project's journal: what
    the write-up found its paper still lacks."""
    from labtui.core.events import StageFinished
    from labtui.core.journal import Journal

    journal = Journal(tmp_path / ".labtui")
    journal.append(StageFinished(stage="writeup", result={"open_problems": problems}))
    journal.close()
    app = LabtuiApp(FakeSession(ask=None, root=tmp_path))

    async def steps(pilot: Pilot) -> None:
        await wait_for_end(pilot)
        await pilot.press("q")  # the pipeline is over: q leaves at once

    run_app(app, steps)
    assert app.outcome == "finished" and app.open_problems == problems
    assert app.return_code == code


# -- edit, notes, help, palette --------------------------------------------------------------


def edit_session(tmp_path: Path) -> FakeSession:
    (tmp_path / "experiment.py").write_text("HIDDEN_UNITS = 32\n")
    return FakeSession(root=tmp_path)


def test_e_edits_the_product_and_the_checkpoint_is_asked_again(tmp_path: Path) -> None:
    session = edit_session(tmp_path)
    opened: list[Path] = []

    def editor(path: Path) -> str:  # what $EDITOR would do, without a terminal
        opened.append(path)
        path.write_text("HIDDEN_UNITS = 48\n")
        return ""

    app = LabtuiApp(session, edit_file=editor)

    async def steps(pilot: Pilot) -> None:
        first = await wait_for_checkpoint(pilot)
        await pilot.press("e")
        await wait_for(pilot, lambda: app.screen is not first and at_checkpoint(app))
        await pilot.press("a")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert opened == [tmp_path / "experiment.py"]
    assert session.decisions == [Decision("edit", "experiment.py"), Decision("approve")]
    assert (tmp_path / "experiment.py").read_text() == "HIDDEN_UNITS = 48\n"


def at_checkpoint(app: LabtuiApp) -> bool:
    return isinstance(app.screen, CheckpointScreen)


def test_p_picks_and_rejects_ideas_with_single_keys() -> None:
    from support.tui_scenes import ASKS, IDEAS, ideas_project

    from labtui.core.workspace.ideas import load_archive
    from labtui.tui.screens import IdeaPickerScreen

    root = ideas_project()
    session = FakeSession(ask=ASKS["ideas"], root=root)
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        first = await wait_for_checkpoint(pilot)
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, IdeaPickerScreen))
        await pilot.press("c", "down", "x", "x", "x")  # pick; reject, take back, reject again
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is not first and at_checkpoint(app))
        await pilot.press("a")
        await wait_for_end(pilot)

    run_app(app, steps)
    picks = {"wider_hidden_layer": "chosen", "weight_decay_label_noise": "rejected"}
    assert session.decisions == [Decision("edit", picks=picks), Decision("approve")]
    # The UI wrote nothing: the engine applies the picks (tests/stages/test_ideas.py).
    before = {idea.name: idea.status for idea in IDEAS}
    assert {idea.name: idea.status for idea in load_archive(root)} == before


def test_w_waives_what_blocks_approval_with_a_reason() -> None:
    from support.tui_scenes import ASKS

    session = FakeSession(ask=ASKS["blocked"])
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        await pilot.press("a")  # not offered: nothing happens
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("w", *"quoted from prior work", "enter")
        await wait_for(pilot, lambda: app.screen is not screen and at_checkpoint(app))
        await pilot.press("q")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert session.decisions[0] == Decision("waive", "quoted from prior work")


def test_the_picker_is_offered_only_at_the_ideas_checkpoint() -> None:
    session = FakeSession(root=Path("/nonexistent"))  # a run checkpoint

    async def steps(pilot: Pilot) -> None:
        await wait_for_checkpoint(pilot)
        assert app.screen.check_action("pick", ()) is False
        await pilot.press("a")
        await wait_for_end(pilot)

    app = LabtuiApp(session)
    run_app(app, steps)


def test_a_failed_editor_keeps_the_question_open(tmp_path: Path) -> None:
    session = edit_session(tmp_path)
    app = LabtuiApp(session, edit_file=lambda path: "vim exited with status 1; nothing was kept")

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert app.screen is screen
        assert any("nothing was kept" in str(n.message) for n in app._notifications)
        await pilot.press("s")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert session.decisions == [Decision("skip")]


def test_edit_is_not_offered_without_a_product() -> None:
    no_product = Ask("novelty", "novelty", "t", "b")
    session = FakeSession(ask=no_product)
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        assert "e" not in {k for k, b in screen.active_bindings.items() if b.enabled}
        await pilot.press("e")
        assert app.screen is screen
        await pilot.press("a")
        await wait_for_end(pilot)

    run_app(app, steps)
    assert session.decisions == [Decision("approve")]


def test_n_leaves_a_note_at_any_time_and_escape_cancels() -> None:
    session = FakeSession(ask=None, wait_for_stop=True)
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_for(pilot, session.started.is_set)
        await pilot.press("n")
        assert isinstance(app.screen, NoteScreen)
        await pilot.press("enter")  # an empty note is refused
        assert isinstance(app.screen, NoteScreen)
        await pilot.press(*"keep lr fixed", "enter")
        assert not isinstance(app.screen, NoteScreen)
        await pilot.press("n", *"never mind", "escape")
        assert not isinstance(app.screen, NoteScreen)

    run_app(app, steps)
    assert session.notes == ["keep lr fixed"]


@pytest.mark.parametrize(
    ("keys", "decided"),
    [
        (["s"], Decision("skip")),
        (["r", *"try dropout", "enter"], Decision("revise", "try dropout")),
    ],
    ids=["s ends the search", "r gives the next proposals a note"],
)
def test_a_search_checkpoint_says_what_its_keys_do(keys, decided) -> None:
    session = FakeSession(ask=ASKS["search"])
    app = LabtuiApp(session)
    seen: list[str] = []

    async def steps(pilot: Pilot) -> None:
        screen = await wait_for_checkpoint(pilot)
        seen.append(str(screen.query_one("#checkpoint-dialog").border_title))
        seen.append(keybar_text(screen))
        await pilot.press(keys[0])
        if screen.revising:
            seen.append(screen.query_one("#checkpoint-note", Input).placeholder)
        await pilot.press(*keys[1:])
        await wait_for_end(pilot)

    run_app(app, steps)
    assert session.decisions == [decided]
    title, keybar, *placeholder = seen
    assert title == "Search checkpoint"
    assert "s End search" in keybar and "a Approve" in keybar and "q Abort" in keybar
    assert "e Edit" not in keybar
    assert placeholder == (["A note for the next proposals"] if decided.action == "revise" else [])


def test_help_lists_every_key_of_every_screen_and_pane() -> None:
    app = LabtuiApp(FakeSession(ask=None, wait_for_stop=True))
    shown: list[str] = []

    async def steps(pilot: Pilot) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        shown.append(str(app.screen.query_one("#help-keys", Static).render()))
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)

    run_app(app, steps)
    text = shown[0]
    for _, bindings in key_groups(LabtuiApp):
        for binding in bindings:
            assert (binding.tooltip or binding.description) in text
    for must in ("Approve", "Edit the product", "Leave a note", "Older", "Command palette"):
        assert must in text


def test_the_command_palette_offers_the_main_actions() -> None:
    from textual.command import CommandList, CommandPalette

    session = FakeSession(ask=None, wait_for_stop=True)
    app = LabtuiApp(session)
    titles: list[str] = []

    async def steps(pilot: Pilot) -> None:
        await wait_for(pilot, session.started.is_set)
        titles.extend(c.title for c in app.get_system_commands(app.screen))
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"leave a note")
        # The palette searches in a worker; enter picks whatever it has highlighted by then.
        await wait_for(pilot, lambda: highlighted_command(app.screen.query_one(CommandList)))
        assert highlighted_command(app.screen.query_one(CommandList)) == "Leave a note"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, NoteScreen))

    run_app(app, steps)
    for title in ("Leave a note", "Keys", "Show code diff", "Stop the pipeline", "Quit"):
        assert title in titles


def highlighted_command(commands) -> str:
    """The first line of the command palette's highlighted option ('' while none is)."""
    if commands.highlighted is None or not commands.has_class("--visible"):
        return ""
    return str(commands.get_option_at_index(commands.highlighted).prompt).splitlines()[0]


def test_the_header_follows_stages_runs_tokens_and_spend() -> None:
    from labtui.tui.status import Progress, format_elapsed, stage_bar, summary_line

    progress = Progress(budget_usd=10.0, models={"experiments": "openai/gpt-4o"})
    for event in up_to_experiments():
        progress.apply(event)
    line = str(summary_line("p", progress, elapsed_s=3723))
    assert "run 2 of 3" in line and "elapsed 1:02:03" in line
    assert "4.8k tok" in line and "$0.12 / $10.00" in line and "openai/gpt-4o" in line
    bar = str(stage_bar(progress))
    assert bar.startswith("✔ lit ✔ ideas ✔ novelty ✔ plan ▶ experiments · plots · write · tex")
    assert len(bar) <= 78, "the whole pipeline fits an 80-column terminal"
    wide = str(stage_bar(progress, width=160))
    assert wide.startswith("✔ literature ✔ ideas"), "full names where they fit"
    assert format_elapsed(-5) == "0:00:00"


def test_the_dialogue_follows_only_while_the_reader_is_at_the_bottom() -> None:
    from labtui.core.events import AgentMessage

    session = FakeSession(ask=None, wait_for_stop=True)
    app = LabtuiApp(session)

    async def steps(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: session.scripted.is_set() and app.pending_events == 0)
        log = app.main_screen.dialogue.log_widget
        for n in range(40):
            session.bus.emit(ev(AgentMessage, stage="experiments", role="coder", text=f"m{n}"))
        await wait_for(pilot, lambda: app.pending_events == 0)
        await pilot.pause()
        assert log.is_vertical_scroll_end, "at the bottom, new messages are followed"
        log.scroll_home(animate=False)
        await pilot.pause()
        session.bus.emit(ev(AgentMessage, stage="experiments", role="coder", text="later"))
        await wait_for(pilot, lambda: app.pending_events == 0)
        await pilot.pause()
        assert log.scroll_y == 0, "scrolled up to reread: the new message does not pull down"

    run_app(app, steps)


def test_maximising_rewraps_the_dialogue_to_the_new_width() -> None:
    session = FakeSession(ask=None, wait_for_stop=True)
    app = LabtuiApp(session)
    heights: list[int] = []

    async def steps(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: session.scripted.is_set() and app.pending_events == 0)
        await pilot.pause()
        log = app.main_screen.dialogue.log_widget
        heights.append(len(log.lines))
        app.main_screen.dialogue.query_one(RichLog).focus()
        await pilot.press("m")
        # The log rewraps after the resize that maximising causes: wait for that, not a time.
        await wait_for(pilot, lambda: len(log.lines) != heights[0])
        heights.append(len(log.lines))
        assert max(len(strip.text.rstrip()) for strip in log.lines) > 50

    run_app(app, steps)
    assert heights[1] < heights[0], "wider lines: the same messages take fewer rows"


def test_a_note_shows_in_the_dialogue_as_the_journal_records_it() -> None:
    from labtui.core.events import ResearcherNote

    history = [ev(ResearcherNote, stage="experiments", text="keep three seeds")]
    seen = run_app(LabtuiApp(FakeSession(history=history, problems=["x"])), wait_for_end_or_pause)
    assert "✎ your note: keep three seeds" in seen.dialogue


def test_a_pipeline_that_ends_as_the_app_closes_has_nothing_to_show_and_no_error() -> None:
    """Quitting stops the pipeline; its end can reach the app after the panes were removed (CI
    saw NoMatches there on a loaded machine). The outcome is kept; nothing is drawn."""
    app = LabtuiApp(FakeSession(ask=None, wait_for_stop=True))

    async def steps(pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.pipeline_running)

    run_app(app, steps)
    app.session.request_stop()
    log = ev(LogLine, run_id="run_2", stream="stdout", text="epoch 0 train_loss 0.69")
    for late in (log, metrics_reported(log)):  # the flush timer can tick during the teardown
        app._on_bus_event(late)
    app._flush_bursts()
    assert app.pending_events == 0, "taken and dropped: nothing left to draw"
    app._pipeline_ended("stopped")
    app._pipeline_crashed(RuntimeError("late"))
    assert app.outcome == "failed"


def test_the_review_card_shows_the_facts_the_reviewers_were_given_and_the_caps() -> None:
    facts = {
        "pages": 2, "parts": ["Abstract", "Introduction", "Results"], "missing": [],
        "placeholders": ["CONCLUSIONS HERE"], "unwritten": [], "figures": 0,
        "repeated": ["Introduction repeats a paragraph of the Abstract"],
        "traced": 0, "untraced": 0, "novelty": "unchecked",
    }  # fmt: skip
    capped = [{"score": "Quality", "from": 4, "to": 1, "why": "no number is traced to a run"}]
    shown = review_card_shows({**review_details(), "facts": facts, "capped": capped})
    assert shown["review-facts"].strip() == (
        "facts: 2 pages · 3 parts · placeholders: CONCLUSIONS HERE · repeats: Introduction "
        "repeats a paragraph of the Abstract · 0 numbers traced, 0 untraced · novelty unchecked"
    )
    assert shown["review-capped"].strip() == "capped: Quality 4 → 1: no number is traced to a run"
    assert "review-facts" not in review_card_shows(review_details()), "an older record: no line"
