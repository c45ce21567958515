"""What labtui uses of aider's objects, as Protocols: aider ships no type information, so without
these every aider object is ``Any`` and a misspelt attribute would pass the checker.

Each Protocol lists only the members labtui reads, calls or replaces; aider's own objects (and
labtui's ``EventIO``, which subclasses aider's InputOutput on first use, core/coding/aider_io.py)
satisfy them structurally.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol


class AiderModel(Protocol):
    """aider's ``models.Model``: the parameters it passes to litellm, and the call labtui wraps
    (streamed, retried by labtui's policy)."""

    edit_format: str  # aider's choice for the model ("whole" for one it does not know)
    extra_params: dict[str, Any]
    send_completion: Callable[..., tuple[Any, Any]]


class AiderPrompts(Protocol):
    """The prompts of an aider coder's edit format."""

    example_messages: list[dict[str, str]]


class AiderCoder(Protocol):
    """aider's ``coders.Coder`` of one chat, as far as labtui reads it and replaces its methods
    (the fence chosen from the edited files, the whole format's edits tidied)."""

    edit_format: str
    fence: tuple[str, str]
    fences: list[tuple[str, str]]
    reflected_message: str | None  # why aider could not apply the last reply (None: it could)
    aider_edited_files: set[str]
    gpt_prompts: AiderPrompts
    choose_fence: Callable[[], None]
    get_edits: Callable[..., Any]

    def get_abs_fnames_content(self) -> Iterator[tuple[str, str]]: ...

    def get_inchat_relative_files(self) -> list[str]: ...


class EditEvents(Protocol):
    """labtui's IO for one aider chat (``EventIO``): what an attempt's judgement reads of it."""

    errors: list[str]  # aider's tool errors
    refused: list[str]  # the files labtui did not let aider write
