"""What the sections of ``labtui.toml`` are built from: the strict base model every section is
(unknown fields refused, no number read from a string) and the field types whose checks say the
fix (a count, a limit that 0 turns off, a ceiling, "auto" or a number of tasks).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", strict=True, validate_assignment=True, use_attribute_docstrings=True
    )


def whole(value: Any) -> Any:
    """3.0 is the whole number 3; 3.5 stays a float and is refused as one."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def off_or_at_least(minimum: int, why: str) -> AfterValidator:
    """0 turns the setting off; otherwise it must be at least ``minimum`` (``why`` says why)."""

    def check(value: int) -> int:
        if 0 < value < minimum:
            raise PydanticCustomError(
                "labtui_minimum",
                "{why}",
                {
                    "why": why,
                    "fix": f"write {{key}} = {minimum} or more, or {{key}} = 0 to turn it off",
                    "value": value,
                },
            )
        return value

    return AfterValidator(check)


def at_most(most: float, suggestion: float) -> AfterValidator:
    def check(value: float) -> float:
        if value > most:
            raise PydanticCustomError(
                "labtui_maximum",
                "is above {most}",
                {"most": f"{most:g}", "fix": f"write {{key}} = {suggestion:g}"},
            )
        return value

    return AfterValidator(check)


def at_least_one(why: str) -> AfterValidator:
    def check(value: int) -> int:
        if value < 1:
            raise PydanticCustomError(
                "labtui_minimum",
                "{why}",
                {"why": why, "fix": "write {key} = 1 or more", "value": value},
            )
        return value

    return AfterValidator(check)


Count = Annotated[int, BeforeValidator(whole), Field(ge=0)]


def auto_or_whole(value: Any) -> Any:
    """The word "auto" stays; any other text is refused with the fix; 3.0 is 3."""
    if isinstance(value, str) and value != "auto":
        raise PydanticCustomError(
            "labtui_invalid",
            "{why}",
            {
                "why": f'is {value!r}, neither a number nor "auto"',
                "fix": 'write {key} = "auto" (it scales with the CPUs) or a number, 16 or more',
            },
        )
    return whole(value)


TaskCap = Annotated[
    Annotated[Count, off_or_at_least(16, "is too low for any run to start")] | Literal["auto"],
    BeforeValidator(auto_or_whole),
]
"""A number of tasks (0: no cap), or "auto": core/machine/host_limits.py sizes it by the CPUs."""
Seconds = Annotated[float, Field(ge=0)]
Timeout = Annotated[float, Field(gt=0)]
"""A wall-clock limit that cannot be off: 0 would stop the work as soon as it started."""
Number = Annotated[float, Field(ge=0)]
