"""The aider bridge: one aider chat per edit, its IO routed into events, each real edit a commit.

aider is driven through its scripting API (``Coder.create(...).run(prompt)``) with an
``InputOutput`` subclass (:class:`EventIO`) that turns everything aider says into events and
answers every question itself, so aider never reads the terminal. labtui, not aider, owns git:
aider runs with ``use_git=False`` and :class:`Coder` commits the files that really changed.

aider reports a malformed or non-matching edit only on its output and leaves the file as it was
(The AI Scientist then ran the unchanged experiment: its issue #106). So :meth:`Coder.edit` hashes
the files before and after, asks again once with aider's complaint quoted when nothing changed,
and says plainly when the edit still did not land.

This room holds the edit flow: :class:`Coder` (a chat per edit, the reply checked, written whole
or refused whole, asked again, committed) and :class:`EditResult`. Its neighbours hold the
rest: core/coding/aider_chat.py a fresh aider chat set up for labtui,
core/coding/aider_io.py aider's IO (:class:`EventIO`, the answers to its questions, where it may
write), core/coding/aider_model.py the model aider calls (offline setup, streaming, failures,
prices), core/coding/edit_feedback.py why an attempt failed and what the next one is told.

Importing aider takes seconds and litellm more, so both are imported inside functions only; this
module itself is cheap to import (``labtui --help`` must stay fast).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..checkpoints import ResearcherNotes
from ..errors import LabtuiError
from ..events import CodeDiff, Event, Notice, Refused
from ..llm.failures import final_error
from ..llm.litellm_setup import token_price
from ..settings.config import ModelSpec
from ..settings.contract import matches
from ..workspace.project import CommitInfo, Project
from .aider_chat import open_chat
from .aider_io import file_sha, inside, may_write, text_streams
from .edit_feedback import attempt_problem, explanation_of, retry_prompt
from .edit_guard import EditPolicy, Problem, check_edit
from .edit_repair import restored_parts

if TYPE_CHECKING:
    from ..llm.budget import Ledger


@dataclass(frozen=True)
class EditResult:
    changed: bool  # did any file actually change on disk?
    files: list[str]  # changed files, relative to the project root
    commit: CommitInfo | None  # from Project.commit; None when nothing changed
    reply: str  # the assistant's text (its last reply)
    error: str  # "" or why the edit failed or only partly applied
    target_changed: bool = False  # did one of the files the step edits change?
    # Why labtui refused replies before they touched the tree, one sentence each, every attempt.
    refusals: list[str] = field(default_factory=list)

    @property
    def explanation(self) -> str:
        """The reply without its edit blocks: what the coder said it changed and why."""
        return explanation_of(self.reply)


class CodeEditor(Protocol):
    """What a step asks of its coder: an edit of ``files`` for ``prompt``, verified and
    committed (aider's :class:`Coder`, or core/coding/function_coder.py's)."""

    def edit(
        self,
        files: list[str],
        prompt: str,
        *,
        commit_message: str,
        read_only: list[str] | None = None,
        retries: int = 1,
        policy: EditPolicy | None = None,
    ) -> EditResult: ...


# -- the bridge --------------------------------------------------------------------------------


class Coder:
    """Edits project files with aider: ``edit()`` returns what changed and commits it."""

    def __init__(
        self,
        project: Project,
        spec: ModelSpec,
        *,
        emit: Callable[[Event], None],
        stage: str,
        ledger: Ledger,
        edit_format: str = "",
        max_tokens: int = 4096,
        notes: ResearcherNotes | None = None,
    ) -> None:
        self.notes = notes  # the researcher's notes left at any time reach the next edit
        self.project = project
        self.spec = spec
        self.emit = emit
        self.stage = stage
        self.ledger = ledger
        self.edit_format = edit_format
        self.max_tokens = max_tokens
        self._timings: list[tuple[float, float]] = []  # (first_token_s, seconds) per call

    # -- public --------------------------------------------------------------------------------

    def edit(
        self,
        files: list[str],
        prompt: str,
        *,
        commit_message: str,
        read_only: list[str] | None = None,
        retries: int = 1,
        policy: EditPolicy | None = None,
    ) -> EditResult:
        """Ask aider to edit ``files``; verify, commit and report what really changed.

        ``policy`` says what else the step's edit may touch (default: nothing, no new files) and
        what each file must keep. A reply is checked before it touches the tree and is written
        whole or refused whole (a Refused event per reason, asked again like a no-op edit).

        Raises LLMError only when the model cannot be reached or used at all (key, name, server)
        and BudgetExceeded when the budget is spent; a model that fails to edit is an EditResult
        with ``changed=False`` and ``error`` saying why.
        """
        policy = policy or EditPolicy()
        targets = self._resolve(files, "edit")
        if not targets:
            raise LabtuiError("Coder.edit needs at least one file to edit", "pass files=[...]")
        readonly = self._resolve(read_only or [], "read", must_exist=True)
        self.ledger.check()
        if self.notes is not None:
            prompt = self.notes.attach_to_prompt(prompt)
        before = {path: file_sha(path) for path in targets}
        with text_streams():
            event_io, aider_coder, failures = self._start(targets, readonly)
            event_io.use_policy(policy, [self._rel(p) for p in targets])
            message, reply, problem, changed = prompt, "", "", []
            refused: list[Problem] = []  # why the last attempt's reply was refused
            refusals: list[str] = []  # every attempt's
            for attempt in range(retries + 1):
                if attempt:
                    self.ledger.check()
                    message = retry_prompt(
                        self._names(targets), aider_coder, problem, refused, policy
                    )
                event_io.begin_turn()
                failures.clear()
                aider_coder.reflected_message = None
                try:
                    reply = self._run(aider_coder, message)
                    if failures and not reply.strip():
                        raise final_error(
                            self.spec, self.stage, failures[-1], self.project.config.llm.retries + 1
                        )
                except BaseException:
                    event_io.discard()  # nothing of an interrupted turn reaches the tree
                    raise
                refused = self._judge(event_io, aider_coder, policy)
                refusals += [p.reason for p in refused]
                changed = self._changed(before, event_io)
                problem = attempt_problem(
                    aider_coder, event_io, reply, self._names(targets), bool(changed), refused
                )
                if changed:
                    break
        return self._finish(targets, changed, reply, problem, commit_message, retries + 1, refusals)

    # -- steps ---------------------------------------------------------------------------------

    def _resolve(self, names: list[str], verb: str, must_exist: bool = False) -> list[Path]:
        root = self.project.root
        paths = []
        for name in names:
            path = (root / name).resolve()
            allowed = may_write(path, root) if verb == "edit" else inside(path, root)
            if not allowed:
                raise LabtuiError(
                    f"cannot let aider {verb} {name}: it is outside the project {root} "
                    "or in its .git/.labtui state",
                    "pass paths of project files relative to the project root",
                )
            if verb == "edit" and matches(name, self.project.config.experiment.protect):
                raise LabtuiError(
                    f"cannot let aider edit {name}: [experiment] protect keeps it from any change",
                    "take it out of protect in labtui.toml if the agents may change it",
                )
            if verb == "edit" and self._ignored(path):
                raise LabtuiError(
                    f"cannot let aider edit {name}: git ignores it, so the edit could not be "
                    "committed",
                    "edit tracked files, or change the project's .gitignore",
                )
            if must_exist and not path.is_file():
                raise LabtuiError(f"cannot show aider {name}: no such file in {root}")
            paths.append(path)
        return list(dict.fromkeys(paths))

    def _ignored(self, path: Path) -> bool:
        return bool(self.project.repo.ignored(self._rel(path)))

    def _writable_predicate(self, readonly: list[Path]) -> Callable[[Path], bool]:
        """What aider may write: project files outside git/labtui state, not read-only, not
        protected by ``[experiment] protect`` (evaluation code, data), and not git-ignored (an
        ignored file could not be committed, so the edit would be lost)."""
        root, protected = self.project.root, frozenset(readonly)
        never = self.project.config.experiment.protect

        def writable(path: Path) -> bool:
            return (
                may_write(path, root, protected)
                and not matches(self._rel(path), never)
                and not self._ignored(path)
            )

        return writable

    def _start(self, targets: list[Path], readonly: list[Path]) -> tuple[Any, Any, list]:
        """A fresh aider chat on the targets (core/coding/aider_chat.py); its calls' timings are
        the ones ``_run`` bills."""
        chat = open_chat(
            self.project,
            self.spec,
            targets,
            readonly,
            allowed=self._writable_predicate(readonly),
            emit=self.emit,
            stage=self.stage,
            edit_format=self.edit_format,
            max_tokens=self.max_tokens,
            notice=self._notice,
        )
        self._timings = chat.timings
        return chat.io, chat.coder, chat.failures

    def _notice(self, text: str) -> None:
        self.emit(Notice(stage=self.stage, text=text))

    def _run(self, aider_coder: Any, message: str) -> str:
        """One aider turn; tokens and cost go to the ledger whatever happens."""
        sent, received = aider_coder.total_tokens_sent, aider_coder.total_tokens_received
        cost = aider_coder.total_cost
        self._timings.clear()
        try:
            reply = aider_coder.run(with_message=message, preproc=False) or ""
        except (LabtuiError, KeyboardInterrupt):
            raise
        except Exception as exc:
            aider_coder.io.tool_error(f"aider failed: {type(exc).__name__}: {exc}")
            reply = ""
        finally:
            self._bill(
                aider_coder.total_tokens_sent - sent,
                aider_coder.total_tokens_received - received,
                aider_coder.total_cost - cost,
                self._timings[-1] if self._timings else (0.0, 0.0),
            )
        return reply

    def _bill(
        self,
        tokens_in: int,
        tokens_out: int,
        aider_cost: float,
        timing: tuple[float, float] = (0.0, 0.0),
    ) -> None:
        """Book one aider turn; ``timing`` is its completed call's (first_token_s, seconds)."""
        if not (tokens_in or tokens_out or aider_cost):
            return
        # aider prices the response itself (cache-aware) when its metadata has prices; else the
        # same rule as core/llm/client.py: litellm's price, or labtui.toml's for models litellm lacks.
        cost = aider_cost if aider_cost > 0 else token_price(self.spec, tokens_in, tokens_out)
        first_token_s, seconds = timing
        self.ledger.record(
            self.stage,
            self.spec.name,
            int(tokens_in),
            int(tokens_out),
            float(cost),
            first_token_s=first_token_s,
            seconds=seconds,
        )

    def _judge(self, event_io: Any, aider_coder: Any, policy: EditPolicy) -> list[Problem]:
        """Check aider's staged writes; write them all, or refuse them all and say why."""
        problems = [*event_io.problems, *self._check_staged(event_io, policy)]
        if not problems:
            event_io.flush()
            return []
        removed = event_io.discard()
        # aider put the files it created into its chat; gone from disk, they must leave it too.
        aider_coder.abs_fnames.difference_update({str(p) for p in removed})
        for problem in problems:
            self.emit(
                Refused(stage=self.stage, what="edit", subject=problem.path, reason=problem.reason)
            )
        return problems

    def _check_staged(self, event_io: Any, policy: EditPolicy) -> list[Problem]:
        problems: list[Problem] = []
        for path, new in list(event_io.pending.items()):
            old = event_io.on_disk(path)
            if old == new:
                continue
            name = self._rel(path)
            if old is not None and name.endswith(".py"):
                new = event_io.pending[path] = self._with_head_restored(name, old, new)
            problems += check_edit(name, old, new, policy.contract(name, old))
        return problems

    def _with_head_restored(self, name: str, old: str, new: str) -> str:
        """``new`` with the definitions the reply left out and its code still uses, and its entry
        point, put back (edit_repair.restored_parts), said in a notice."""
        restored = restored_parts(old, new)
        if restored.statements:
            shown = "; ".join(restored.statements[:4])
            more = len(restored.statements) - 4
            self.emit(
                Notice(
                    stage=self.stage,
                    text=f"the reply left {len(restored.statements)} part(s) out of {name} "
                    f"that its code still needs; labtui put them back from the file as it was: "
                    f"{shown}{f' and {more} more' if more > 0 else ''}",
                )
            )
        return restored.text

    def _changed(self, before: dict[Path, str | None], event_io: Any) -> list[Path]:
        """Files whose bytes differ from before the edit (targets, and anything aider touched)."""
        baseline = {**event_io.first_seen, **before}
        return [path for path, digest in baseline.items() if file_sha(path) != digest]

    def _finish(
        self,
        targets: list[Path],
        changed: list[Path],
        reply: str,
        problem: str,
        commit_message: str,
        attempts: int,
        refusals: list[str] | None = None,
    ) -> EditResult:
        if not changed:
            error = (
                f"aider did not change {self._names(targets)} after {attempts} "
                f"attempt{'s' if attempts != 1 else ''}: {problem.strip() or 'no edit was applied'}"
            )
            earlier = [r for r in refusals or [] if r not in problem]
            if earlier:  # the last attempt's own refusals are in ``problem`` already
                error += "\nlabtui refused earlier replies: it " + "; it ".join(earlier)
            self.emit(Notice(stage=self.stage, text=error.splitlines()[0]))
            return EditResult(
                changed=False,
                files=[],
                commit=None,
                reply=reply,
                error=error,
                refusals=list(refusals or []),
            )
        files = sorted(self._rel(p) for p in changed)
        commit = self.project.commit(commit_message, paths=files)
        if commit is not None:
            self.emit(CodeDiff.from_commit(self.stage, commit))
        return EditResult(
            changed=True,
            files=files,
            commit=commit,
            reply=reply,
            error=problem,
            target_changed=any(p in targets for p in changed),
            refusals=list(refusals or []),
        )

    def _rel(self, path: Path) -> str:
        return path.resolve().relative_to(self.project.root).as_posix()

    def _names(self, paths: list[Path]) -> str:
        return ", ".join(self._rel(p) for p in paths)
