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
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .checkpoints import ResearcherNotes
from .config import ModelSpec
from .errors import ConfigError, LabtuiError, LLMError
from .events import AgentMessage, CodeDiff, Event, Notice
from .project import CommitInfo, Project

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
    question: str, subject: str | None, root: Path, allowed: Callable[[Path], bool]
) -> bool:
    """labtui's answer to one of aider's yes/no questions.

    ``subject`` is the path aider asks about, relative to ``root``; ``allowed`` says whether
    labtui lets aider write a path at all.
    """
    question = question.strip()
    if question in FILE_EDIT_QUESTIONS:
        if not subject or not allowed(root / str(subject)):
            return False
        return question != "Create new file?" or plausible_new_file(str(subject))
    return question in ALWAYS_YES_QUESTIONS


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
        caller can explain a failed edit; ``first_seen`` keeps the hash of every file aider was
        allowed to touch outside its chat files, taken before aider wrote it.
        """

        def __init__(
            self,
            *,
            emit: Callable[[Event], None],
            stage: str,
            root: Path,
            state_dir: Path,
            allowed: Callable[[Path], bool],
        ) -> None:
            # Set before super().__init__: aider's constructor may already call tool_output.
            self._emit = emit
            self._stage = stage
            self._root = Path(root).resolve()
            self._allowed = allowed
            self.errors: list[str] = []
            self.refused: list[str] = []
            self.first_seen: dict[Path, str | None] = {}
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
            answer = confirm_policy(question, subject, self._root, self._allowed)
            if question.strip() in FILE_EDIT_QUESTIONS and subject:
                path = (self._root / str(subject)).resolve()
                if answer:
                    self.first_seen.setdefault(path, _sha(path))
                else:
                    self.refused.append(str(subject))
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
            self.first_seen.setdefault(path.resolve(), _sha(path))
            super().write_text(str(path), content, max_retries, initial_delay)

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


def _make_model(spec: ModelSpec, max_tokens: int, timeout_s: float) -> Any:
    from aider.models import Model

    # The same name for weak and editor models: aider would otherwise build (and look up over
    # the network) a second model for commit messages we never let it write.
    model = Model(spec.name, weak_model=spec.name, editor_model=spec.name)
    params: dict[str, Any] = dict(model.extra_params or {})
    params["max_tokens"] = max_tokens  # a looping small model otherwise runs to its context end
    params["timeout"] = timeout_s
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

    # -- public --------------------------------------------------------------------------------

    def edit(
        self,
        files: list[str],
        prompt: str,
        *,
        commit_message: str,
        read_only: list[str] | None = None,
        retries: int = 1,
    ) -> EditResult:
        """Ask aider to edit ``files``; verify, commit and report what really changed.

        Raises LLMError only when the model cannot be reached or used at all (key, name, server)
        and BudgetExceeded when the budget is spent; a model that fails to edit is an EditResult
        with ``changed=False`` and ``error`` saying why.
        """
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
            message, reply, problem, changed = prompt, "", "", []
            for attempt in range(retries + 1):
                if attempt:
                    self.ledger.check()
                    message = self._retry_prompt(targets, aider_coder, problem)
                event_io.errors.clear()
                event_io.refused.clear()
                failures.clear()
                aider_coder.reflected_message = None
                reply = self._run(aider_coder, message)
                if failures and not reply.strip():
                    raise _infrastructure_error(failures[-1], self.spec)
                changed = self._changed(before, event_io)
                problem = self._problem(aider_coder, event_io, reply, targets, bool(changed))
                if changed:
                    break
        return self._finish(targets, changed, reply, problem, commit_message, retries + 1)

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
        model = _make_model(self.spec, self.max_tokens, self.project.config.llm.timeout_s)
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
            # would tear the TUI; the whole reply arrives as one AgentMessage instead.
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
        _fence_from_editable_files(aider_coder)
        return event_io, aider_coder, _record_failures(model, self.project.config.llm.retries)

    def _run(self, aider_coder: Any, message: str) -> str:
        """One aider turn; tokens and cost go to the ledger whatever happens."""
        sent, received = aider_coder.total_tokens_sent, aider_coder.total_tokens_received
        cost = aider_coder.total_cost
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
            )
        return reply

    def _bill(self, tokens_in: int, tokens_out: int, aider_cost: float) -> None:
        if not (tokens_in or tokens_out or aider_cost):
            return
        # aider prices the response itself (cache-aware) when its metadata has prices; else the
        # same rule as core/llm.py: litellm's price, or labtui.toml's for models litellm lacks.
        cost = aider_cost if aider_cost > 0 else _price(self.spec, tokens_in, tokens_out)
        self.ledger.record(self.stage, self.spec.name, int(tokens_in), int(tokens_out), float(cost))

    def _changed(self, before: dict[Path, str | None], event_io: Any) -> list[Path]:
        """Files whose bytes differ from before the edit (targets, and anything aider touched)."""
        baseline = {**event_io.first_seen, **before}
        return [path for path, digest in baseline.items() if _sha(path) != digest]

    def _problem(
        self, aider_coder: Any, event_io: Any, reply: str, targets: list[Path], changed: bool
    ) -> str:
        """Why this attempt did not (fully) apply: a sentence first, aider's details after.

        '' when everything applied.
        """
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

    def _retry_prompt(self, targets: list[Path], aider_coder: Any, problem: str) -> str:
        names = ", ".join(self._rel(p) for p in targets)
        quoted = problem[:MAX_QUOTE_CHARS] + ("\n[...]" if len(problem) > MAX_QUOTE_CHARS else "")
        reminder = FORMAT_REMINDERS.get(
            aider_coder.edit_format, "Use exactly the edit format the system prompt describes."
        ).format(open=aider_coder.fence[0], close=aider_coder.fence[1])
        return (
            f"Your previous reply did not change {names}. What went wrong:\n\n{quoted}\n\n"
            f"Please make the requested change now and return the complete edit in the required "
            f"format. {reminder}"
        )

    def _finish(
        self,
        targets: list[Path],
        changed: list[Path],
        reply: str,
        problem: str,
        commit_message: str,
        attempts: int,
    ) -> EditResult:
        if not changed:
            names = ", ".join(self._rel(p) for p in targets)
            error = (
                f"aider did not change {names} after {attempts} "
                f"attempt{'s' if attempts != 1 else ''}: {problem.strip() or 'no edit was applied'}"
            )
            self.emit(Notice(stage=self.stage, text=error.splitlines()[0]))
            return EditResult(changed=False, files=[], commit=None, reply=reply, error=error)
        files = sorted(self._rel(p) for p in changed)
        commit = self.project.commit(commit_message, paths=files)
        if commit is not None:
            self.emit(CodeDiff.from_commit(self.stage, commit))
        return EditResult(changed=True, files=files, commit=commit, reply=reply, error=problem)

    def _rel(self, path: Path) -> str:
        return path.resolve().relative_to(self.project.root).as_posix()
