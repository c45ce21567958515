# mypy: disable-error-code="valid-type"
# (the field types are built from the code's settings: a type to pydantic, not to mypy)
"""The settings of the experiment's code as an answer's choices: a plan's run or a search's
proposal names a setting from the enum the code gives, with a value of that setting's type.

A small model asked in words wrote "When n_features is increased to  metrics are lower": what it
changes was lost in prose. Offered the settings as a schema (one object per setting: its name a
constant, its value typed, a choice where the code states the choices), a server that decodes
with the schema can only name settings that exist, with values of their type; the validator
then checks what no schema states (a value the setting already has, a stated range) with the
setting's facts (core/source/setting_edit.py).
"""

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, create_model, model_validator

from ..source.setting_edit import Editable
from .checks import states
from .record import Record

# A plan or a proposal changes a few settings at a time: one question per run.
MAX_SETTINGS = 4
_SCALARS: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool}


def offered(settings: list[Editable]) -> list[Editable]:
    """The settings an answer may name: those whose value a schema can type (a dict or a
    None has no type a model could fill)."""
    return [s for s in settings if value_type(s) is not None]


def value_type(setting: Editable) -> Any:
    """The pydantic type of ``setting``'s value: its choices when the code states them, else
    its scalar type, or a list of the element type (a tuple keeps its length); None for a
    value no schema can type."""
    if setting.choices:
        return Literal[tuple(setting.choices)]
    if setting.type in _SCALARS:
        return _SCALARS[setting.type]
    if setting.type in ("list", "tuple") and isinstance(setting.value, list | tuple):
        kinds = {type(item) for item in setting.value}
        element = float if kinds <= {int, float} and float in kinds else next(iter(kinds), None)
        if (len(kinds) > 1 and element is not float) or element not in (int, float, str, bool):
            return None
        if setting.type == "tuple":
            size = len(setting.value)
            return Annotated[list[element], Field(min_length=size, max_length=size)]
        return list[element]
    return None


def setting_choice(settings: list[Editable]) -> Any:
    """One setting and its new value, as a union of one record per setting (its name a
    constant): the schema says, for each name, what its value may be. None when the code
    offers no setting."""
    records = [
        create_model(
            f"Set{index}",
            __base__=BaseModel,
            name=(Literal[setting.name], Field(description=f"now {setting.value!r}")),
            value=(value_type(setting), ...),
        )
        for index, setting in enumerate(offered(settings))
    ]
    if not records:
        return None
    if len(records) == 1:
        return records[0]
    return Annotated[Union[tuple(records)], Field(discriminator="name")]  # noqa: UP007


def settings_field(settings: list[Editable], *, required: bool) -> Any:
    """The ``settings`` field of a plan's run or a search's proposal: a list of the code's
    settings with their new values, at most MAX_SETTINGS; at least one when ``required``
    (a climb that may only change settings). The field itself is always required (an empty
    list says "no setting"): left optional, the 1.5B model left it out and wrote "Change
    HIDDEN_UNITS to 8" in words. None when the code offers none."""
    choice = setting_choice(settings)
    if choice is None:
        return None
    return (
        list[choice],
        Field(
            min_length=1 if required else 0,
            max_length=MAX_SETTINGS,
            description="settings of the code this changes, each with its new value",
        ),
    )


class WithSettings(Record):
    """An answer that may set settings of the code: ``settings`` is {name: value} as plan.json
    writes it, and a list of the code's settings in a model's answer (``settings_field``)."""

    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    @states(unstated=("a reply left without settings reads as none: lenient, not a rule",))
    def _none_when_left_out(cls, data: Any) -> Any:
        """A reply without ``settings`` (a server that does not decode with the schema, or a
        scripted one) says no setting: the schema requires the field, the reading does not."""
        field = cls.model_fields.get("settings")
        if isinstance(data, dict) and "settings" not in data and field and field.is_required():
            return {**data, "settings": []}
        return data

    @property
    def settings_said(self) -> str:
        """``settings: HIDDEN_UNITS = 64, LEARNING_RATE = 0.1`` ('' when it sets none)."""
        chosen = self.chosen_settings
        return (
            ("settings: " + ", ".join(f"{k} = {v!r}" for k, v in chosen.items())) if chosen else ""
        )

    @property
    def chosen_settings(self) -> dict[str, Any]:
        """The settings it sets, {name: value} ({} when none)."""
        given: Any = self.settings
        return dict(given) if isinstance(given, dict) else chosen(given)


def chosen(items: list[Any]) -> dict[str, Any]:
    """{name: value} of an answer's settings, in its order (a name given twice: the last)."""
    return {item.name: item.value for item in items}
