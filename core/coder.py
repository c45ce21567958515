"""The aider bridge: one aider chat per edit, its IO routed into events, each real edit a commit.

aider is driven through its scripting API (``Coder.create(...).run(prompt)``) with an
``InputOutput`` subclass (:class:`EventIO`) that turns everything aider says into events and
answers every question itself, so aider never reads the terminal. labtui, not aider, owns git:
aider runs with ``use_git=False`` and :class:`Coder` commits the files that really changed.

aider reports a malformed or non-matching edit only on its output and leaves the file as it was
(The AI Scientist then ran the unchanged experiment: its issue #106). So :meth:`Coder.edit` hashes
the files before and after, asks again once with aider's complaint quoted when nothing changed,
and says plainly when the edit still did not land.

Importing aider takes seconds and litellm more, so both are imported inside functions only; this
module itself is cheap to import (``labtui --help`` must stay fast).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .checkpoints import ResearcherNotes
from .config import ModelSpec
from .edit_guard import (
    EditPolicy,
    Problem,
    check_edit,
    new_file_problem,
    other_file_problem,
    placeholder_name,
)
from .errors import ConfigError, LabtuiError, LLMError
from .events import AgentChunk, AgentMessage, CodeDiff, Event, Notice, Refused
from .project import CommitInfo, Project
from .streaming import (
    InactivityTimeout,
    Limits,
    abandons_request,
    consume_stream,
    note_abandoned,
    wait_for_abandoned,
)

if TYPE_CHECKING:
    from .llm import Ledger

AIDER_STATE = "aider"  # under <project>/.labtui/: aider's chat log and input history
PROTECTED_DIRS = (".git", ".labtui")  # aider may never write here, even inside the project
NO_KEY_PLACEHOLDER = "sk-no-key"  # the OpenAI client insists on a key even for local servers
MAX_QUOTE_CHARS = 2000  # how much of aider's complaint a retry prompt quotes
NEW_FILE_NAME = re.compile(r"[\w.\-]+(?:/[\w.\-]+)*")  # no spaces, quotes, or prose

# Questions aider asks about files. Everything else (shell commands, URLs, adding command output,
# lint/test fixes) is refused: labtui runs experiments itself, in its own sandbox.
FILE_EDIT_QUESTIONS = (
    "Create new file?",
    "Allow edits to file that has not been added to the chat?",
)
ALWAYS_YES_QUESTIONS = (
    # The architect format asks before handing its plan to the editor model.
    "Edit the files?",
    # aider's own token estimate is rough for unknown models; the server will say if it is too much.
    "Try to proceed anyway?",
)

# The edit format once more, in plain words, for the retry prompt ({open}/{close}: aider's fence).
FORMAT_REMINDERS = {
    "whole": (
        "For each file you change, write the file's path alone on one line, then a line "
        "{open}, then the complete new content of the file, then a line {close}. Do not leave "
        "anything out."
    ),
    "diff": (
        "Use *SEARCH/REPLACE* blocks: the file's path alone on one line, then {open}, "
        "<<<<<<< SEARCH, lines copied exactly from the current file, =======, the new lines, "
        ">>>>>>> REPLACE, {close}."
    ),
    "diff-fenced": (
        "Use *SEARCH/REPLACE* blocks inside {open} ... {close}: the file's path on the first line "
        "inside the fence, then <<<<<<< SEARCH, lines copied exactly from the current file, "
        "=======, the new lines, >>>>>>> REPLACE."
    ),
    "udiff": "Use a unified diff (--- path / +++ path / @@ ... @@ hunks) for each change.",
}


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


_FENCE = re.compile(r"^(`{3,}|~{3,})")


def explanation_of(reply: str) -> str:
    """Strip every fenced block (aider's whole, diff and udiff edits are all fenced) and the file
    name line aider puts above it; the code itself lives in the commit."""
    kept: list[str] = []
    closing = ""
    for line in reply.splitlines():
        fence = _FENCE.match(line.strip())
        if closing:
            if fence and line.strip() == closing:
                closing = ""
            continue
        if fence:
            closing = fence.group(1)
            if kept and _looks_like_path(kept[-1]):
                kept.pop()
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def _looks_like_path(line: str) -> bool:
    text = line.strip()
    return bool(text) and " " not in text and ("." in text or "/" in text)


# -- aider's IO, routed into events ----------------------------------------------------------


class _Discard(io.TextIOBase):
    """A file that swallows writes: aider's rich console must never print to our terminal."""

    def write(self, text: str) -> int:
        return len(text)


class _NoAnalytics:
    """Stands in for aider's Analytics, which would write ~/.aider/analytics.json."""

    def event(self, *args: Any, **kwargs: Any) -> None:
        pass


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` resolves to a location inside ``root`` (symlinks followed)."""
    try:
        Path(path).resolve().relative_to(root)
    except ValueError:
        return False
    return True


def may_write(path: Path, root: Path, read_only: frozenset[Path] = frozenset()) -> bool:
    """Whether aider may write ``path``: inside the project, not git/labtui state, not read-only."""
    resolved = Path(path).resolve()
    if not inside(resolved, root):
        return False
    first = resolved.relative_to(root).parts[:1]
    if first and first[0] in PROTECTED_DIRS:
        return False
    return resolved not in read_only


def plausible_new_file(name: str) -> bool:
    """Whether a name aider wants to create looks like a file path and not a line of prose.

    In the ``whole`` format aider takes the line above any fenced block as its file name, so a
    reply saying "Then run:" above a shell block would otherwise create a file called "Then run".
    """
    return bool(NEW_FILE_NAME.fullmatch(name)) and "." in PurePosixPath(name).name.strip(".")


def confirm_policy(
    question: str,
    subject: str | None,
    root: Path,
    allowed: Callable[[Path], bool],
    policy: EditPolicy | None = None,
    editing: list[str] | None = None,
) -> bool:
    """labtui's answer to one of aider's yes/no questions.

    ``subject`` is the path aider asks about, relative to ``root``; ``allowed`` says whether
    labtui lets aider write a path at all; ``policy`` what the step may create or also edit
    (default: nothing) besides the files it edits (``editing``).
    """
    return file_question_verdict(question, subject, root, allowed, policy, editing)[0]


def file_question_verdict(
    question: str,
    subject: str | None,
    root: Path,
    allowed: Callable[[Path], bool],
    policy: EditPolicy | None = None,
    editing: list[str] | None = None,
) -> tuple[bool, Problem | None]:
    """The answer to aider's question, and the problem when the answer refuses the whole reply.

    A no with a problem refuses every edit of the reply (a placeholder name, a file the step may
    not create or edit, a place labtui never lets aider write). A no without one only skips a
    block: a line of prose that aider's ``whole`` format took for a file name.
    """
    question = question.strip()
    if question not in FILE_EDIT_QUESTIONS:
        return question in ALWAYS_YES_QUESTIONS, None
    if not subject:
        return False, None
    name = str(subject).strip()
    creating = question == "Create new file?"
    if creating and placeholder_name(name):
        return False, new_file_problem(name, EditPolicy(), editing or [])
    if creating and not plausible_new_file(name):
        return False, None
    path = root / name
    if not allowed(path):
        return False, Problem(name, "place", f"would write {name}, {_forbidden_place(path, root)}")
    rel = path.resolve().relative_to(root.resolve()).as_posix()
    policy = policy or EditPolicy()
    if creating:
        problem = new_file_problem(rel, policy, editing or [])
        return problem is None, problem
    if policy.may_also_edit(rel):
        return True, None
    return False, other_file_problem(rel, editing or [])


def _forbidden_place(path: Path, root: Path) -> str:
    """Why labtui never lets aider write ``path`` (for the refusal's sentence)."""
    if not inside(path, root.resolve()):
        return "outside the project"
    first = Path(path).resolve().relative_to(root.resolve()).parts[:1]
    if first and first[0] in PROTECTED_DIRS:
        return f"inside the project's {first[0]} state"
    return "a read-only or git-ignored file"


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


_EVENT_IO: type | None = None


def _event_io_class() -> type:
    """Build EventIO on first use: subclassing aider's InputOutput needs aider imported."""
    global _EVENT_IO
    if _EVENT_IO is not None:
        return _EVENT_IO

    from aider.io import InputOutput
    from rich.console import Console

    class EventIO(InputOutput):
        """aider's InputOutput that emits events and answers every question itself.

        ``errors`` collects aider's tool errors and ``refused`` the edits labtui declined, so the
        caller can explain a failed edit; ``problems`` the declines that refuse the whole reply;
        ``first_seen`` keeps the hash of every file aider was allowed to touch outside its chat
        files, taken before aider wrote it.

        aider's writes are staged, not written: ``pending`` holds each file's new text (and
        reading a file returns it, so several diff blocks on one file build on each other) until
        the caller has checked the reply and calls :meth:`flush` (write all) or :meth:`discard`
        (write none, and remove the empty files aider created for new names).
        """

        def __init__(
            self,
            *,
            emit: Callable[[Event], None],
            stage: str,
            root: Path,
            state_dir: Path,
            allowed: Callable[[Path], bool],
            policy: EditPolicy | None = None,
            editing: list[str] | None = None,
        ) -> None:
            # Set before super().__init__: aider's constructor may already call tool_output.
            self._emit = emit
            self._stage = stage
            self._root = Path(root).resolve()
            self._allowed = allowed
            self.policy = policy or EditPolicy()
            self.editing = list(editing or [])
            self.errors: list[str] = []
            self.refused: list[str] = []
            self.problems: list[Problem] = []
            self.first_seen: dict[Path, str | None] = {}
            self.pending: dict[Path, str] = {}
            self.created: list[Path] = []  # new files (and their new folders) of this turn
            state_dir.mkdir(parents=True, exist_ok=True)
            super().__init__(
                pretty=False,
                yes=True,
                fancy_input=False,
                chat_history_file=state_dir / "chat.md",
                input_history_file=str(state_dir / "input.history"),
                root=str(self._root),
                notifications=False,
            )
            self.console = Console(file=_Discard(), force_terminal=False, no_color=True)

        # -- output -> events ---------------------------------------------------------------

        def _say(self, role: str, text: str) -> None:
            text = str(text).strip()
            if text:
                self._emit(AgentMessage(stage=self._stage, role=role, text=text))

        def tool_output(self, *messages: Any, log_only: bool = False, bold: bool = False) -> None:
            text = " ".join(str(m) for m in messages)
            if text.strip():
                self.append_chat_history(text.strip(), linebreak=True, blockquote=True)
            if not log_only:
                self._say("aider-tool", text)

        def tool_warning(self, message: Any = "", strip: bool = True) -> None:
            text = str(message)
            # labtui retries itself (max_reflections = 0), and reports failed calls as LLMError
            # with a hint: aider's note on reflections and its raw tracebacks are noise.
            if text.strip().startswith(("Only 0 reflections allowed", "Traceback (most recent")):
                return
            if text.strip():
                self.append_chat_history(text.strip(), linebreak=True, blockquote=True)
            self._say("aider-tool", f"warning: {text.strip()}" if text.strip() else "")

        def tool_error(self, message: Any = "", strip: bool = True) -> None:
            self.num_error_outputs += 1
            text = str(message).strip()
            if text:
                self.errors.append(text)
                self.append_chat_history(text, linebreak=True, blockquote=True)
                self._say("aider-tool", f"error: {text}")

        def ai_output(self, content: str) -> None:
            # The model's raw reply; assistant_output below only re-renders it (as a diff).
            super().ai_output(content)
            self._say("aider", content)

        def assistant_output(self, message: Any, pretty: bool | None = None) -> None:
            if not message:
                self.tool_warning("the model returned an empty reply")

        def print(self, message: Any = "") -> None:
            self._say("aider-tool", str(message))

        def rule(self) -> None:
            pass

        # -- input: never the terminal ------------------------------------------------------

        def get_input(self, *args: Any, **kwargs: Any) -> str:
            # Only aider's interactive loop asks for input; labtui always runs with a message.
            # EOFError is aider's own "no more input" signal and ends that loop cleanly.
            raise EOFError

        def prompt_ask(self, question: str, default: str = "", subject: Any = None) -> str:
            self._say("aider-tool", f"{question.strip()} -> {default!r} (answered by labtui)")
            return default

        def confirm_ask(
            self,
            question: str,
            default: str = "y",
            subject: Any = None,
            explicit_yes_required: bool = False,
            group: Any = None,
            allow_never: bool = False,
        ) -> bool:
            self.num_user_asks += 1
            answer, problem = file_question_verdict(
                question, subject, self._root, self._allowed, self.policy, self.editing
            )
            if question.strip() in FILE_EDIT_QUESTIONS and subject:
                path = (self._root / str(subject)).resolve()
                if answer:
                    self.first_seen.setdefault(path, _sha(path))
                    if question.strip() == "Create new file?":
                        self._note_creation(path)
                else:
                    self.refused.append(str(subject))
                if problem is not None:
                    self.problems.append(problem)
            shown = f"{question.strip()} {subject or ''}".strip()
            self._say("aider-tool", f"{shown} -> {'yes' if answer else 'no'} (answered by labtui)")
            return answer

        def offer_url(self, url: str, prompt: str = "", allow_never: bool = True) -> bool:
            return False

        # -- the last line of defence for the file system ------------------------------------

        def write_text(
            self, filename: Any, content: str, max_retries: int = 5, initial_delay: float = 0.1
        ) -> None:
            path = Path(filename)
            if not path.is_absolute():
                path = self._root / path
            if not self._allowed(path):
                self.refused.append(str(filename))
                raise PermissionError(f"labtui does not let aider write {filename}")
            self.pending[path.resolve()] = content  # written by flush(), once checked

        def read_text(self, filename: Any, silent: bool = False) -> Any:
            staged = self.pending.get((self._root / filename).resolve()) if self.pending else None
            return staged if staged is not None else super().read_text(filename, silent)

        # -- staging: a reply is written whole or not at all ---------------------------------

        def use_policy(self, policy: EditPolicy, editing: list[str]) -> None:
            self.policy, self.editing = policy, list(editing)

        def begin_turn(self) -> None:
            self.errors.clear()
            self.refused.clear()
            self.problems.clear()
            self.pending.clear()
            self.created.clear()

        def on_disk(self, path: Path) -> str | None:
            """A file's text as it is on disk (None for a file aider created this turn)."""
            if path in self.created:
                return None
            return super().read_text(path, silent=True)

        def flush(self) -> list[Path]:
            """Write every staged file; remove new files that got no content. Returns those
            written."""
            written = []
            for path, content in self.pending.items():
                self.first_seen.setdefault(path, _sha(path))
                super().write_text(str(path), content)
                written.append(path)
            self._remove_created(keep=set(self.pending))
            self.pending.clear()
            return written

        def discard(self) -> list[Path]:
            """Forget every staged write and remove what aider created for it. Returns the
            removed paths."""
            self.pending.clear()
            return self._remove_created(keep=set())

        def _note_creation(self, path: Path) -> None:
            """aider's allowed_to_edit creates a new file (and its folders) right after a yes."""
            for new in (path, *path.parents):
                if new == self._root or new.exists() or not inside(new, self._root):
                    break
                self.created.append(new)

        def _remove_created(self, keep: set[Path]) -> list[Path]:
            removed = []
            for path in self.created:  # the file first, then its folders, deepest first
                if path in keep or any(k.is_relative_to(path) for k in keep):
                    continue
                try:
                    if path.is_dir():
                        path.rmdir()  # only an empty folder: anything else was not ours
                    elif path.is_file() and path.stat().st_size == 0:
                        path.unlink()
                    else:
                        continue
                except OSError:
                    continue
                removed.append(path)
            self.created.clear()
            return removed

    _EVENT_IO = EventIO
    return EventIO


def __getattr__(name: str) -> Any:
    # ``from labtui.core.coder import EventIO`` works, yet importing this module stays cheap.
    if name == "EventIO":
        return _event_io_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- model setup -------------------------------------------------------------------------------


def _prepare_litellm(spec: ModelSpec) -> None:
    """Offline-safe litellm: local price map, our model registered (core/llm.py does the work)."""
    # Belt and braces: litellm fetches its price map over the network unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from . import llm

    llm.prepare_litellm()
    llm.register_model(spec)


def _model_metadata(spec: ModelSpec) -> dict[str, Any]:
    """aider's metadata for ``spec``: litellm's entry (core/llm.py registers unknown models with
    labtui.toml's prices first), else a minimal chat entry.

    aider looks every model up in its own metadata first and otherwise downloads litellm's price
    list (5 s timeout) on each Model(...); registering the entry keeps it offline and quiet.
    """
    import litellm

    try:
        info = {k: v for k, v in dict(litellm.get_model_info(spec.name)).items() if v is not None}
    except Exception:
        info = {}
    provider = spec.name.split("/", 1)[0] if "/" in spec.name else "openai"
    info.setdefault("litellm_provider", provider)
    info.setdefault("mode", "chat")
    return info


def _register_with_aider(spec: ModelSpec, state_dir: Path) -> None:
    from aider.models import register_litellm_models

    path = state_dir / "model-metadata.json"
    path.write_text(json.dumps({spec.name: _model_metadata(spec)}, default=str), encoding="utf-8")
    register_litellm_models([str(path)])


def valid_edit_formats() -> list[str]:
    from aider import coders

    return sorted({str(c.edit_format) for c in coders.__all__ if getattr(c, "edit_format", None)})


def choose_edit_format(explicit: str, aider_choice: str | None) -> str:
    """The configured format; else aider's choice for the model (``whole`` for models it does
    not know: small local models fail ``diff`` but manage ``whole``)."""
    if explicit:
        formats = valid_edit_formats()
        if explicit not in formats:
            raise ConfigError(
                f"unknown aider edit format {explicit!r}",
                f"set [models] edit_format to one of: {', '.join(formats)} (or leave it empty)",
            )
        return explicit
    return aider_choice or "whole"


def _make_model(spec: ModelSpec, max_tokens: int, limits: Limits) -> Any:
    from aider.models import Model

    # The same name for weak and editor models: aider would otherwise build (and look up over
    # the network) a second model for commit messages we never let it write.
    model = Model(spec.name, weak_model=spec.name, editor_model=spec.name)
    params: dict[str, Any] = dict(model.extra_params or {})
    params["max_tokens"] = max_tokens  # a looping small model otherwise runs to its context end
    # Every call streams (_stream_completions); the HTTP timeout is only the watchdog's backstop.
    params["timeout"] = limits.http_timeout_s
    params["stream_options"] = {"include_usage": True}  # the usage aider bills, in the last chunk
    params["num_retries"] = 0  # aider retries (and labtui stops it): no third layer in litellm
    if spec.api_base:
        params["api_base"] = spec.api_base
        params["api_key"] = spec.api_key or NO_KEY_PLACEHOLDER
    elif spec.api_key:
        params["api_key"] = spec.api_key
    model.extra_params = params  # aider passes these straight to litellm.completion
    return model


def _fence_from_editable_files(aider_coder: Any) -> None:
    """Pick aider's code fence from the files being edited, ignoring read-only context.

    aider avoids any fence that occurs in *any* file of the chat, so one ``` in read-only notes
    switches every reply to ```` — and models, small ones above all, answer with ``` anyway
    (aider's own note on its fences: issue #2879), which aider then cannot parse. A read-only file
    shown in a ``` fence it contains only blurs its display; the edit format stays parseable.
    """

    def choose_fence() -> None:
        lines = [
            line
            for _name, content in aider_coder.get_abs_fnames_content()
            for line in content.splitlines()
        ]
        for fence in aider_coder.fences:
            if not any(line.startswith(fence) for line in lines):
                aider_coder.fence = fence
                return
        aider_coder.fence = aider_coder.fences[0]

    aider_coder.choose_fence = choose_fence  # aider calls it before every message


def _price(spec: ModelSpec, tokens_in: int, tokens_out: int) -> float:
    import litellm

    try:
        cost_in, cost_out = litellm.cost_per_token(
            model=spec.name, prompt_tokens=tokens_in, completion_tokens=tokens_out
        )
        return float(cost_in) + float(cost_out)
    except Exception:
        return (tokens_in * spec.input_usd_per_mtok + tokens_out * spec.output_usd_per_mtok) / 1e6


def _stream_completions(
    model: Any, spec: ModelSpec, limits: Limits, emit: Callable[[Event], None], stage: str
) -> list[tuple[float, float]]:
    """Make every completion aider asks for a streamed one, read under labtui's inactivity limits.

    aider itself runs unstreamed (its streaming writes raw chunks to stdout, which would tear
    the TUI), and an unstreamed call can only have a total timeout, which cuts off a slow local
    model that is still writing. So the model's ``send_completion`` asks litellm for a stream,
    reads it with core/streaming.py, shows each piece as an AgentChunk (role "aider") and hands
    aider a non-streamed response rebuilt from the chunks: aider's own code path, and the usage
    it bills, stay the non-streaming ones.

    A call that goes quiet too long is given up: the Notice says which limit, and aider gets a
    litellm Timeout, which it retries; that retry (like any next call) first waits until a local
    server has finished the abandoned request. Returns the list that the timing
    ``(first_token_s, seconds)`` of each completed call is appended to.
    """
    import litellm

    timings: list[tuple[float, float]] = []
    send_completion = model.send_completion

    def notice(text: str) -> None:
        emit(Notice(stage=stage, text=text))

    def show(piece: str) -> None:
        emit(AgentChunk(stage=stage, role="aider", text=piece))

    def streamed(
        messages: list[dict[str, Any]], functions: Any, stream: bool, temperature: Any = None
    ) -> tuple[Any, Any]:
        wait_for_abandoned(spec.api_base, limits, notice, spec.api_key)
        sent: list[Any] = []

        def open_stream() -> Any:
            hash_object, response = send_completion(messages, functions, True, temperature)
            sent.append(hash_object)
            return response

        try:
            result = consume_stream(open_stream, limits, show, what=spec.name)
        except Exception as exc:
            if spec.api_base and abandons_request(exc):
                note_abandoned(spec.api_base)
            if not isinstance(exc, InactivityTimeout):
                raise
            notice(str(exc))
            # Exactly litellm.Timeout: aider looks its retry rule up by the exception's class.
            raise litellm.Timeout(
                message=exc.reason, model=spec.name, llm_provider=_provider_name(spec)
            ) from exc
        timings.append((result.first_token_s, result.seconds))
        response = litellm.stream_chunk_builder(result.chunks, messages=messages)
        return sent[0], response if response is not None else _empty_response(spec)

    model.send_completion = streamed
    return timings


def _provider_name(spec: ModelSpec) -> str:
    return spec.name.split("/", 1)[0] if "/" in spec.name else "openai"


def _empty_response(spec: ModelSpec) -> Any:
    """What a stream without a single chunk amounts to: an empty reply, which aider reports."""
    import litellm

    return litellm.ModelResponse(
        model=spec.name,
        choices=[
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ""}}
        ],
    )


class _GaveUp(Exception):
    """Ends aider's retry loop: a plain exception, which aider reports and does not retry."""


def _record_failures(model: Any, retries: int) -> list[BaseException]:
    """Wrap the model's completion call so the exceptions aider swallows reach us.

    aider retries transient errors itself for about a minute (a dead local server included);
    after labtui's own ``[llm] retries`` failures in one turn it is stopped instead.
    """
    failures: list[BaseException] = []
    send_completion = model.send_completion

    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            return send_completion(*args, **kwargs)
        except Exception as exc:
            failures.append(exc)
            if len(failures) > retries:
                raise _GaveUp(f"gave up after {len(failures)} failed calls: {exc}") from exc
            raise

    model.send_completion = watched
    return failures


def _infrastructure_error(exc: BaseException, spec: ModelSpec) -> LLMError:
    """An LLMError saying what a failed model call means and what to change (key masked)."""
    name = type(exc).__name__
    where = f" at {spec.api_base}" if spec.api_base else ""
    if isinstance(exc.__cause__, InactivityTimeout):  # given up by _stream_completions
        quiet = exc.__cause__
        return LLMError(f"{quiet.reason}{where}", f"{quiet.hint}, or check that it is up")
    text = str(exc).strip()
    detail = (text.splitlines()[0] if text else name)[:400]
    if spec.api_key:
        detail = detail.replace(spec.api_key, "***")
    if name in ("AuthenticationError", "PermissionDeniedError"):
        return LLMError(
            f"{spec.name}{where} rejected the API key: {detail}",
            f"put a valid key in ${spec.api_key_env} (the variable named by [models] api_key_env)",
        )
    if name == "NotFoundError":
        return LLMError(
            f"{spec.name}{where} does not serve this model: {detail}",
            "check the model name in labtui.toml [models] (local servers: openai/<served name>)",
        )
    if name == "ContextWindowExceededError":
        return LLMError(
            f"the files and prompt do not fit the context of {spec.name}: {detail}",
            "edit fewer or smaller files, or use a model with a larger context window",
        )
    if name == "APIConnectionError":
        return LLMError(
            f"could not reach {spec.name}{where}: {detail}",
            "check that the server is running and that [models] api_base is right",
        )
    return LLMError(
        f"{spec.name}{where} failed ({name}): {detail}",
        "check labtui.toml [models] and the provider's status, then resume the run",
    )


# -- the bridge --------------------------------------------------------------------------------


@contextmanager
def _text_streams() -> Iterator[None]:
    """Give aider real text streams while it is imported and runs.

    aider reads ``sys.stdout.encoding`` (one module at import time) and writes to stdout on a few
    paths. A front end that captures stdout (Textual replaces it with an object that has no
    encoding) would crash it; and nothing aider prints may reach the terminal anyway, because
    everything meant for the researcher already arrives as events. So: a sink that goes nowhere.
    """
    streams = (sys.stdout, sys.stderr)
    if all(getattr(stream, "encoding", None) for stream in streams):
        yield
        return
    sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace")
    with redirect_stdout(sink), redirect_stderr(sink):
        yield


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
        before = {path: _sha(path) for path in targets}
        with _text_streams():
            event_io, aider_coder, failures = self._start(targets, readonly)
            event_io.use_policy(policy, [self._rel(p) for p in targets])
            message, reply, problem, changed = prompt, "", "", []
            refused: list[Problem] = []  # why the last attempt's reply was refused
            refusals: list[str] = []  # every attempt's
            for attempt in range(retries + 1):
                if attempt:
                    self.ledger.check()
                    message = self._retry_prompt(targets, aider_coder, problem, refused, policy)
                event_io.begin_turn()
                failures.clear()
                aider_coder.reflected_message = None
                try:
                    reply = self._run(aider_coder, message)
                    if failures and not reply.strip():
                        raise _infrastructure_error(failures[-1], self.spec)
                except BaseException:
                    event_io.discard()  # nothing of an interrupted turn reaches the tree
                    raise
                refused = self._judge(event_io, aider_coder, policy)
                refusals += [p.reason for p in refused]
                changed = self._changed(before, event_io)
                problem = self._problem(
                    aider_coder, event_io, reply, targets, bool(changed), refused
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
        """What aider may write: project files outside git/labtui state, not read-only, and not
        git-ignored (an ignored file could not be committed, so the edit would be lost)."""
        root, protected = self.project.root, frozenset(readonly)

        def writable(path: Path) -> bool:
            return may_write(path, root, protected) and not self._ignored(path)

        return writable

    def _start(self, targets: list[Path], readonly: list[Path]) -> tuple[Any, Any, list]:
        """A fresh aider chat on the targets, with labtui's IO and no git, shell or web."""
        state_dir = self.project.state_dir / AIDER_STATE
        state_dir.mkdir(parents=True, exist_ok=True)
        _prepare_litellm(self.spec)
        _register_with_aider(self.spec, state_dir)
        limits = Limits.of(self.project.config.llm)
        model = _make_model(self.spec, self.max_tokens, limits)
        self._timings = _stream_completions(model, self.spec, limits, self.emit, self.stage)
        edit_format = choose_edit_format(self.edit_format, model.edit_format)
        event_io = _event_io_class()(
            emit=self.emit,
            stage=self.stage,
            root=self.project.root,
            state_dir=state_dir,
            allowed=self._writable_predicate(readonly),
        )
        from aider.coders import Coder as AiderCoder

        aider_coder = AiderCoder.create(
            main_model=model,
            edit_format=edit_format,
            io=event_io,
            fnames=[str(p) for p in targets],
            read_only_fnames=[str(p) for p in readonly],
            use_git=False,  # labtui commits; aider must never touch the repository
            auto_commits=False,
            dirty_commits=False,
            # Streaming without aider's "pretty" console writes raw chunks to sys.stdout, which
            # would tear the TUI: aider runs unstreamed, and _stream_completions streams below
            # it (AgentChunk events as the reply comes, then the whole AgentMessage).
            stream=False,
            map_tokens=0,  # no repo map: the caller chooses exactly which files aider sees
            auto_lint=False,
            auto_test=False,
            suggest_shell_commands=False,
            detect_urls=False,
            analytics=_NoAnalytics(),
        )
        # Without git aider roots the chat at the files' common folder; the model must name
        # files relative to the project (experiment.py, latex/template.tex) instead.
        aider_coder.root = str(self.project.root)
        aider_coder.abs_root_path_cache = {}
        # labtui's own retry (with aider's complaint quoted) replaces aider's reflections, so
        # every model call is one that edit() counts and bills.
        aider_coder.max_reflections = 0
        # Nor may aider summarise the chat in a thread of its own: an unbilled, uncounted call
        # that costs minutes on a slow local model, for a chat that lives one edit.
        aider_coder.summarize_start = lambda: None
        _fence_from_editable_files(aider_coder)
        return event_io, aider_coder, _record_failures(model, self.project.config.llm.retries)

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
        # same rule as core/llm.py: litellm's price, or labtui.toml's for models litellm lacks.
        cost = aider_cost if aider_cost > 0 else _price(self.spec, tokens_in, tokens_out)
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
        for path, new in event_io.pending.items():
            old = event_io.on_disk(path)
            if old == new:
                continue
            name = self._rel(path)
            problems += check_edit(name, old, new, policy.contract(name, old))
        return problems

    def _changed(self, before: dict[Path, str | None], event_io: Any) -> list[Path]:
        """Files whose bytes differ from before the edit (targets, and anything aider touched)."""
        baseline = {**event_io.first_seen, **before}
        return [path for path, digest in baseline.items() if _sha(path) != digest]

    def _problem(
        self,
        aider_coder: Any,
        event_io: Any,
        reply: str,
        targets: list[Path],
        changed: bool,
        refused: list[Problem] | None = None,
    ) -> str:
        """Why this attempt did not (fully) apply: a sentence first, aider's details after.

        '' when everything applied.
        """
        if refused:
            reasons = "; ".join(f"it {p.reason}" for p in refused)
            return f"labtui refused the reply, so no file was changed: {reasons}"
        complaint = (aider_coder.reflected_message or "").strip()
        refused = sorted(set(event_io.refused))
        parts = []
        if complaint:
            headline = complaint.splitlines()[0].lstrip("# ").strip()
            verb = "applied only part of the edit" if changed else "could not apply the edit"
            parts.append(f"aider {verb} ({headline}):\n{complaint}")
        if refused:
            parts.append(f"labtui refused edits outside the editable files: {', '.join(refused)}")
        if changed:
            return "\n".join(parts)
        if not reply.strip():
            parts.append("the model returned an empty reply")
        elif aider_coder.aider_edited_files and not complaint:
            parts.append("the model's edit left the file content exactly as it was")
        elif not complaint and not refused:
            names = ", ".join(self._rel(p) for p in targets)
            parts.append(
                f"the reply contained no edit of {names} in aider's {aider_coder.edit_format!r} format"
            )
        if not complaint:  # aider's complaint already says what its generic errors would
            parts += event_io.errors
        return "\n".join(parts)

    def _retry_prompt(
        self,
        targets: list[Path],
        aider_coder: Any,
        problem: str,
        refused: list[Problem] | None = None,
        policy: EditPolicy | None = None,
    ) -> str:
        names = ", ".join(self._rel(p) for p in targets)
        quoted = problem[:MAX_QUOTE_CHARS] + ("\n[...]" if len(problem) > MAX_QUOTE_CHARS else "")
        reminder = FORMAT_REMINDERS.get(
            aider_coder.edit_format, "Use exactly the edit format the system prompt describes."
        ).format(open=aider_coder.fence[0], close=aider_coder.fence[1])
        if refused:
            return self._refusal_prompt(targets, refused, policy or EditPolicy(), reminder)
        return (
            f"Your previous reply did not change {names}. What went wrong:\n\n{quoted}\n\n"
            f"Please make the requested change now and return the complete edit in the required "
            f"format. {reminder}"
        )

    def _refusal_prompt(
        self, targets: list[Path], refused: list[Problem], policy: EditPolicy, reminder: str
    ) -> str:
        """The retry after a refused reply: each problem with its numbers, then what to do."""
        names = ", ".join(self._rel(p) for p in targets)
        kinds = {p.kind for p in refused}
        lines = [f"labtui refused your previous reply, so {names} is unchanged:"]
        lines += [f"- Your reply {p.reason}." for p in refused]
        lines.append("")
        if kinds & {"shrink", "elision"}:
            lines.append(
                f"Return the COMPLETE content of {names}: every line of the current file, changed "
                "only where the request asks. Never leave code out, and never stand in for it "
                'with "..." or comments such as "rest of the code" or "unchanged".'
            )
        if kinds & {"syntax", "contract"}:
            lines.append(
                "Keep the file working: it must stay valid and keep everything the list above "
                "says your reply would drop."
            )
        if kinds & {"placeholder", "new-file", "other-file", "place"}:
            may_create = (
                f"New files may only match: {', '.join(policy.create)}."
                if policy.create
                else "Create no other file."
            )
            lines.append(
                f"Edit only {names}, named exactly so. {may_create} Do not copy the file names "
                "of the format example (such as path/to/filename.js or show_greeting.py)."
            )
        lines.append(f"Please make the requested change now in the required format. {reminder}")
        return "\n".join(lines)

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
            names = ", ".join(self._rel(p) for p in targets)
            error = (
                f"aider did not change {names} after {attempts} "
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


def aider_prompt_texts() -> list[str]:
    """Every instruction and example aider itself sends (all edit formats): a small model copies
    them back as its explanation, and the notebook must keep only the model's own words."""
    import importlib
    import pkgutil

    import aider.coders

    texts: list[str] = []
    for module_info in pkgutil.iter_modules(aider.coders.__path__):
        if not module_info.name.endswith("_prompts"):
            continue
        module = importlib.import_module(f"aider.coders.{module_info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and value.__name__.endswith("Prompts"):
                texts += _strings_of(vars(value))
    return texts


def _strings_of(namespace: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for value in namespace.values():
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found += [m["content"] for m in value if isinstance(m, dict) and "content" in m]
    return found
