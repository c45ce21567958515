# mypy: disable-error-code="valid-type"
# (the field types are built by functions: Prose(8, "…") is a type to pydantic, not to mypy)
"""The experiment's answers as typed records: the plan (``core.stages.plan``), a run's analysis
(``core.stages.experiments``), the next change a search tries (``core.search.climb``,
``core.search.tree``) and the figures' descriptions (``core.stages.plots``)."""

import re
import unicodedata
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, ConfigDict, Field, create_model

from ..source.setting_edit import Editable
from .checks import Prose, Text, answer_error, needs_items, states
from .record import Record
from .setting_answers import WithSettings, settings_field

# -- the plan (core.stages.plan) ------------------------------------------------------------------

# A plan says what each run is judged by, never what it will give: a value written before anything
# ran reads, at the checkpoint, as a result. A digit may only end a name ("run_0", "fc1", "L2").
# No raw quote or backslash either: in a grammar built from the pattern they would end the JSON
# string early. No (?:…) groups: llama.cpp's converter refuses them, and a server that cannot
# convert a schema drops it silently (measured: tests/bench/schema_probe.py). The converter also
# drops minLength beside a pattern; the validator keeps it.
NO_VALUES = r'^([^0-9"\\]|[A-Za-z_][0-9]+){%d,}$'
_VALUE = re.compile(r"(?<![A-Za-z_0-9])[-+]?[0-9][0-9.,eE%-]*")


# A value cut out of a sentence to keep it free of numbers leaves a hole: "When n_features is
# increased to  metrics are lower" (the 1.5B model, held-out plan). Asked again, not kept.
_CUT = re.compile(r"\b(?:to|from|by|than|of|at)(?: {2,}|\s*[,.;:)]|\s*$)|\s(?:=|->)\s")


@states(unstated=("no word left without its value: a grammar cannot see a missing number",))
def _whole_sentences(text: str) -> str:
    numeral = next((c for c in text if not c.isascii() and unicodedata.numeric(c, -1) != -1), None)
    if numeral is not None:
        # Kept from digits by the schema, the 1.5B model wrote "from ¾ to ¾" instead.
        raise answer_error(
            "predicts_value",
            f"writes a number as {numeral!r}: name what is compared in words, without values",
        )
    found = _CUT.search(text)
    if found:
        start = max(0, found.start() - 30)
        raise answer_error(
            "cut_sentence",
            f"reads as if a value was cut out ({text[start : found.end() + 15].strip()!r}): "
            "say the comparison in words only (e.g. 'the wider network against the baseline')",
        )
    return text


@states("pattern")
def _no_values(text: str) -> str:
    # The digits the pattern forbids; its quotes are the grammar's concern, not a value.
    found = _VALUE.search(text)
    if found:
        shown = found.group(0).rstrip(".,")
        raise answer_error(
            "predicts_value",
            f"states a value ({shown!r}) before anything ran: name what is compared, in words, "
            "and leave the numbers to the runs",
            repr(shown),
        )
    return text


def WithoutValues(text: Any, min_chars: int) -> Any:
    """``text`` (a Prose type) that may not state a value: the rule in the validator and, as a
    pattern, in the schema, which also repeats the text's minimum length (beside a pattern
    llama.cpp drops minLength: a one-word "predict" came back, 2 of 2)."""
    pattern = NO_VALUES % min_chars
    return Annotated[
        text,
        AfterValidator(_no_values),
        AfterValidator(_whole_sentences),
        Field(json_schema_extra={"pattern": pattern}),
    ]


class MetricExpectation(Record):
    metric: Text = Field(description="a metric the baseline reports")
    expect: Literal["higher", "lower"] = Field(
        description="the direction the change should move it, if the hypothesis holds"
    )


class PlannedRunRecord(WithSettings):
    # settings: those the run changes, applied by code (core/runs/setting_changes.py)
    change: Prose(2, "what this run changes in experiment.py")
    metrics: list[MetricExpectation] = Field(min_length=1, max_length=8)
    measure: WithoutValues(
        Prose(3, "the comparison that answers the question, in words, without values"), 12
    )


class PlannedRunEdit(PlannedRunRecord):
    """A run of plan.json as the researcher may write it: the metrics may be left out and the
    comparison may quote a number (theirs, not a model's prediction)."""

    metrics: list[MetricExpectation] = Field(default_factory=list, max_length=8)
    measure: Prose(2, "the comparison that answers the question")


class Plan(Record):
    model_config = ConfigDict(title="plan")
    shape: ClassVar[str] = (
        '{"runs": [{"change": <what the run changes>, "settings": [{"name": <a setting of the '
        'code>, "value": <its new value>}], "metrics": [{"metric": <a baseline metric>, '
        '"expect": "higher" | "lower"}], "measure": <the comparison, no values>}, ...]}'
    )

    runs: Annotated[list[PlannedRunRecord], AfterValidator(needs_items(1, "a planned run"))] = (
        Field(json_schema_extra={"minItems": 1})
    )


class PlanEdit(Record):
    """plan.json as the researcher approved or edited it."""

    model_config = ConfigDict(title="plan")
    shape: ClassVar[str] = Plan.shape

    runs: Annotated[list[PlannedRunEdit], AfterValidator(needs_items(1, "a planned run"))] = Field(
        json_schema_extra={"minItems": 1}
    )


def plan_answer(
    metrics: tuple[str, ...], max_runs: int, settings: tuple[Editable, ...] = ()
) -> type[Plan]:
    """The plan a model may give for this baseline: its metrics are the only names, at most
    ``max_runs`` runs, and the settings it changes are the code's, with values of their types
    (all in the schema, so a constrained server keeps to them)."""
    if not metrics and not settings:
        return Plan
    fields: dict[str, Any] = {}
    if metrics:
        expectation = create_model(
            "MetricExpectation",
            __base__=MetricExpectation,
            metric=(Literal[metrics], Field(description="a metric the baseline reports")),
        )
        fields["metrics"] = (list[expectation], Field(min_length=1, max_length=len(metrics)))
    offered = settings_field(list(settings), required=False)
    if offered is not None:
        fields["settings"] = offered
    run = create_model("PlannedRunRecord", __base__=PlannedRunRecord, **fields)
    return create_model(
        "Plan",
        __base__=Plan,
        runs=(
            Annotated[list[run], AfterValidator(needs_items(1, "a planned run"))],
            Field(json_schema_extra={"minItems": 1, "maxItems": max_runs}),
        ),
    )


# -- a run's analysis (core.stages.experiments) ---------------------------------------------------


class RunAnalysis(Record):
    """The shape and content of the analysis; whether its claims match the numbers is checked
    elsewhere, by code."""

    model_config = ConfigDict(title="run analysis")
    shape: ClassVar[str] = (
        '{"analysis": <two to five sentences>, "next": "continue" or "finish", "why": <one sentence>}'
    )

    analysis: Prose(6, "what the numbers show against the baseline, for the notebook")
    next: Literal["continue", "finish"]
    why: Prose(3, "why the runs go on or finish, in one sentence")


# -- a search's next change (core.search.climb, core.search.tree) ----------------------------------------

DESCRIPTION_CHARS = 120  # a ledger line's description


@states("maxLength", unstated=("one line: a pattern would make llama.cpp drop minLength",))
def _one_line(value: str) -> str:
    if "\n" in value.strip():
        raise answer_error("not_one_line", "must be one line, for the ledger")
    if len(value.strip()) > DESCRIPTION_CHARS:
        raise answer_error(
            "too_long",
            f"is {len(value.strip())} characters; at most {DESCRIPTION_CHARS}, for the ledger",
        )
    return " ".join(value.split())


class Proposal(WithSettings):
    """One change a hill-climb or a tree search tries next: settings of the code with new values
    (made by labtui) or, with none, a change to the code in words (made by the coder); whether
    it is new is checked against the ledger by the caller."""

    model_config = ConfigDict(title="proposal")
    shape: ClassVar[str] = (
        '{"description": <the change in one line>, "settings": [{"name": <a setting of the '
        'code>, "value": <its new value>}], "change": <exactly what to change and why>}'
    )

    description: Annotated[
        Prose(3, "the change in one short line, as the ledger lists it"),
        AfterValidator(_one_line),
        Field(json_schema_extra={"maxLength": DESCRIPTION_CHARS}),
    ]
    # two words: a settings change in words ("HIDDEN_UNITS = 64") is read by code
    change: Prose(2, "exactly what to change in the code, and why it should help")

    @property
    def what_changes(self) -> str:
        """What the ledger keeps as the step's change: its settings, or its words for code."""
        return self.settings_said or self.change


def proposal_answer(settings: tuple[Editable, ...], *, code_changes: bool = True) -> type[Proposal]:
    """The proposal a model may give: the code's settings (those a search may change) as an
    enum with typed values; without ``code_changes``, at least one setting and nothing else."""
    offered = settings_field(list(settings), required=not code_changes)
    if offered is None:
        return Proposal
    return create_model("Proposal", __base__=Proposal, settings=offered)


# -- figure descriptions (core.stages.plots) ------------------------------------------------------


@states(unstated=("no backticks: a pattern would make llama.cpp drop minLength",))
def _no_code_names(text: str) -> str:
    """A caption says what the figure shows in words: plot.py's names in backticks (the 1.5B
    model's "for all runs listed in `labels`") mean nothing to the paper's reader."""
    quoted = re.findall(r"`([^`]*)`", text)
    if quoted:
        raise ValueError(
            f"the description quotes plot.py's code ({', '.join(f'`{q}`' for q in quoted[:3])}); "
            "say in words what the figure shows, naming the runs it plots (run_0, run_1, ...)"
        )
    return text


class FigureDescriptions(Record):
    model_config = ConfigDict(title="figure descriptions")
    shape: ClassVar[str] = '{"figures": {"<file name>": "<description>", ...}}'

    figures: dict[
        str,
        Annotated[
            Prose(4, "what the figure plots (axes, curves, runs) and what to see"),
            AfterValidator(_no_code_names),
        ],
    ]
