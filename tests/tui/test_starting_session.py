"""StartingSession: the app's session on a project with no engine. The project's facts and journal
first, then, in ``run``, the engine started and followed from where the painted journal ends;
what the researcher did before the engine served (a note, stop, leaving) reaches it after."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.pilot import settle, wait_for
from textual.pilot import Pilot
from textual.widgets import Static

from labtui.core.errors import LabtuiError
from labtui.core.events import Bus, Event, Notice, StageStarted
from labtui.tui.app import LabtuiApp
from labtui.tui.remote_session import DETACHED
from labtui.tui.screens import ErrorScreen
from labtui.tui.starting_session import StartingSession

TS = 1_700_000_000.0


def event(stage: str) -> Event:
    return StageStarted(stage=stage, ts=TS)


class FakeJournal:
    closed = False

    def close(self) -> None:
        self.closed = True


class FakeProject:
    """The in-process project session: facts and the journal as it was on disk."""

    project_name = "moons"
    budget_usd = 10.0
    cluster = "local"
    commit_log = None

    def __init__(self, root: Path, journal: list[Event]) -> None:
        self.project_root = root
        self.journal = FakeJournal()
        self._journal = journal

    def history(self) -> list[Event]:
        return list(self._journal)

    def stage_models(self) -> dict[str, str]:
        return {}

    def model_problems(self) -> list[str]:
        return []

    def request_rewind(self, stage: str) -> None:
        raise LabtuiError("rewind: no pipeline runs in this session")


class FakeEngine:
    """The RemoteSession of the engine: its replay, one live event, what it was asked."""

    engine_pid = 4242

    def __init__(self, replay: list[Event], live: list[Event]) -> None:
        self.bus = Bus()
        self._replay, self._live = replay, live
        self.asked: list[Any] = []

    def history(self) -> list[Event]:
        return list(self._replay)

    def run(self, port: object) -> str:
        for live in self._live:
            self.bus.emit(live)
        return "finished"

    def leave_note(self, text: str) -> None:
        self.asked.append(("note", text))

    def request_stop(self) -> None:
        self.asked.append("stop")

    def detach(self) -> None:
        self.asked.append("detach")


def starting(tmp_path: Path, engine: FakeEngine) -> tuple[StartingSession, list[Path]]:
    started: list[Path] = []
    project = FakeProject(tmp_path, [event("literature"), event("ideas")])
    session = StartingSession(
        tmp_path,
        lambda root: project,  # type: ignore[arg-type,return-value]
        started.append,
        lambda root: engine,  # type: ignore[arg-type,return-value]
    )
    return session, started


def test_the_engine_is_started_in_run_and_followed_after_the_painted_journal(
    tmp_path: Path,
) -> None:
    painted = [event("literature"), event("ideas")]
    engine = FakeEngine(replay=[*painted, event("novelty")], live=[event("plan")])
    session, started = starting(tmp_path, engine)
    assert session.history() == painted and started == []  # nothing starts before run
    seen: list[Event] = []
    session.bus.subscribe(seen.append)

    assert session.run(port=object()) == "finished"  # type: ignore[arg-type]

    assert started == [tmp_path]
    assert session._local.journal.closed  # type: ignore[attr-defined]
    assert [e.stage for e in seen if isinstance(e, StageStarted)] == ["novelty", "plan"]
    notices = [e.text for e in seen if isinstance(e, Notice)]
    assert notices == ["started the engine (pid 4242); q detaches"]
    assert session.engine_pid == 4242


def test_what_was_asked_before_the_engine_served_reaches_it(tmp_path: Path) -> None:
    engine = FakeEngine(replay=[], live=[])
    session, _ = starting(tmp_path, engine)
    session.history()
    session.leave_note("try a smaller learning rate")
    assert session.interrupt() is False  # nothing under way yet
    with pytest.raises(LabtuiError):
        session.request_rewind("ideas")  # the project's own session says why not
    session.run(port=object())  # type: ignore[arg-type]
    assert engine.asked == [("note", "try a smaller learning rate")]


def test_stop_before_run_starts_no_engine(tmp_path: Path) -> None:
    session, started = starting(tmp_path, FakeEngine(replay=[], live=[]))
    session.history()
    session.request_stop()
    assert session.run(port=object()) == "stopped"  # type: ignore[arg-type]
    assert started == []


def test_leaving_while_the_engine_starts_leaves_it_running(tmp_path: Path) -> None:
    engine = FakeEngine(replay=[], live=[event("plan")])
    session, started = starting(tmp_path, engine)
    session.history()
    session.detach()  # the app left before the engine served
    assert session.run(port=object()) == DETACHED  # type: ignore[arg-type]
    assert started == [tmp_path] and engine.asked == ["detach"]


def test_the_project_is_opened_by_the_first_fact_asked_for_not_before(tmp_path: Path) -> None:
    """Opening loads labtui.toml (pydantic): the app asks after its first frame."""
    opened: list[Path] = []

    def open_project(root: Path) -> FakeProject:
        opened.append(root)
        return FakeProject(root, [])

    session = StartingSession(tmp_path, open_project, lambda root: None)  # type: ignore[arg-type]
    assert session.project_root == tmp_path and session.commit_log.root == tmp_path.resolve()
    assert opened == []
    assert session.project_name == "moons" and session.budget_usd == 10.0
    session.history()
    assert opened == [tmp_path]  # once


def test_a_project_that_cannot_be_opened_says_why_when_asked(tmp_path: Path) -> None:
    def open_project(root: Path) -> FakeProject:
        raise LabtuiError(f"{root}/labtui.toml: [budget] usd: not a number", "write usd = 10")

    session = StartingSession(tmp_path, open_project, lambda root: None)  # type: ignore[arg-type]
    with pytest.raises(LabtuiError, match="usd"):
        session.stage_models()


# -- in the app: the first frame before the project, then its facts ------------------------


def run_in_app(session: StartingSession, steps) -> LabtuiApp:  # type: ignore[no-untyped-def]
    app = LabtuiApp(session)  # type: ignore[arg-type]

    async def test() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await steps(app, pilot)

    asyncio.run(test())
    return app


def text_of(app: LabtuiApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def test_the_app_shows_the_project_it_opened_after_painting(tmp_path: Path) -> None:
    project = FakeProject(tmp_path, [event("literature")])
    project.cluster = "slurm"
    started: list[Path] = []
    session = StartingSession(
        tmp_path,
        lambda root: project,  # type: ignore[arg-type,return-value]
        started.append,
        lambda root: FakeEngine(replay=[event("literature")], live=[]),  # type: ignore[arg-type,return-value]
    )

    async def steps(app: LabtuiApp, pilot: Pilot) -> None:
        await wait_for(pilot, lambda: app.outcome == "finished")
        await settle(pilot)
        summary = text_of(app, "#status-summary")
        assert "moons" in summary and "$0.00 / $10.00" in summary
        assert text_of(app, "#gpu-status") == "GPUs on the cluster: no job yet"
        assert app.title == "labtui — moons"

    run_in_app(session, steps)
    assert started == [tmp_path]


def test_a_project_whose_labtui_toml_is_wrong_is_said_in_the_app_and_nothing_starts(
    tmp_path: Path,
) -> None:
    from labtui.tui.commands.attach import open_project

    (tmp_path / "labtui.toml").write_text('[budget]\nusd = "ten"\n')
    started: list[Path] = []
    session = StartingSession(tmp_path, open_project, started.append)

    async def steps(app: LabtuiApp, pilot: Pilot) -> None:
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, ErrorScreen) and bool(app.screen.query("#error-message"))
            ),
        )
        assert "Could not open the project" in text_of(app, "#error-title")
        message = text_of(app, "#error-message")
        assert "labtui.toml" in message and "usd" in message
        await pilot.press("q", "q")

    app = run_in_app(session, steps)
    assert started == [] and app.return_code == 1
