"""The coder of ``[models] edit_format = "function"``: a change asked as the functions it replaces
(core/answers/code_answers.py), made by labtui (core/coding/function_edit.py), checked as aider's
edits are (core/coding/edit_guard.py) and committed; the same ``edit`` and ``EditResult`` as the
aider coder, so a step does not know which one it has.

A reply that names no definition of the code, does not parse, or fails a guard is asked again
with the reason. A file too small to be worth a function's edit, or a change the model could not
give as functions, goes to the aider coder whole (``fallback``), the last resort.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..answers.code_answers import FunctionEdits, function_edits_answer
from ..answers.examples import example_strings
from ..errors import UnusableAnswer
from ..events import CodeDiff, Event, Notice
from ..workspace.project import Project
from .coder import EditResult
from .edit_guard import EditPolicy, check_edit
from .function_edit import FunctionEditError, definitions, replace_definition

if TYPE_CHECKING:
    from ..llm.client import LLM

SMALL_FILE_LINES = 60  # below this a whole file is about as cheap as one function: aider writes it
SEPARATOR = "::"  # "helpers.py::train" when the change may touch several files


class FunctionCoder:
    """Edits Python files one definition at a time through a structured answer."""

    def __init__(
        self,
        project: Project,
        llm: LLM,
        *,
        emit: Callable[[Event], None],
        stage: str,
        fallback: Callable[[], Any],
    ) -> None:
        self.project, self.llm, self.emit, self.stage = project, llm, emit, stage
        self._fallback_factory = fallback
        self._fallback: Any = None

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
        policy = policy or EditPolicy()
        texts = {name: self._read(name) for name in files}
        named = self._definitions(texts)
        if not named or all(len(t.splitlines()) < SMALL_FILE_LINES for t in texts.values()):
            return self._whole(files, prompt, commit_message, read_only, retries, policy)
        record = function_edits_answer(tuple(named))
        messages = [{"role": "user", "content": self._message(prompt, texts, list(named))}]
        try:
            answer: tuple[FunctionEdits, dict[str, str]] = self.llm.ask_json(
                messages,
                lambda data: self._made(record, data, texts, named, policy),
                schema=record,
                examples=example_strings(messages),
                reasks=retries + 1,
            )
        except UnusableAnswer as exc:
            self.emit(
                Notice(
                    stage=self.stage,
                    text=f"no usable function edit ({exc.problem}); the coder writes the "
                    "whole file instead",
                )
            )
            return self._whole(files, prompt, commit_message, read_only, retries, policy)
        edits, new_texts = answer
        return self._commit(edits, texts, new_texts, commit_message)

    # -- the answer ----------------------------------------------------------------------------

    def _definitions(self, texts: dict[str, str]) -> dict[str, tuple[str, str]]:
        """{name an answer gives: (file, definition name)} over the Python files."""
        several = len([n for n in texts if n.endswith(".py")]) > 1
        found: dict[str, tuple[str, str]] = {}
        for file, text in texts.items():
            if file.endswith(".py"):
                for definition in definitions(text):
                    key = f"{file}{SEPARATOR}{definition.name}" if several else definition.name
                    found[key] = (file, definition.name)
        return found

    def _message(self, prompt: str, texts: dict[str, str], names: list[str]) -> str:
        shown = "\n\n".join(f"{file}:\n```python\n{text}```" for file, text in texts.items())
        return (
            f"{prompt}\n\nThe code:\n\n{shown}\n\nMake the change in the functions it is in "
            f"(at most three): for each, give its whole new definition, or only the statements "
            f"to add together with the existing statement just before and just after them; "
            f"everything else of the file stays as it is. The functions: {', '.join(names)}.\n\n"
            'Answer with one JSON object and nothing else:\n{"explanation": "<what you change '
            'and why>", "edits": [{"function": "<one of the functions above>", "code": "<its '
            'whole new definition, or the new statements between their neighbours>"}]}'
        )

    def _made(
        self,
        record: type[FunctionEdits],
        data: Any,
        texts: dict[str, str],
        named: dict[str, tuple[str, str]],
        policy: EditPolicy,
    ) -> tuple[FunctionEdits, dict[str, str]]:
        """The answer applied to the texts and checked; ValueError (asked again) says why not."""
        answer = record.model_validate(data)
        new = dict(texts)
        for item in answer.edits:
            file, name = named[item.function]
            try:
                new[file] = replace_definition(new[file], name, item.code)
            except FunctionEditError as exc:
                raise ValueError(f"edits[{item.function}]: {exc}") from None
        changed = {file: text for file, text in new.items() if text != texts[file]}
        if not changed:
            raise ValueError("the new definitions are the old ones: nothing changes")
        for file, text in changed.items():
            problems = check_edit(file, texts[file], text, policy.contract(file, texts[file]))
            if problems:
                raise ValueError(f"{file}: " + "; ".join(p.reason for p in problems))
        return answer, changed

    # -- the tree ------------------------------------------------------------------------------

    def _commit(
        self,
        answer: FunctionEdits,
        texts: dict[str, str],
        changed: dict[str, str],
        commit_message: str,
    ) -> EditResult:
        for file, text in changed.items():
            (self.project.root / file).write_text(text, encoding="utf-8")
        names = ", ".join(item.function for item in answer.edits)
        commit = self.project.commit(f"{commit_message}: {names}", paths=sorted(changed))
        if commit is not None:
            self.emit(CodeDiff.from_commit(self.stage, commit))
        return EditResult(
            changed=True,
            files=sorted(changed),
            commit=commit,
            reply=answer.explanation,
            error="",
            target_changed=any(file in texts for file in changed),
        )

    def _read(self, name: str) -> str:
        path = self.project.root / name
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def _whole(
        self,
        files: list[str],
        prompt: str,
        commit_message: str,
        read_only: list[str] | None,
        retries: int,
        policy: EditPolicy,
    ) -> EditResult:
        if self._fallback is None:
            self._fallback = self._fallback_factory()
        result: EditResult = self._fallback.edit(
            files,
            prompt,
            commit_message=commit_message,
            read_only=read_only,
            retries=retries,
            policy=policy,
        )
        return result
