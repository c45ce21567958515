"""What a stage gets to do its work: the project, its models, the bus, and the researcher's notes.

Stages never see a front end, nor the session: a ``StageContext`` is built on ``StageServices``,
the narrow part of the session a stage may use. Stages emit events and return a ``StageOutput``
whose ``checkpoint_body`` the pipeline shows at the checkpoint that follows, and whose ``result``
(the stage's record, ``core.workspace.stage_results``) later stages read with ``ctx.result(Record)``.

The services a stage asks for (``llm``, ``coder``, ``literature``, ``semantic_scholar``) are imported
when it first asks: together they are ~50 modules, ~60 ms more to import the session.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .checkpoints import ACTIONS, Checkpoints, Decision, ResearcherNotes
from .errors import Aborted, ConfigError
from .events import AgentChunk, AgentMessage, CodeDiff, Event, Notice
from .settings.config import Config, ModelSpec
from .settings.contract import prompt_facts
from .settings.prompts import load_prompt
from .stage_list import model_key
from .workspace.project import CommitInfo, Project
from .workspace.stage_results import StageResult

if TYPE_CHECKING:
    from .coding.coder import CodeEditor, Coder
    from .llm.budget import Ledger
    from .llm.client import LLM

R = TypeVar("R", bound=StageResult)
FUNCTION_EDITS = "function"  # [models] edit_format: labtui's own, not aider's


@dataclass
class StageOutput:
    summary: str  # one line: what the stage produced
    result: StageResult | None = None  # journaled (as JSON); later stages read it
    checkpoint_body: str = ""  # Markdown the researcher judges at the checkpoint
    kind: str = "stage"  # what the checkpoint judges (CheckpointRequest.kind)
    product: str = ""  # the project file the researcher may edit at the checkpoint
    subjects: list[str] = field(default_factory=list)  # what may be picked in the product
    details: dict[str, Any] = field(default_factory=dict)  # structured facts for the checkpoint
    # Actions beyond the usual that the stage module answers itself: a function of the same name
    # in the module takes (ctx, output, note) and returns the re-derived output (IMPROVE).
    extra_actions: tuple[str, ...] = ()
    # Why approval is refused until fixed or waived ('' when it is not): the stage module's
    # ``waive(ctx, output, reason)`` records a waiver and re-derives the output.
    blocked: str = ""

    def result_as(self, kind: type[R]) -> R:
        """This output's result as the record ``kind`` (its defaults where it has none): what a
        stage's own reload or action reads of the output it re-derives."""
        return self.result if isinstance(self.result, kind) else kind()

    def journaled_result(self) -> dict[str, Any]:
        """The result as the journal keeps it (``StageFinished.result``)."""
        return self.result.to_json() if self.result is not None else {}


class StageServices:
    """The part of a session a stage may use: the project, its settings, the bus, the budget,
    the researcher's notes and the results of earlier stages (as journaled). Nothing else of the
    session."""

    def __init__(
        self,
        project: Project,
        emit: Callable[[Event], None],
        ledger: Callable[[], Ledger],
        notes: ResearcherNotes,
        results: Callable[[str], dict[str, Any]],
    ) -> None:
        self.project = project
        self.config: Config = project.config
        self.emit = emit
        self._ledger = ledger  # made on first use: importing the LLM layer must not slow startup
        self.notes = notes
        self.result_of = results

    @property
    def ledger(self) -> Ledger:
        return self._ledger()


class StageContext:
    def __init__(
        self,
        services: StageServices,
        stage: str,
        notes: list[str],
        checkpoints: Checkpoints | None = None,
    ) -> None:
        self.services = services
        self._checkpoints = checkpoints
        self.project = services.project
        self.config = services.config
        self.stage = stage
        self.notes = notes  # revision notes from the researcher, oldest first
        self._emit = services.emit
        # notes left at any time, for the next LLM call (None in a parallel idea's lane)
        self._researcher_notes: ResearcherNotes | None = services.notes
        self.stop: threading.Event | None = None  # set: end this context's work early
        self.label = ""  # which parallel idea this context works on; '' for the project itself

    def for_lane(self, project: Project, label: str, stop: threading.Event) -> StageContext:
        """A context for one idea run in parallel, in its own worktree ``project``: its events
        are labelled with the idea, it never pauses at a checkpoint (the researcher judges the
        idea in the project itself), and the researcher's notes go to that idea, not here."""
        lane = StageContext(self.services, self.stage, [], checkpoints=None)
        lane.project = project
        lane.label = label
        lane.stop = stop
        lane._researcher_notes = None
        lane._emit = lambda event: self.services.emit(labelled(event, label))
        return lane

    def in_checkout(
        self, project: Project, stop: threading.Event | None = None, *, pauses: bool = True
    ) -> StageContext:
        """This stage at work in another checkout of the project (a search's worktree): its
        events go out as this context's, unlabelled; ``pauses`` false: it never asks a
        checkpoint (a search's parallel worker)."""
        other = StageContext(
            self.services, self.stage, self.notes, self._checkpoints if pauses else None
        )
        other.project = project
        other.stop = stop if stop is not None else self.stop
        other._emit = self._emit
        return other

    def check_stop(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Aborted(f"{self.label or self.stage} stopped: the experiments stage ended")

    # -- events -----------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self._emit(event)

    def say(self, text: str) -> None:
        self.emit(Notice(stage=self.stage, text=text))

    def tell(self, role: str, text: str) -> None:
        self.emit(AgentMessage(stage=self.stage, role=role, text=text))

    # -- results of earlier stages ------------------------------------------------------------

    def result(self, kind: type[R]) -> R:
        """The result the earlier stage ``kind.stage`` handed on, as its record (the record's
        defaults where that stage has not finished or its journal lacks a field)."""
        return kind.from_json(self.services.result_of(kind.stage))

    # -- models ------------------------------------------------------------------------------

    def model(self, stage: str) -> ModelSpec:
        """The model ``stage`` uses; a ConfigError says how to configure one."""
        spec = self.config.model_for(stage)
        if spec is None:
            raise ConfigError(
                f"no model configured for stage {stage!r}",
                f"set LABTUI_MODEL, or [models] default or [models] "
                f"{model_key(stage)} in labtui.toml",
            )
        if spec.local is not None:  # labtui's own model: where its server answers now
            from .llm.local_server import ready_spec  # noqa: PLC0415 -- see the module docstring

            spec = ready_spec(spec, self.say)
            self.config.use_local_server(spec.api_base)
        return spec

    def llm(self, role: str = "") -> LLM:
        from .llm.client import LLM  # noqa: PLC0415 -- see the module docstring

        return LLM(
            self.model(self.stage),
            self.config.llm,
            self.services.ledger,
            self.emit,
            self.stage,
            role=role or self.stage,
            notes=self._researcher_notes,
        )

    def coder(self, model_of: str = "") -> Coder:
        """An aider coder with this stage's model, or with the model of stage ``model_of`` (the
        review's improvement rounds revise the paper with the writer's model)."""
        from .coding.coder import Coder  # noqa: PLC0415 -- see the module docstring

        edit_format = self.config.models.edit_format
        return Coder(
            self.project,
            self.model(model_of or self.stage),
            emit=self.emit,
            stage=self.stage,
            ledger=self.services.ledger,
            edit_format="whole" if edit_format == FUNCTION_EDITS else edit_format,
            max_tokens=self.config.llm.max_tokens,
            notes=self._researcher_notes,
        )

    def code_editor(self) -> CodeEditor:
        """The coder of the experiment's code: with ``[models] edit_format = "function"`` a
        change is asked as the functions it replaces (core/coding/function_coder.py), aider
        writing whole files as the last resort; else aider's coder."""
        if self.config.models.edit_format != FUNCTION_EDITS:
            return self.coder()
        from .coding.function_coder import FunctionCoder  # noqa: PLC0415

        return FunctionCoder(
            self.project, self.llm("coder"), emit=self.emit, stage=self.stage,
            fallback=self.coder,
        )  # fmt: skip

    def literature(self):  # -> core.literature.arxiv.Literature: arXiv, cached in the project
        from .literature.arxiv import Literature  # noqa: PLC0415 -- see the module docstring

        settings = self.config.literature
        return Literature(
            self.project.state_dir / "cache",
            base_url=settings.arxiv_url,
            delay_s=settings.delay_s,
            retries=settings.retries,
            backoff_s=settings.backoff_s,
            emit=self.emit,
            stage=self.stage,
        )

    def semantic_scholar(self):  # -> SemanticScholar | None: only with S2_API_KEY set
        from .literature.semantic_scholar import SemanticScholar  # noqa: PLC0415 -- see the module docstring

        return SemanticScholar.from_env(
            self.project.state_dir / "cache",
            base_url=self.config.literature.s2_url,
            emit=self.emit,
            stage=self.stage,
        )

    def prompt(self, name: str, **values: Any) -> str:
        """The prompt ``name`` filled with ``values``, and with the project's own names for its
        code, its run command, its results and its paper (core.settings.contract.prompt_facts)."""
        facts = prompt_facts(self.project.root, self.config)
        return load_prompt(name, self.project.root, **{**facts, **values})

    def notes_block(self) -> str:
        """The researcher's revision notes, for the next prompt of this stage."""
        if not self.notes:
            return ""
        lines = "\n".join(f"- {note}" for note in self.notes)
        return f"\n\nThe researcher reviewed your previous attempt and asks:\n{lines}\n"

    # -- artifacts ---------------------------------------------------------------------------

    @property
    def attended(self) -> bool:
        """Whether a researcher answers this stage's questions (not --auto, not headless
        without checkpoints): only then may a product wait for what only they can accept."""
        return self._checkpoints is not None and not self._checkpoints.unattended

    def ask(
        self,
        title: str,
        body: str,
        *,
        kind: str,
        product: str = "",
        options: tuple[str, ...] = ACTIONS,
        return_edit: bool = False,
    ) -> Decision:
        """A checkpoint inside the stage (after each run, say). An edit of the product is kept
        and the question asked again (``return_edit``: the edit decision is returned and the
        caller keeps it); a revision note joins this stage's notes, so the next prompt of the
        stage carries it. Without a front end (no checkpoints) it approves, or skips where
        approval is not offered (a run that failed every attempt)."""
        if self._checkpoints is None:
            return Decision("approve" if "approve" in options else "skip")
        while True:
            self.services.ledger.check()  # the hard cap: stop here, everything committed
            decision = self._checkpoints.ask(
                self.stage, title, body, options, kind=kind, product=product
            )
            if decision.action == "edit" and not return_edit:
                self.keep_edit(product)
                continue
            if decision.action == "revise":
                self.notes.append(decision.note)
            return decision

    def keep_edit(self, product: str) -> CommitInfo | None:
        """Commit the researcher's edit of ``product`` (None when the file did not change)."""
        commit = self.commit(f"{self.stage}: researcher edited {product}", [product])
        if commit is None:
            self.say(f"{product} is unchanged: nothing to keep")
        else:
            self.say(f"kept your edit of {product} as commit {commit.sha[:8]}")
        return commit

    def commit(self, message: str, paths: list[str] | None = None) -> CommitInfo | None:
        info = self.project.commit(message, paths)
        if info is not None:
            self.emit(CodeDiff.from_commit(self.stage, info))
        return info


def labelled(event: Event, label: str) -> Event:
    """``event`` as seen from the parallel idea ``label``: run ids become ``label/run_1`` (so
    the logs and results keep ideas apart), agents speak as ``role · label`` (so two streams
    never mix) and notices and commits name the idea."""
    changes: dict[str, Any] = {}
    run_id = getattr(event, "run_id", None)
    if isinstance(run_id, str):
        changes["run_id"] = f"{label}/{run_id}"
    if isinstance(event, AgentMessage | AgentChunk):
        changes["role"] = f"{event.role} · {label}"
    elif isinstance(event, Notice):
        changes["text"] = f"[{label}] {event.text}"
    elif isinstance(event, CodeDiff):
        changes["message"] = f"[{label}] {event.message}"
    return dataclasses.replace(event, **changes) if changes else event
