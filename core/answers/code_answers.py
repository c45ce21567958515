# mypy: disable-error-code="valid-type"
# (the field types are built from the code's definitions: a type to pydantic, not to mypy)
"""A change to the code as a structured answer sized to it (core/coding/function_coder.py): the
functions it replaces, each named from the code's own (an enum), with its whole new definition;
and one sentence of what changed and why, for the notebook."""

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, create_model

from .checks import Prose
from .record import Record

MAX_FUNCTIONS = 3  # a change bigger than three definitions is no small edit


class FunctionReplacement(Record):
    function: str = Field(description="the function (or Class.method) to replace")
    code: str = Field(
        min_length=10, description="its whole new definition, from its def line to its end"
    )


class FunctionEdits(Record):
    model_config = ConfigDict(title="function edit")
    shape: ClassVar[str] = (
        '{"explanation": <what you change and why>, "edits": [{"function": <a function of the '
        'code>, "code": <its whole new definition>}]}'
    )

    explanation: Prose(4, "what the change does and why, in one or two sentences")
    edits: list[FunctionReplacement] = Field(min_length=1, max_length=MAX_FUNCTIONS)


def function_edits_answer(names: tuple[str, ...]) -> type[FunctionEdits]:
    """The answer for code whose definitions are ``names``: only those may be replaced."""
    if not names:
        return FunctionEdits
    replacement: Any = create_model(
        "FunctionReplacement",
        __base__=FunctionReplacement,
        function=(Literal[names], Field(description="the function (or Class.method) to replace")),
    )
    return create_model(
        "FunctionEdits",
        __base__=FunctionEdits,
        edits=(list[replacement], Field(min_length=1, max_length=MAX_FUNCTIONS)),
    )
