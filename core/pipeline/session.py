"""The pipeline: stages in order, a checkpoint after each, resume from the journal.

A ``Session`` is one opening of a project: it replays the journal to learn where the project is,
subscribes the journal to the bus (so everything that happens is recorded before any front end
sees it) and runs the remaining stages. Front ends only subscribe to ``bus`` and answer
checkpoints through a ``CheckpointPort``; from any thread they may ``interrupt()`` the work
under way (a checkpoint opens for it), ``request_rewind(stage)`` (applied at the next
checkpoint, or between stages), ``leave_note`` and ``request_stop``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..checkpoints import (
    INTERRUPTED_ACTIONS,
    REWIND,
    AnswerablePort,
    CheckpointPort,
    Checkpoints,
    Decision,
    ResearcherNotes,
    RewindRequested,
)
from ..errors import Aborted, BudgetExceeded, LabtuiError
from ..events import (
    Bus,
    CheckpointDecided,
    ErrorEvent,
    Event,
    Notice,
    PipelineEnded,
    Rewound,
    StageFinished,
    StageInterrupted,
    StageStarted,
)
from ..journal import JOURNAL_NAME, Journal, PipelineState, read_events, replay
from ..llm.budget import Ledger
from ..llm.litellm_setup import check_model
from ..llm.streaming import Interrupt, Interrupted, interruptible
from ..local_model.manage import LocalOffer, local_model_title
from ..local_model.manage import offer as local_offer
from ..local_model.manage import problems as local_model_problems
from ..settings.profiles import apply_profile, profile_notice
from ..stage_context import StageContext, StageOutput, StageServices
from ..stage_list import STAGE_MODEL_NEEDS, STAGES
from ..stage_protocol import Stage, load_stage
from ..workspace.project import Project
from ..workspace.rewind import check_stage, rewind_to
from .estimates import SessionEstimates
from .notify import notifier_for
from .project_lock import hold_project_lock
from .stage_checkpoint import ask_until_decided, interrupted_body

if TYPE_CHECKING:
    from ..workspace.history import CommitLog


class Session:
    """One opening of a project: journal, bus, ledger and the remaining stages."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.config = project.config
        # Settings that fit a small local model, where it is one (said when the run starts).
        self.profile_changes = apply_profile(self.config)
        self.bus = Bus()
        self._history = read_events(project.state_dir / "journal.jsonl")
        self.state: PipelineState = replay(self._history)
        self.journal = Journal(project.state_dir)
        self.bus.subscribe(self.journal.append)
        self.estimates = SessionEstimates(project, self.emit, self._history)
        self.bus.subscribe(self.estimates)
        self.notes = ResearcherNotes(self.emit)
        self._stop = threading.Event()
        self._ledger: Ledger | None = None
        self._current = ""  # the stage running now, for errors raised out of it
        self.services = StageServices(
            project, self.emit, lambda: self.ledger, self.notes, self.state.result
        )
        self._interrupt = Interrupt()  # Escape: the stage's LLM call or run stops
        self._working = threading.Event()  # a stage's work is under way (set: interruptible)
        self._port: AnswerablePort | None = None  # while run() runs
        self.notifier = notifier_for(
            self.config.notify,
            project=project.name,
            directory=project.root,
            budget_usd=self.config.budget.usd,
            spent_usd=self.state.total_cost_usd,
            emit=self.emit,
        )
        if self.notifier is not None:
            self.bus.subscribe(self.notifier)

    @classmethod
    def open(cls, directory: Path) -> Session:
        return cls(Project.open(directory))

    # -- what front ends read ---------------------------------------------------------------

    @property
    def project_name(self) -> str:
        return self.project.name

    @property
    def cluster(self) -> str:
        """Where runs execute: "local" or "slurm" ([cluster] backend)."""
        return self.config.cluster.backend

    @property
    def project_root(self) -> Path:
        return self.project.root

    @property
    def budget_usd(self) -> float:
        return self.config.budget.usd

    @property
    def commit_log(self) -> CommitLog:
        # ~1.5 ms that opening a session need not pay: a front end reads the history
        from ..workspace.history import CommitLog  # noqa: PLC0415

        return CommitLog(self.project.root)

    def history(self) -> list[Event]:
        return list(self._history)

    def stage_models(self) -> dict[str, str]:
        """The model name each stage uses ('' where none is configured)."""
        names: dict[str, str] = {}
        for stage in STAGES:
            spec = self.config.model_for(stage)
            if spec is not None and spec.local is not None:
                names[stage] = local_model_title(spec.local)
            else:
                names[stage] = spec.name if spec is not None else ""
        return names

    def context_for(
        self, stage: str, notes: list[str] | None = None, checkpoints: Checkpoints | None = None
    ) -> StageContext:
        """What ``stage`` works with in this session (no checkpoints: it never pauses)."""
        return StageContext(self.services, stage, list(notes or []), checkpoints)

    def leave_note(self, text: str) -> None:
        """A note from the researcher, at any time: journaled now, read by the next LLM call."""
        self.notes.leave(text, stage=self._current)

    def emit(self, event: Event) -> None:
        self.bus.emit(event)

    @property
    def ledger(self) -> Ledger:  # created on first use: nothing before needs the budget
        if self._ledger is None:
            self._ledger = Ledger(
                self.config.budget.usd, self.emit, spent_usd=self.state.total_cost_usd
            )
        return self._ledger

    def model_problems(self) -> list[str]:
        """What must be fixed before the LLM stages can run; [] when every stage has a model."""
        missing = [s for s in STAGE_MODEL_NEEDS if self.config.model_for(s) is None]
        if missing:
            return [
                "no model is configured for stage(s) "
                + ", ".join(missing)
                + ": set LABTUI_MODEL (and its provider key), or [models] default in "
                + str(self.project.root / "labtui.toml")
            ]
        problems: list[str] = []
        for spec in {self.config.model_for(s) for s in STAGE_MODEL_NEEDS}:
            if spec is not None and spec.local is not None:
                problems += local_model_problems(spec.local)
            elif spec is not None:
                problems += check_model(spec)
        return problems

    def local_model_offer(self) -> LocalOffer | None:
        """labtui's own model, where the stages use it and it is not set up yet."""
        specs = [self.config.model_for(stage) for stage in STAGE_MODEL_NEEDS]
        local = next((spec.local for spec in specs if spec is not None and spec.local), None)
        return local_offer(local) if local is not None else None

    # -- running ----------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()
        self._cancel_cluster_jobs("labtui is stopping")

    def _cancel_cluster_jobs(self, why: str) -> None:
        """A cluster job would run on, spending the allocation, after labtui stopped: stopping
        (quit, abort, a failure) cancels them, and a resume submits their runs again."""
        if self.config.cluster.backend == "slurm":
            # ~30 modules (~25 ms) that opening a session without a cluster need not import
            from ..slurm.jobs import cancel_live_jobs  # noqa: PLC0415

            cancel_live_jobs(self.emit, why)

    def interrupt(self) -> bool:
        """Stop the LLM call or run step under way now (Escape); a checkpoint then asks how to
        go on (retry, revise with a note, skip, abort). True when there was work to stop; at a
        checkpoint, or with nothing running, it does nothing (False)."""
        port = self._port
        if port is None or not self._working.is_set() or port.asking.is_set():
            return False
        if self._interrupt.is_set():
            return True
        self._interrupt.set()
        self.emit(Notice(stage=self._current, text="interrupting: stopping the work under way"))
        return True

    def request_rewind(self, stage: str) -> None:
        """Go back to before ``stage`` at the next safe point: a checkpoint waiting now is
        answered with the rewind, else the next one asked (or the next stage's start), and the
        pipeline goes on from ``stage``. LabtuiError for a stage unknown or not reached, or
        when no pipeline runs in this session."""
        check_stage(stage, self.state, self.project.state_dir / JOURNAL_NAME)
        port = self._port
        if port is None:
            raise LabtuiError(
                "rewind: no pipeline runs in this session",
                f"run `labtui rewind {stage}` in {self.project.root} (with no labtui running)",
            )
        self.emit(Notice(stage=stage, text=f"rewind to before {stage}: at the next checkpoint"))
        port.answer(Decision(REWIND, to_stage=stage))

    def run(self, port: CheckpointPort) -> str:
        """Run the remaining stages. Returns "finished", "stopped" or "failed"; never raises
        for problems a researcher can fix: those become ErrorEvents and the project stays
        resumable at the stage that failed. A session runs once: the journal closes after."""
        try:
            lock = hold_project_lock(self.project.state_dir)
        except LabtuiError:
            self.journal.close()
            raise
        unattended = bool(getattr(port, "unattended", False))  # AutoApprove, an --auto engine
        if self.notifier is not None:
            self.notifier.checkpoints_wait = not unattended
        self._port = AnswerablePort(port, before_ask=self._interrupt.clear)
        checkpoints = Checkpoints(self._port, self.emit, unattended=unattended)
        outcome = "failed"  # should anything unforeseen escape
        try:
            with interruptible(self._interrupt):
                outcome = self._run_stages(checkpoints)
            return outcome
        finally:
            self._port = None
            self._cancel_cluster_jobs(f"the pipeline {outcome}")
            self.estimates.check_against_actual()
            self.emit(PipelineEnded(stage=self._current, outcome=outcome))
            if self.notifier is not None:
                self.notifier.close()  # the last notifications go out before the journal closes
            self.journal.close()
            lock.close()

    def _run_stages(self, checkpoints: Checkpoints) -> str:
        if self.journal.repaired:
            self.emit(Notice(text=self.journal.repaired))
        self._recover_uncommitted_work()
        if notice := profile_notice(self.config, self.profile_changes):
            self.emit(Notice(text=notice))
        self.estimates.announce("estimate before the run")  # before the first model call
        try:
            self._restart_interrupted_stage()
            self._pass_over_new_stages()
            while (stage := self._next_stage()) is not None:
                if self._stop.is_set():
                    self.emit(Notice(stage=stage, text="stopped before this stage; resumable"))
                    return "stopped"
                try:
                    self._rewind_if_asked(stage)
                    self._run_stage_until_decided(stage, checkpoints)
                except RewindRequested as request:
                    self._rewind(
                        request.to_stage or self._stage_before(request.stage), request.note
                    )
        except Aborted as exc:
            self.emit(Notice(stage=self._current, text=f"aborted by the researcher: {exc.message}"))
            return "stopped"
        except BudgetExceeded as exc:
            self.emit(ErrorEvent(stage=self._current, message=exc.message, hint=exc.hint))
            return "stopped"
        except LabtuiError as exc:
            self.emit(ErrorEvent(stage=self._current, message=exc.message, hint=exc.hint))
            self.emit(StageFinished(stage=self._current, status="failed", summary=exc.message))
            return "failed"
        return "finished"

    def _next_stage(self) -> str | None:
        return next((stage for stage in STAGES if stage not in self.state.finished), None)

    def _run_stage_until_decided(self, stage: str, checkpoints: Checkpoints) -> None:
        self._current = stage
        declared = load_stage(stage)
        self._working.set()
        try:
            while True:
                decision, output = self._attempt(stage, declared, checkpoints)
                if decision.action in ("revise", "retry"):
                    if decision.action == "revise":  # its note reaches the next attempt's prompts
                        self.state.decisions.append(
                            CheckpointDecided(
                                stage=stage, checkpoint_id="", action="revise", note=decision.note
                            )
                        )
                    continue
                if decision.action == "abort":
                    raise Aborted(decision.note or "no note given; the project is resumable")
                status = "skipped" if decision.action == "skip" else "done"
                finished = StageFinished(
                    stage=stage,
                    status=status,
                    summary=output.summary,
                    result=output.journaled_result(),
                )
                self.emit(finished)
                self.state.finished[stage] = finished
                self.estimates.announce(f"estimate after {stage}")
                self.estimates.check_time()  # the time cap: stop here, the stage's work kept
                return
        finally:
            self._working.clear()
            self._interrupt.clear()

    def _attempt(
        self, stage: str, declared: Stage, checkpoints: Checkpoints
    ) -> tuple[Decision, StageOutput]:
        """One attempt at ``stage`` up to its decision; an interrupt ends it at a checkpoint of
        its own (retry, revise, skip, abort, rewind)."""
        started = StageStarted(stage=stage, head=self.project.head())
        self.emit(started)
        self.state.apply(started)
        ctx = StageContext(self.services, stage, self.state.notes_for(stage), checkpoints)
        ctx.stop = self._interrupt.event  # a run polls it: an interrupt stops the run step
        try:
            return ask_until_decided(
                ctx,
                declared,
                declared.run(ctx),
                checkpoints,
                ledger=self.ledger,
                rewind=self._rewind_option(stage),
                before_ask=self.estimates.at_checkpoint,
            )
        except Interrupted:
            return self._ask_after_interrupt(stage, "the LLM call", checkpoints), StageOutput("")
        except Aborted:
            if not self._interrupt.is_set():
                raise  # the researcher's abort, or a budget stop: not an interrupt
            return self._ask_after_interrupt(stage, "the run", checkpoints), StageOutput("")

    def _ask_after_interrupt(self, stage: str, what: str, checkpoints: Checkpoints) -> Decision:
        self._interrupt.clear()
        self.emit(StageInterrupted(stage=stage, what=what))
        decision = checkpoints.ask(
            stage,
            f"{stage}: interrupted",
            interrupted_body(stage, what, self.project.head(), self._can_rewind(stage)),
            INTERRUPTED_ACTIONS + self._rewind_option(stage),
            kind="interrupted",
        )
        if decision.action == "skip":
            self.emit(Notice(stage=stage, text=f"{stage} skipped after the interrupt"))
        return decision

    # -- rewinding --------------------------------------------------------------------------

    def _stage_before(self, stage: str) -> str:
        """The latest stage before ``stage`` that started (``stage`` itself when none did)."""
        earlier = [s for s in STAGES[: STAGES.index(stage)] if s in self.state.started]
        return earlier[-1] if earlier else stage

    def _can_rewind(self, stage: str) -> bool:
        return self._stage_before(stage) != stage

    def _rewind_option(self, stage: str) -> tuple[str, ...]:
        return (REWIND,) if self._can_rewind(stage) else ()

    def _rewind_if_asked(self, stage: str) -> None:
        """A rewind asked for while no checkpoint waited is done here, between stages."""
        port = self._port
        pending = port.take_pending() if port is not None else None
        if pending is not None:
            raise RewindRequested(stage, pending.to_stage, pending.note)

    def _restart_interrupted_stage(self) -> None:
        """A stage the last session left mid-work (killed, hung up, crashed: started, never
        finished nor failed, and not stopped at a safe point) starts again from the commit it
        began at, its half-done work kept on a tag: a redo that built on half its own work (code
        already edited, a run already numbered) would end where an uninterrupted run never
        goes. A stage that failed, or that the researcher stopped at a checkpoint, is not
        rewound: they may have fixed or edited its files since."""
        inside = ""
        for event in self._history:
            if isinstance(event, StageStarted):
                inside = event.stage
            elif isinstance(event, (StageFinished, Rewound)):
                inside = ""
            elif isinstance(event, PipelineEnded) and event.outcome == "stopped":
                inside = ""
        if inside and inside not in self.state.finished and inside in self.state.started:
            if load_stage(inside).resumes_in_place(self.config):
                self.emit(
                    Notice(
                        stage=inside,
                        text=f"the last session left {inside} unfinished: it goes on from "
                        "where its record says it stopped",
                    )
                )
                return
            self.emit(Notice(stage=inside, text=f"the last session left {inside} unfinished"))
            self._rewind(inside, "")

    def _rewind(self, stage: str, note: str) -> None:
        """Back to before ``stage`` (journaled as Rewound); the pipeline goes on from it."""
        self._current = stage
        rewound, told = rewind_to(self.project, self.state, stage, note)
        self.emit(rewound)
        self.state.apply(rewound)
        self.emit(Notice(stage=stage, text=told))

    def _pass_over_new_stages(self) -> None:
        """A project begun before labtui had some stage goes on from where it stood: the new
        stage is journaled as skipped, once, and every front end shows it so."""
        for stage in self.state.passed_over():
            skipped = StageFinished(
                stage=stage,
                status="skipped",
                summary="not run: this project began before labtui had this stage",
            )
            self.emit(skipped)
            self.state.finished[stage] = skipped

    def _recover_uncommitted_work(self) -> None:
        """Edits made since the last session (by hand, or by a run killed mid-stage) are kept as
        a commit before anything else touches the files."""
        self.project.clear_stale_ref_locks()
        commit = self.project.commit("labtui: keep changes made since the last session")
        for repair in self.project.take_repairs():
            self.emit(Notice(text=repair))
        if commit:
            files = ", ".join(commit.files[:5]) + (" …" if len(commit.files) > 5 else "")
            self.emit(Notice(text=f"kept uncommitted changes ({files}) as commit {commit.sha[:8]}"))
