"""aider's IO, routed into events: what aider says becomes events, what it asks labtui answers.

This room holds everything between aider and the outside world, like aider's own ``io.py``:

- :class:`EventIO`, aider's ``InputOutput`` subclass that turns its output into events, answers
  every question itself (so aider never reads the terminal) and stages aider's writes until the
  caller has checked the reply (:meth:`EventIO.flush` writes all, :meth:`EventIO.discard` none);
- the answers to aider's questions (:func:`file_question_verdict`) and
  where aider may write at all (:func:`may_write`, :func:`inside`, :func:`plausible_new_file`);
- the stand-ins that keep aider quiet and local (:class:`NoAnalytics`, a console that prints
  nowhere, :func:`text_streams`).

EventIO subclasses aider's InputOutput, so it is built on first use (``EventIO`` as a module
attribute, or :func:`event_io_class`): importing this module does not import aider.
"""

from __future__ import annotations

import hashlib
import io
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path, PurePosixPath
from typing import Any

from ..events import AgentMessage, Event
from .edit_guard import EditPolicy, Problem, new_file_problem, other_file_problem, placeholder_name

PROTECTED_DIRS = (".git", ".labtui")  # aider may never write here, even inside the project
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


class _Discard(io.TextIOBase):
    """A file that swallows writes: aider's rich console must never print to our terminal."""

    def write(self, text: str) -> int:
        return len(text)


class NoAnalytics:
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


def file_sha(path: Path) -> str | None:
    """The SHA-256 of a file's bytes; None when there is no such file (yet)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


@contextmanager
def text_streams() -> Iterator[None]:
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


_EVENT_IO: type | None = None


def event_io_class() -> type:
    """Build EventIO on first use: subclassing aider's InputOutput needs aider imported."""
    global _EVENT_IO
    if _EVENT_IO is not None:
        return _EVENT_IO

    # aider (~1.5 s to import) and the rich it prints with: only an edit needs them
    from aider.io import InputOutput  # noqa: PLC0415
    from rich.console import Console  # noqa: PLC0415

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
            self.console = Console(file=io.StringIO(), force_terminal=False, no_color=True)

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
                    self.first_seen.setdefault(path, file_sha(path))
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
                self.first_seen.setdefault(path, file_sha(path))
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
    # ``from labtui.core.coding.aider_io import EventIO`` works, yet importing this module stays cheap.
    if name == "EventIO":
        return event_io_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
