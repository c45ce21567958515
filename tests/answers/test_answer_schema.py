"""Every rule of a structured answer is in the JSON schema the server decodes with, or listed as
one no schema can state (tests/support/schema_walk.py); the variants of the records whose fields
depend on another field; integer ranges as enums."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

import pytest
from pydantic import AfterValidator, BeforeValidator, ConfigDict, model_validator
from support.schema_walk import unstated_rules

from labtui.core.answers.checks import Prose, Score, states
from labtui.core.answers.experiment_answers import plan_answer
from labtui.core.answers.idea_answers import NOVELTY_DECISIONS, novelty_step
from labtui.core.answers.literature_answers import LiteratureStep
from labtui.core.answers.record import Record
from labtui.core.answers.review_answers import ReviewForm, ReviewReflection
from labtui.core.answers.schemas import RECORDS
from labtui.core.answers.setup_answer import SetupAnswer
from labtui.core.answers.validation import AnswerRefused, validate
from labtui.core.answers.variants import Is, Need, Variant, Variants
from labtui.core.answers.writeup_answers import (
    ABSTRACT_CHARS,
    SECTION_CHARS,
    TITLE_CHARS,
    CitationProposal,
    CitationSelection,
    SectionText,
    TitleAbstract,
)

WALKED = (*RECORDS, SetupAnswer)


@pytest.mark.parametrize("record", WALKED, ids=lambda r: r.__name__)
def test_every_validator_rule_of_every_record_is_in_its_schema_or_listed_unstatable(record):
    walk = unstated_rules(record)
    assert walk.problems == [], "\n".join(walk.problems)


def test_the_walk_finds_the_rules_it_checks():
    """Not vacuous: the records' validators are found, nested ones and variants included."""
    assert sum(unstated_rules(r).rules for r in WALKED) > 60
    assert unstated_rules(ReviewReflection).rules > unstated_rules(ReviewForm).rules


def _unmarked(value: Any) -> Any:
    return value


@states("maximum")
def _says_maximum(value: Any) -> Any:
    return value


class _Bad(Record):
    """TEST-ONLY: a record whose rules the schema does not state."""

    model_config = ConfigDict(title="bad")
    points: list[Annotated[str, AfterValidator(_unmarked)]]  # a rule nobody accounted for
    level: Annotated[int, BeforeValidator(_says_maximum)]  # claims a keyword the schema lacks
    note: str = ""

    @model_validator(mode="after")
    def _note_when_high(self) -> _Bad:
        if self.level > 3 and not self.note:
            raise ValueError("a high level needs a note")
        return self


class _BadVariants(Record):
    """TEST-ONLY: variants declared, but a config of its own drops them from the schema."""

    model_config = ConfigDict(title="bad variants", json_schema_extra=None)
    variants: ClassVar[Variants] = Variants(
        (Variant((Is("done", True),)), Variant((Is("done", False),), (Need("why", "why?", "x"),)))
    )
    done: bool
    why: str = ""


def test_a_record_with_unstated_rules_fails_the_walk():
    problems = unstated_rules(_Bad).problems
    assert any("_Bad.points[]" in p and "_unmarked" in p for p in problems)
    assert any("_Bad.level" in p and "'maximum'" in p for p in problems)
    assert any("_note_when_high" in p for p in problems)
    assert any(
        "_BadVariants" in p and "2 variants but 0" in p
        for p in unstated_rules(_BadVariants).problems
    )


def test_scores_go_out_as_enums_which_llama_cpp_holds():
    schema = ReviewForm.model_json_schema(by_alias=True)["properties"]
    assert schema["Contribution"]["enum"] == [1, 2, 3, 4]
    assert schema["Overall"]["enum"] == list(range(1, 11))
    assert schema["Contribution"]["type"] == "integer"
    with pytest.raises(ValueError, match="must be from 1 to 4, got 5"):
        validate(_OneScore, {"score": 5})


class _OneScore(Record):
    score: Score(1, 4)


def _variant(schema: dict[str, Any], **values: Any) -> dict[str, Any]:
    (branch,) = [
        b
        for b in schema["anyOf"]
        if all(b["properties"].get(k, {}).get("enum") == [v] for k, v in values.items())
    ]
    return branch


def test_a_literature_step_is_one_variant_per_action():
    schema = LiteratureStep.model_json_schema(by_alias=True)
    assert "properties" not in schema, "llama.cpp ignores properties beside an anyOf"
    search = _variant(schema, action="search")
    assert search["required"] == ["action", "query"] and set(search["properties"]) == {
        "action",
        "query",
    }
    read = _variant(schema, action="read")
    assert read["required"] == ["action", "arxiv_id"] and "full_text" in read["properties"]
    add = _variant(schema, action="add")
    assert add["required"] == ["action", "arxiv_id", "summary"]
    assert add["properties"]["summary"]["minLength"] == 80
    assert _variant(schema, action="done")["required"] == ["action", "summary"]


def test_conditional_fields_are_variants_and_keep_their_messages():
    proposal = CitationProposal.model_json_schema(by_alias=True)
    assert _variant(proposal, done=False)["required"] == ["done", "where", "query"]
    assert _variant(proposal, done=True)["required"] == ["done"]
    with pytest.raises(AnswerRefused, match='"where" must name the section') as info:
        validate(CitationProposal, {"done": False, "query": "adam optimiser"})
    assert (info.value.field, info.value.given) == ("'where'", False)
    with pytest.raises(ValueError, match=r"field 'query' is a placeholder"):
        validate(CitationProposal, {"done": False, "where": "Method, first line", "query": "..."})
    assert validate(CitationProposal, {"done": True}).where == ""

    selection = CitationSelection.model_json_schema(by_alias=True)
    empty, chosen = selection["anyOf"]
    assert empty["properties"]["chosen"]["maxItems"] == 0 and "how" not in empty["properties"]
    assert chosen["properties"]["chosen"]["minItems"] == 1 and "how" in chosen["required"]
    with pytest.raises(ValueError, match='"how" must say where and how'):
        validate(CitationSelection, {"chosen": [1]})
    assert validate(CitationSelection, {"chosen": [2], "how": " in the method "}).how == (
        "in the method"
    )

    reflection = ReviewReflection.model_json_schema(by_alias=True)
    revised = _variant(reflection, done=False)
    assert revised["required"] == ["done", "review"]
    assert revised["properties"]["review"] == {"$ref": "#/$defs/ReviewForm"}
    with pytest.raises(ValueError, match='"done": false needs the revised "review"'):
        validate(ReviewReflection, {"done": False})


class _Titled(Record):
    title: Prose(3, "a title")


def test_a_refusal_names_the_field_and_the_value_given():
    with pytest.raises(AnswerRefused) as info:
        validate(_Titled, {"title": "..."})
    assert (info.value.field, info.value.value, info.value.given) == ("'title'", "...", True)


def _patterns(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        return found + [p for value in node.values() for p in _patterns(value)]
    if isinstance(node, list):
        return [p for value in node for p in _patterns(value)]
    return []


@pytest.mark.parametrize(
    "record",
    [*WALKED, plan_answer(("test_accuracy_mean",), 2), novelty_step(NOVELTY_DECISIONS, ("1.2",))],
    ids=lambda r: r.__name__,
)
def test_patterns_keep_to_what_llama_cpps_converter_takes(record):
    """llama-cpp-python 0.3.36 refuses (?:…), look-arounds and back-references, and a server
    that cannot convert a schema answers without any grammar (measured with the plan's first
    pattern: tests/bench/schema_probe.py --llama-python). Its string grammar also ends at a raw
    quote, so a negated class must exclude it."""
    for pattern in _patterns(record.model_json_schema(by_alias=True)):
        assert "(?" not in pattern and "\\1" not in pattern, pattern
        for negated in re.findall(r"\[\^([^\]]*)\]", pattern):
            assert '"' in negated, f"{pattern}: [^{negated}] admits a raw quote"


def test_a_sections_length_is_bounded_by_the_validator_not_the_schema():
    """Qwen2.5-Coder-1.5B copied its whole prompt into the abstract until the token cap cut the
    JSON off (issue 27), so a section's length is bounded; not in the schema, where a maxLength
    of 1,600 made llama-cpp-python's server fail to parse the grammar and die."""
    for record, field in (
        (TitleAbstract, "abstract"),
        (TitleAbstract, "title"),
        (SectionText, "latex"),
    ):
        assert "maxLength" not in record.model_json_schema()["properties"][field]
    with pytest.raises(ValueError, match="'abstract' is 1,999 characters long; at most 1,600"):
        validate(TitleAbstract, {"title": "Label noise on two moons", "abstract": "word " * 400})
    assert ABSTRACT_CHARS < TITLE_CHARS * 10 < SECTION_CHARS
