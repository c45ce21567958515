"""core.answers' records: structured answers checked for content, not only for shape (placeholders, one-word
points, copies of the prompt's example), errors said in one sentence that names the field, and a
JSON schema for each record that a server can decode against."""

from __future__ import annotations

import json
import re

import pytest
from support.research_script import IDEA, REVIEW

from labtui.core.answers.checks import check_text, is_placeholder
from labtui.core.answers.examples import answer_examples, example_strings
from labtui.core.answers.experiment_answers import Plan, RunAnalysis
from labtui.core.answers.idea_answers import IdeaProposal, IdeaRecord, NoveltyStep
from labtui.core.answers.record import record_name, response_format
from labtui.core.answers.review_answers import ReviewForm
from labtui.core.answers.schemas import RECORDS
from labtui.core.answers.validation import validate
from labtui.core.answers.writeup_answers import CitationSelection

# -- what is not content --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "...",
        "…",
        " . . . ",
        "-",
        "string",
        "Text",
        "TODO",
        "TODO: write the summary",
        "TBD",
        "N/A",
        "none",
        "<...>",
        "<what the paper claims and contributes>",
        "[summary]",
        "Your summary here",
        "summary goes here",
        "Insert the analysis here.",
        "Lorem ipsum dolor sit amet",
    ],
)
def test_placeholders_are_recognised(text):
    assert is_placeholder(text)


@pytest.mark.parametrize(
    "text",
    [
        "The paper doubles the hidden layer of an MLP on two moons.",
        "Add dropout here",
        "No error bars",
        "Test accuracy rose from 0.80 to 0.84.",
        "Text classification is out of scope.",
        "None of the runs diverged.",
    ],
)
def test_real_text_is_not_a_placeholder(text):
    assert not is_placeholder(text)


def test_placeholder_summaries_and_points_are_refused_naming_the_field():
    with pytest.raises(ValueError) as caught:
        validate(ReviewForm, {**REVIEW, "Summary": "..."})
    assert str(caught.value) == (
        "field 'Summary' is a placeholder ('...'): write what the paper claims and contributes "
        "in your own words"
    )
    with pytest.raises(ValueError, match=re.escape("field 'Strengths' item 2 is empty")):
        validate(ReviewForm, {**REVIEW, "Strengths": ["Clear setup", " "]})


def test_one_word_summaries_and_points_are_refused():
    with pytest.raises(ValueError, match=re.escape("field 'Summary' has 1 word ('Good.')")):
        validate(ReviewForm, {**REVIEW, "Summary": "Good."})
    with pytest.raises(ValueError, match=re.escape("field 'Weaknesses' item 1 has 1 word")):
        validate(ReviewForm, {**REVIEW, "Weaknesses": ["Toy", "Only one width change"]})
    with pytest.raises(ValueError, match=re.escape("runs[0]: field 'change' has 1 word")):
        validate(Plan, {"runs": [{"change": "dropout", "measure": "accuracy vs run_0"}]})


def test_a_review_of_dots_is_said_once_for_every_text_field():
    dots = {**REVIEW, **{k: "..." for k in ("Summary",)}}
    dots |= {k: ["..."] for k in ("Strengths", "Weaknesses", "Questions", "Limitations")}
    with pytest.raises(ValueError) as caught:
        validate(ReviewForm, dots)
    assert str(caught.value) == (
        "every text field (Summary, Strengths, Weaknesses, Questions, Limitations) is a "
        "placeholder ('...'): write the real content in your own words"
    )


def test_shape_problems_come_first_and_few_are_named():
    with pytest.raises(ValueError) as caught:
        validate(ReviewForm, {**REVIEW, "Summary": "...", "Overall": 11, "Confidence": "4"})
    message = str(caught.value)
    assert message.startswith(
        "field 'Overall' must be from 1 to 10, got 11; "
        "field 'Confidence' must be an integer from 1 to 5, got '4'; "
        "field 'Summary' is a placeholder"
    )
    assert message.endswith("answer one JSON object with every field of the review form")
    with pytest.raises(ValueError, match=re.escape("(and 12 more problems)")):
        validate(ReviewForm, {"Summary": "A summary of the paper in more than eight words."})
    with pytest.raises(ValueError, match=r"^the reply must be one JSON object with every field"):
        validate(ReviewForm, ["not", "an", "object"])


def test_scores_are_never_cast_or_clamped():
    for value, says in [
        (5, "must be from 1 to 4, got 5"),
        ("3", "must be an integer from 1 to 4, got '3'"),
        (3.0, "must be an integer from 1 to 4, got 3.0"),
        (True, "must be an integer from 1 to 4, got True"),
    ]:
        with pytest.raises(ValueError, match=re.escape(f"field 'Clarity' {says}")):
            validate(ReviewForm, {**REVIEW, "Clarity": value})
    with pytest.raises(ValueError, match="field 'Ethical Concerns' must be true or false"):
        validate(ReviewForm, {**REVIEW, "Ethical Concerns": "no"})


def test_an_empty_list_is_an_answer_only_where_it_can_be():
    """No question for the authors, and no citation among the results, are real answers."""
    assert validate(ReviewForm, {**REVIEW, "Questions": []}).questions == []
    assert validate(CitationSelection, {"chosen": [], "how": ""}).chosen == []
    with pytest.raises(ValueError, match="field 'Limitations' has 0 items; give at least 1"):
        validate(ReviewForm, {**REVIEW, "Limitations": []})
    with pytest.raises(ValueError, match=re.escape("or give an empty list when there is none")):
        validate(ReviewForm, {**REVIEW, "Questions": ["None"]})


def test_an_archived_idea_is_a_persons_record_but_a_proposal_must_say_something():
    short = {**IDEA, "Experiment": "x"}
    assert validate(IdeaRecord, short).experiment == "x", "a hand-written record is kept"
    with pytest.raises(ValueError, match=re.escape("field 'Experiment' has 1 word ('x')")):
        validate(IdeaProposal, short)
    with pytest.raises(ValueError, match="field 'Name' must be a lowercase slug"):
        validate(IdeaProposal, {**IDEA, "Name": "Wider Layer"})
    proposal = validate(IdeaProposal, {**IDEA, "status": "chosen", "Score": 9})
    assert not hasattr(proposal, "status"), "archive fields are not the model's to set"


# -- copies of the prompt's example -----------------------------------------------------------------

IDEAS_PROMPT = (
    'Answer with JSON only, in this shape:\n{"ideas": [{"Name": "lowercase_slug", "Title": "A '
    'title for the paper", "Hypothesis": "What the experiment should show, and why you expect it",'
    ' "Experiment": "What to change in experiment.py and what to measure", "Interestingness": 6,'
    ' "Feasibility": 8, "Novelty": 5}]}'
)


def test_the_example_strings_are_the_values_of_the_prompts_json_snippets():
    messages = [
        {"role": "system", "content": 'Decide: {"decision": "novel" | "unsure", "reason": "why"}'},
        {"role": "user", "content": IDEAS_PROMPT + '\nNot JSON: "a quoted phrase" in prose.'},
        {"role": "assistant", "content": '{"Title": "My own earlier title"}'},
        {"role": "user", "content": 'Reflect on {"Title": "My own earlier title"}'},
    ]
    found = example_strings(messages)
    assert {"novel", "unsure", "why", "lowercase_slug", "a title for the paper"} <= found
    assert "decision" not in found and "title" not in found, "keys are not examples"
    assert "a quoted phrase" not in found, "quotes outside a JSON snippet are prose"
    assert "my own earlier title" not in found, "the model's own answers may be kept"
    besides = example_strings(messages[:2], besides={"Title": "A title for the paper"})
    assert "a title for the paper" not in besides, "material shown in the prompt is quotable"


def test_a_copy_of_the_example_is_refused_but_a_choice_from_it_is_not():
    messages = [{"role": "user", "content": IDEAS_PROMPT}]
    copied = {**IDEA, "Name": "lowercase_slug", "Title": "A title for the paper."}
    with answer_examples(example_strings(messages)):
        with pytest.raises(ValueError) as caught:
            validate(IdeaProposal, copied)
        own = validate(IdeaProposal, IDEA)
    message = str(caught.value)
    assert "field 'Name' copies the prompt's example ('lowercase_slug')" in message
    assert "field 'Title' copies the prompt's example ('A title for the paper.')" in message
    assert own.title == IDEA["Title"]
    analysis = {
        "analysis": "Test accuracy rose from 0.80 to 0.84, beyond the standard errors.",
        "next": "continue",
        "why": "the planned runs test the trend further",
    }
    example_why = "one sentence on why to go on"
    with answer_examples(["continue", "finish", example_why]):
        assert validate(RunAnalysis, analysis).next == "continue", "a choice is never a copy"
        with pytest.raises(ValueError, match="field 'why' copies the prompt's example"):
            validate(RunAnalysis, {**analysis, "why": "One sentence on why to go on."})
    own = validate(RunAnalysis, {**analysis, "why": "One sentence on why to go on."})
    assert own.why == "One sentence on why to go on.", "without the example, the same is fine"


def test_check_text_is_the_same_rule_for_fields_a_parse_function_checks():
    assert check_text(" grokking warmup ", "query", about="a search") == "grokking warmup"
    with pytest.raises(ValueError, match=re.escape("field 'query' is a placeholder ('...')")):
        check_text("...", "query", about="a search")
    with pytest.raises(ValueError, match="field 'query' must be a string"):
        check_text(3, "query", about="a search")
    with answer_examples(["a few precise keywords"]):
        with pytest.raises(ValueError, match="copies the prompt's example"):
            check_text("A few precise keywords", "query", about="a search")


def test_fields_one_field_makes_necessary_are_checked_like_prose():
    # The novelty turn's variants: tests/stages/test_novelty.py
    with pytest.raises(ValueError, match="field 'query' is missing"):
        validate(NoveltyStep, {"decision": "search", "reason": "look for width studies"})
    with pytest.raises(ValueError, match=re.escape("field 'query' is a placeholder ('...')")):
        validate(NoveltyStep, {"decision": "search", "query": "...", "reason": "look for it"})
    decided = validate(NoveltyStep, {"decision": "unsure", "reason": "the papers do not say"})
    assert decided.root.closest == []


# -- schemas ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", RECORDS, ids=lambda m: m.__name__)
def test_every_record_has_a_json_schema_a_server_can_take(model):
    request = response_format(model)
    assert json.loads(json.dumps(request)) == request
    assert request["type"] == "json_schema" and request["json_schema"]["strict"] is False
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", request["json_schema"]["name"])
    schema = request["json_schema"]["schema"]
    # one object, or (a record with variants) a choice of objects, each with its properties
    for shape in schema.get("anyOf") or schema.get("oneOf") or [schema]:
        if "$ref" in shape:
            shape = schema["$defs"][shape["$ref"].rsplit("/", 1)[-1]]
        assert shape["type"] == "object" and shape["properties"]
    assert record_name(model)


def test_the_review_schema_carries_the_forms_rules():
    schema = ReviewForm.model_json_schema(by_alias=True)
    properties = schema["properties"]
    assert list(properties) == list(REVIEW), "the form's fields, in the form's order"
    assert set(schema["required"]) == set(REVIEW)
    assert (properties["Overall"]["minimum"], properties["Overall"]["maximum"]) == (1, 10)
    assert properties["Decision"]["enum"] == ["Accept", "Reject"]
    assert properties["Strengths"]["minItems"] == 1 and properties["Questions"]["minItems"] == 0
    assert properties["Contribution"]["enum"] == [1, 2, 3, 4], "llama.cpp ignores a maximum"
    assert properties["Summary"]["minLength"] > len("...")
    assert properties["Ethical Concerns"]["type"] == "boolean"


def test_a_figure_description_that_quotes_plot_py_is_asked_again():
    from labtui.core.answers.experiment_answers import FigureDescriptions

    # the 1.5B model's caption for moons, copied from plot.py's docstring
    copied = "This plot shows the test accuracy per epoch for all runs listed in `labels`."
    with pytest.raises(ValueError, match=r"quotes plot.py's code \(`labels`\)"):
        validate(FigureDescriptions, {"figures": {"test_accuracy.png": copied}})
    said = "This plot shows the test accuracy per epoch of run_0 and run_1."
    assert validate(FigureDescriptions, {"figures": {"a.png": said}}).figures == {"a.png": said}
