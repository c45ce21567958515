"""core.llm.client against the scripted OpenAI-compatible server: retries, streaming, JSON, budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from support.recorded_replies import exchanges, replies
from support.scripted_llm import Fault, ScriptedLLMServer, count_tokens, prompt_tokens_of

from labtui.core.answers.json_reply import extract_json
from labtui.core.errors import BudgetExceeded, LLMError
from labtui.core.events import AgentChunk, AgentMessage, CostUpdate, Event, Notice
from labtui.core.llm import failures as llm_errors
from labtui.core.llm import litellm_setup, server_idle
from labtui.core.llm.budget import Ledger
from labtui.core.llm.client import LLM
from labtui.core.llm.litellm_setup import check_model, prepare_litellm, register_model
from labtui.core.llm.response_formats import structured_mode
from labtui.core.settings.config import ModelSpec
from labtui.core.settings.sections import LLMSection

MODEL = "openai/scripted-x"
SERVED = "scripted-x"  # the name as the server receives it
MESSAGES = [{"role": "user", "content": "Propose one idea as JSON."}]


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_errors, "BACKOFF_BASE_S", 0.01)
    monkeypatch.setattr(server_idle, "IDLE_POLL_S", 0.02)


class Recorder:
    """Collects emitted events; the tests read them by type."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def make_llm(
    server: ScriptedLLMServer,
    events: Recorder,
    *,
    budget: float = 10.0,
    price_in: float = 0.0,
    price_out: float = 0.0,
    **settings: Any,
) -> LLM:
    spec = ModelSpec(
        name=MODEL,
        api_base=server.url,
        api_key_env="LABTUI_TEST_NO_SUCH_KEY",
        input_usd_per_mtok=price_in,
        output_usd_per_mtok=price_out,
    )
    # Generous limits: a loaded machine must not turn a slow answer into a timeout; tests of the
    # limits pass their own.
    llm_settings = LLMSection(**{"first_token_s": 120.0, "idle_s": 120.0, "retries": 3, **settings})
    return LLM(spec, llm_settings, Ledger(budget, events), events, stage="ideas")


# -- chat -------------------------------------------------------------------------------------


def test_plain_chat_returns_text_and_books_server_usage(llm_server: ScriptedLLMServer) -> None:
    events = Recorder()
    llm_server.script(SERVED, "An idea about grokking.")
    text = make_llm(llm_server, events).chat(MESSAGES, stream=False)
    assert text == "An idea about grokking."
    assert [m.text for m in events.of(AgentMessage)] == [text]
    assert events.of(AgentMessage)[0].role == "ideas"
    assert events.of(AgentChunk) == []
    (cost,) = events.of(CostUpdate)
    assert (cost.tokens_in, cost.tokens_out) == (
        llm_server.usage[SERVED]["prompt_tokens"],
        llm_server.usage[SERVED]["completion_tokens"],
    )
    assert cost.stage == "ideas" and cost.model == MODEL and cost.cost_usd == 0.0
    assert llm_server.errors == []


def test_request_carries_cap_temperature_and_model(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, "ok", "ok")
    model = make_llm(llm_server, Recorder(), max_tokens=256, temperature=0.3)
    model.chat(MESSAGES, stream=False, max_tokens=100_000)
    model.chat(MESSAGES, stream=False, temperature=0.9, max_tokens=50)
    first, second = llm_server.requests
    assert first["model"] == SERVED and first["max_tokens"] == 256
    assert first["temperature"] == 0.3
    assert second["max_tokens"] == 50 and second["temperature"] == 0.9
    assert "response_format" not in first


def test_streaming_emits_chunks_joining_to_message(llm_server: ScriptedLLMServer) -> None:
    events = Recorder()
    reply = "A streamed reply about sparse autoencoders, long enough to split."
    llm_server.script(SERVED, reply)
    text = make_llm(llm_server, events, price_in=1.0, price_out=2.0).chat(MESSAGES)
    chunks = events.of(AgentChunk)
    assert text == reply
    assert len(chunks) > 1
    assert "".join(c.text for c in chunks) == reply
    assert events.of(AgentMessage)[-1].text == reply
    assert events.events.index(chunks[-1]) < events.events.index(events.of(AgentMessage)[0])
    (cost,) = events.of(CostUpdate)
    assert cost.tokens_out == count_tokens(reply)
    assert cost.tokens_in == prompt_tokens_of(llm_server.requests[0])
    assert cost.cost_usd == pytest.approx((cost.tokens_in * 1.0 + cost.tokens_out * 2.0) / 1e6)
    assert llm_server.requests[0]["stream"] is True


def test_role_overrides_stage_name(llm_server: ScriptedLLMServer) -> None:
    events = Recorder()
    llm_server.script(SERVED, "hi")
    spec = ModelSpec(name=MODEL, api_base=llm_server.url, api_key_env="LABTUI_TEST_NO_SUCH_KEY")
    LLM(spec, LLMSection(), Ledger(1.0, events), events, stage="review", role="reviewer").chat(
        MESSAGES
    )
    assert {e.role for e in events.of(AgentChunk) + events.of(AgentMessage)} == {"reviewer"}


# -- retries ----------------------------------------------------------------------------------


def test_rate_limit_is_retried_with_notice(llm_server: ScriptedLLMServer) -> None:
    events = Recorder()
    llm_server.script(SERVED, Fault(status=429), "after the wait")
    assert make_llm(llm_server, events).chat(MESSAGES) == "after the wait"
    (notice,) = events.of(Notice)
    assert "rate limited" in notice.text and "retrying in" in notice.text
    assert len(llm_server.requests) == 2
    assert len(events.of(CostUpdate)) == 1


def test_server_errors_twice_then_success(llm_server: ScriptedLLMServer) -> None:
    events = Recorder()
    llm_server.script(SERVED, Fault(status=500), Fault(status=503), "fine now")
    assert make_llm(llm_server, events).chat(MESSAGES, stream=False) == "fine now"
    assert len(events.of(Notice)) == 2
    assert len(llm_server.requests) == 3


def test_timeout_is_retried(llm_server: ScriptedLLMServer) -> None:
    events = Recorder()
    llm_server.script(SERVED, Fault(delay_s=1.0, then="too late"), "on time")
    model = make_llm(llm_server, events, first_token_s=0.3)
    assert model.chat(MESSAGES) == "on time"
    assert "timed out" in events.of(Notice)[0].text
    assert "first_token_s" in events.of(Notice)[0].text


def test_retries_exhausted_raise_llm_error(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, *[Fault(status=500)] * 3)
    with pytest.raises(LLMError) as info:
        make_llm(llm_server, Recorder(), retries=2).chat(MESSAGES)
    assert "failed 3 times" in info.value.message
    assert "retries" in info.value.hint
    assert len(llm_server.requests) == 3


def test_connection_refused_is_retried_then_fails(unused_port_url: str) -> None:
    events = Recorder()
    spec = ModelSpec(name=MODEL, api_base=unused_port_url, api_key_env="LABTUI_TEST_NO_SUCH_KEY")
    model = LLM(spec, LLMSection(retries=1, first_token_s=2), Ledger(1.0, events), events, "ideas")
    with pytest.raises(LLMError) as info:
        model.chat(MESSAGES)
    assert "connection failed" in info.value.message
    assert len(events.of(Notice)) == 1


@pytest.fixture
def unused_port_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_auth_error_is_not_retried(
    llm_server: ScriptedLLMServer, capfd: pytest.CaptureFixture[str]
) -> None:
    events = Recorder()
    llm_server.script(SERVED, Fault(status=401), "never reached")
    with pytest.raises(LLMError) as info:
        make_llm(llm_server, events).chat(MESSAGES)
    assert capfd.readouterr() == ("", "")  # litellm's banners and logs stay quiet
    assert "401" in info.value.message
    assert "LABTUI_TEST_NO_SUCH_KEY" in info.value.hint
    assert len(llm_server.requests) == 1 and events.of(Notice) == []


def test_bad_request_is_not_retried(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, Fault(status=400, message="unknown parameter foo"), "never")
    with pytest.raises(LLMError) as info:
        make_llm(llm_server, Recorder()).chat(MESSAGES, stream=False)
    assert "400" in info.value.message and "unknown parameter foo" in info.value.message
    assert "labtui.toml" in info.value.hint
    assert len(llm_server.requests) == 1


def test_not_found_names_the_model_setting(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, Fault(status=404))
    with pytest.raises(LLMError) as info:
        make_llm(llm_server, Recorder()).chat(MESSAGES, stream=False)
    assert "404" in info.value.message and "stage 'ideas'" in info.value.hint


# -- JSON mode --------------------------------------------------------------------------------


def test_json_mode_sends_response_format(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, '{"a": 1}')
    make_llm(llm_server, Recorder()).chat(MESSAGES, json_mode=True)
    assert llm_server.requests[0]["response_format"] == {"type": "json_object"}


def test_json_mode_off_in_settings_sends_none(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, '{"a": 1}')
    make_llm(llm_server, Recorder(), json_mode=False).chat(MESSAGES, json_mode=True)
    assert "response_format" not in llm_server.requests[0]


def test_rejected_response_format_is_dropped_once(llm_server: ScriptedLLMServer) -> None:
    events = Recorder()
    rejection = Fault(status=400, message="response_format json_object is not supported")
    llm_server.script(SERVED, rejection, '{"a": 1}', '{"b": 2}')
    model = make_llm(llm_server, events)
    assert model.chat(MESSAGES, json_mode=True) == '{"a": 1}'
    assert model.chat(MESSAGES, json_mode=True) == '{"b": 2}'
    assert [("response_format" in r) for r in llm_server.requests] == [True, False, False]
    assert any("json_mode = false" in n.text for n in events.of(Notice))


# -- ask_json ---------------------------------------------------------------------------------


def parse_score(obj: Any) -> int:
    if not isinstance(obj, dict) or "Overall" not in obj:
        raise ValueError("expected an object with field 'Overall'")
    value = obj["Overall"]
    if not isinstance(value, int) or not 1 <= value <= 10:
        raise ValueError(f"field 'Overall' must be an integer 1–10, got {value!r}")
    return value


def test_ask_json_reasks_after_malformed_json(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, 'Sure! {"Overall": 7,}', 'Here: {"Overall": 7}')
    assert make_llm(llm_server, Recorder()).ask_json(MESSAGES, parse_score) == 7
    second = llm_server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": 'Sure! {"Overall": 7,}'}
    assert "does not parse" in second[-1]["content"]
    assert llm_server.requests[0]["response_format"] == {"type": "json_object"}


def test_ask_json_quotes_validator_problem(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, '{"Overall": 12}', '```json\n{"Overall": 9}\n```')
    assert make_llm(llm_server, Recorder()).ask_json(MESSAGES, parse_score) == 9
    reask = llm_server.requests[1]["messages"][-1]["content"]
    assert "field 'Overall' must be an integer 1–10, got 12" in reask
    assert llm_server.requests[1]["messages"][: len(MESSAGES)] == MESSAGES


def test_ask_json_gives_up_naming_the_model(llm_server: ScriptedLLMServer) -> None:
    llm_server.default(SERVED, "I cannot answer in JSON, sorry.")
    with pytest.raises(LLMError) as info:
        make_llm(llm_server, Recorder(), reasks=2).ask_json(MESSAGES, parse_score)
    assert MODEL in info.value.message and "3 attempts" in info.value.message
    assert "no JSON object found" in info.value.message
    assert "stage 'ideas'" in info.value.hint
    assert len(llm_server.requests) == 3


def test_ask_json_explicit_reasks_zero(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, '{"Overall": 0}')
    with pytest.raises(LLMError):
        make_llm(llm_server, Recorder()).ask_json(MESSAGES, parse_score, reasks=0)
    assert llm_server.errors == []


# -- structured answers: schema-constrained decoding, its fallbacks, content refusals ---------

ANALYSIS_PROMPT = [
    {
        "role": "user",
        "content": "Analyse run_1. Answer with one JSON object and nothing else:\n"
        '{"analysis": "two to five sentences for the notebook", "next": "continue" or "finish", '
        '"why": "one sentence"}',
    }
]
ANALYSIS = {
    "analysis": "Test accuracy rose from 0.80 to 0.84, beyond the standard errors of 0.01.",
    "next": "continue",
    "why": "the planned runs test the trend further",
}


def parse_analysis(data: Any) -> Any:
    from labtui.core.answers.experiment_answers import RunAnalysis
    from labtui.core.answers.validation import validate

    return validate(RunAnalysis, data)


def _format_types(server: ScriptedLLMServer) -> list[str]:
    return [(r.get("response_format") or {}).get("type", "none") for r in server.requests]


def test_a_schema_is_sent_as_the_json_schema_response_format(llm_server: ScriptedLLMServer) -> None:
    from labtui.core.answers.experiment_answers import RunAnalysis

    llm_server.script(SERVED, json.dumps(ANALYSIS))
    answer = make_llm(llm_server, Recorder()).ask_json(
        ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis
    )
    assert answer.next == "continue"
    sent = llm_server.requests[0]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "RunAnalysis"
    assert sent["json_schema"]["schema"] == RunAnalysis.model_json_schema(by_alias=True)
    assert sent["json_schema"]["strict"] is False


def test_a_rejected_json_schema_falls_back_to_json_object_and_is_remembered(
    llm_server: ScriptedLLMServer,
) -> None:
    from labtui.core.answers.experiment_answers import RunAnalysis

    events = Recorder()
    rejection = Fault(status=400, message="response_format type json_schema is not supported")
    llm_server.script(SERVED, rejection, json.dumps(ANALYSIS), json.dumps(ANALYSIS))
    model = make_llm(llm_server, events)
    model.ask_json(ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis)
    # Another LLM of the same model and server (another stage) knows it already.
    make_llm(llm_server, Recorder()).ask_json(ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis)
    assert _format_types(llm_server) == ["json_schema", "json_object", "json_object"]
    # llama.cpp's form: json_object carrying the record's schema
    assert llm_server.requests[1]["response_format"]["schema"] == RunAnalysis.model_json_schema(
        by_alias=True
    )
    assert structured_mode(model.spec) == "json_object_schema"
    assert any("rejected response_format json_schema" in n.text for n in events.of(Notice))
    assert any("asking with json_object_schema instead" in n.text for n in events.of(Notice))
    assert llm_server.errors == []


def test_a_server_without_json_modes_gets_extraction_and_reasks(
    llm_server: ScriptedLLMServer,
) -> None:
    from labtui.core.answers.experiment_answers import RunAnalysis

    llm_server.script(
        SERVED,
        Fault(status=400, message="Unknown field: response_format.json_schema"),
        # Not 422: litellm itself resends a 422 once whenever aider (imported by an earlier test
        # in the process) has set litellm.drop_params, which would make the count vary.
        Fault(status=400, message="response_format is not supported by this server"),
        Fault(status=400, message="response_format is not supported by this server"),
        "Sure! Here it is:\n" + json.dumps(ANALYSIS),
        json.dumps(ANALYSIS),
    )
    model = make_llm(llm_server, Recorder())
    assert model.ask_json(ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis).next == "continue"
    model.ask_json(ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis)
    sent = [(r.get("response_format") or {}) for r in llm_server.requests]
    assert [(f.get("type", "none"), "schema" in f) for f in sent] == [
        ("json_schema", False),
        ("json_object", True),
        ("json_object", False),
        ("none", False),
        ("none", False),
    ]


def test_each_refused_answer_is_a_refused_event_naming_the_record(
    llm_server: ScriptedLLMServer,
) -> None:
    from labtui.core.answers.experiment_answers import RunAnalysis
    from labtui.core.events import Refused

    events = Recorder()
    copied = {**ANALYSIS, "analysis": "Two to five sentences for the notebook."}
    llm_server.script(SERVED, json.dumps({**ANALYSIS, "analysis": "..."}), json.dumps(copied))
    llm_server.script(SERVED, json.dumps(ANALYSIS))
    answer = make_llm(llm_server, events).ask_json(
        ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis
    )
    assert answer.analysis == ANALYSIS["analysis"]
    refused = events.of(Refused)
    assert {(r.what, r.subject, r.stage) for r in refused} == {("answer", "run analysis", "ideas")}
    assert len(refused) == 2
    assert refused[0].reason.startswith("field 'analysis' is a placeholder ('...')")
    assert "field 'analysis' copies the prompt's example" in refused[1].reason
    reasks = [r["messages"][-1]["content"] for r in llm_server.requests[1:]]
    assert "field 'analysis' is a placeholder ('...')" in reasks[0]
    assert "copies the prompt's example" in reasks[1]
    # "continue" is in the example too, but it is a choice, not free text: never a copy.
    assert answer.next == "continue"


def test_after_the_reasks_the_error_says_what_was_wrong_and_what_to_change(
    llm_server: ScriptedLLMServer,
) -> None:
    from labtui.core.answers.experiment_answers import RunAnalysis
    from labtui.core.errors import UnusableAnswer

    llm_server.default(SERVED, json.dumps({**ANALYSIS, "analysis": "...", "why": "..."}))
    with pytest.raises(UnusableAnswer) as info:
        make_llm(llm_server, Recorder(), reasks=1).ask_json(
            ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis
        )
    error = info.value
    assert (error.record, error.attempts, error.model) == ("run analysis", 2, MODEL)
    assert "every text field (analysis, why) is a placeholder ('...')" in error.problem
    assert f"{MODEL} gave no usable run analysis in 2 attempts" in error.message
    assert "stronger model for stage 'ideas'" in error.hint
    assert len(llm_server.requests) == 2


def test_a_reask_quotes_the_refused_field_and_samples_hotter_with_another_seed(
    llm_server: ScriptedLLMServer,
) -> None:
    from labtui.core.answers.experiment_answers import RunAnalysis

    events = Recorder()
    llm_server.script(SERVED, json.dumps({**ANALYSIS, "analysis": "..."}), json.dumps(ANALYSIS))
    make_llm(llm_server, events, temperature=0.2).ask_json(
        ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis
    )
    first, again = llm_server.requests
    assert first["temperature"] == 0.2 and "seed" not in first
    assert again["temperature"] == 0.5 and again["seed"] == 1
    reask = again["messages"][-1]["content"]
    assert "field 'analysis' is a placeholder ('...')" in reask
    assert "The refused field: 'analysis', where you wrote \"...\"" in reask
    (notice,) = events.of(Notice)
    assert notice.text.endswith("gave an unusable run analysis; asking again at temperature 0.5")


def test_the_same_answer_twice_in_a_row_is_named_a_loop(llm_server: ScriptedLLMServer) -> None:
    from labtui.core.answers.experiment_answers import RunAnalysis
    from labtui.core.errors import UnusableAnswer

    events = Recorder()
    looping = json.dumps({**ANALYSIS, "why": "..."})
    llm_server.script(SERVED, looping, " " + looping.replace(", ", ",\n  "), looping)
    with pytest.raises(UnusableAnswer):
        make_llm(llm_server, events, temperature=0.7, reasks=2).ask_json(
            ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis
        )
    assert [(r["temperature"], r.get("seed")) for r in llm_server.requests] == [
        (0.7, None),
        (1.0, 1),
        (1.2, 2),  # capped
    ]
    assert [n.text.removeprefix(f"{MODEL} ") for n in events.of(Notice)] == [
        "gave an unusable run analysis; asking again at temperature 1",
        "gave the same answer twice in a row (a loop); asking again at temperature 1.2",
    ]


# -- budget -----------------------------------------------------------------------------------


def test_budget_cap_stops_before_the_request(llm_server: ScriptedLLMServer) -> None:
    events = Recorder()
    llm_server.script(SERVED, "an expensive answer")
    # $1 per token: the first call costs dollars against a one-cent budget.
    model = make_llm(llm_server, events, budget=0.01, price_in=1e6, price_out=1e6)
    model.chat(MESSAGES)
    assert model.ledger.exhausted
    with pytest.raises(BudgetExceeded) as info:
        model.chat(MESSAGES)
    assert "[budget] usd" in info.value.hint and "of $0.01" in info.value.message
    assert len(llm_server.requests) == 1
    assert llm_server.errors == []
    (cost,) = events.of(CostUpdate)
    assert cost.total_cost_usd > cost.budget_usd == 0.01


def test_ledger_totals_per_stage_and_carry_over() -> None:
    events = Recorder()
    ledger = Ledger(1.0, events, spent_usd=0.25)
    ledger.record("ideas", "m", 10, 5, 0.1)
    ledger.record("ideas", "m", 1, 1, 0.05)
    ledger.record("review", "m", 2, 2, 0.2)
    assert ledger.stage_totals("ideas") == (11, 6, pytest.approx(0.15))
    assert ledger.stage_totals("plots") == (0, 0, 0.0)
    assert ledger.total_usd == pytest.approx(0.6)
    last = events.of(CostUpdate)[-1]
    assert (last.stage, last.stage_cost_usd, last.total_cost_usd) == (
        "review",
        pytest.approx(0.2),
        pytest.approx(0.6),
    )
    assert not ledger.exhausted
    ledger.record("review", "m", 0, 0, 0.4)
    with pytest.raises(BudgetExceeded):
        ledger.check()


def test_zero_budget_still_allows_free_models() -> None:
    ledger = Ledger(0.0, Recorder())
    ledger.record("ideas", "local", 100, 100, 0.0)
    ledger.check()
    ledger.record("ideas", "paid", 1, 1, 0.001)
    assert ledger.exhausted


# -- extract_json -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Here you go:\n```json\n{"a": 1}\n```\nHope it helps', {"a": 1}),
        ('```json\n{"a": 1}\n```\nrevised:\n```json\n{"a": 2}\n```', {"a": 2}),
        ('```json\n{"a": 1}\n```\n```json\n{"broken": }\n```', {"a": 1}),
        ('```\n[{"a": 1}]\n```', [{"a": 1}]),
        ('```json {"inline": true}```', {"inline": True}),
        ('Sure! The idea is {"name": "x", "n": [1, 2]} as requested.', {"name": "x", "n": [1, 2]}),
        ('{"s": "a } tricky { string with \\" quote", "o": {"p": "]"}}', None),
        ('<think>maybe {"a": 0}?</think>\n{"a": 3}', {"a": 3}),
        ('I reason {"draft": 1}</think>{"final": 2}', {"final": 2}),
        ('As shown in [1], the JSON is {"ideas": [{"n": 1}]}', {"ideas": [{"n": 1}]}),
        ("The values are [1, 2, 3].", [1, 2, 3]),
    ],
)
def test_extract_json_cases(text: str, expected: Any) -> None:
    if expected is None:  # the whole text is the JSON
        expected = json.loads(text)
    assert extract_json(text) == expected


@pytest.mark.parametrize(
    "text",
    ["no json here", "", "{not: json}", '<think>{"a": 1}</think> nothing after', '{"a": 1'],
)
def test_extract_json_none_raises(text: str) -> None:
    with pytest.raises(ValueError, match="no JSON object found in the reply"):
        extract_json(text)


def test_extract_json_does_not_repair_trailing_commas() -> None:
    with pytest.raises(ValueError, match="does not parse"):
        extract_json('{"ideas": [{"name": "a"},]}')


# -- model setup ------------------------------------------------------------------------------


def test_prepare_litellm_sets_offline_price_map(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.setattr(litellm_setup, "_prepared", False)  # where prepare_litellm keeps it
    prepare_litellm()
    prepare_litellm()  # idempotent
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    import litellm

    assert litellm.suppress_debug_info is True
    assert litellm.telemetry is False


def test_register_model_adds_local_model_at_zero_price() -> None:
    register_model(ModelSpec(name="openai/labtui-local-test", api_base="http://127.0.0.1:9/v1"))
    import litellm

    entry = litellm.model_cost["openai/labtui-local-test"]
    assert entry["input_cost_per_token"] == 0 and entry["output_cost_per_token"] == 0
    assert entry["max_input_tokens"] > 0 and entry["litellm_provider"] == "openai"


def test_register_model_keeps_hosted_prices() -> None:
    import litellm

    prepare_litellm()
    before = dict(litellm.model_cost["gpt-4o-mini"])
    register_model(ModelSpec(name="openai/gpt-4o-mini", input_usd_per_mtok=999.0))
    assert litellm.model_cost["gpt-4o-mini"] == before
    assert "openai/gpt-4o-mini" not in litellm.model_cost


def test_check_model_names_missing_env_var_without_values(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-ant-secret-value-123"
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("LABTUI_TEST_NO_SUCH_KEY", raising=False)
    monkeypatch.setenv("OTHER_SECRET", secret)
    spec = ModelSpec(
        name="anthropic/claude-3-5-haiku-20241022", api_key_env="LABTUI_TEST_NO_SUCH_KEY"
    )
    (problem,) = check_model(spec)
    assert "ANTHROPIC_API_KEY" in problem and spec.name in problem
    assert secret not in problem
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    assert check_model(spec) == []


def test_check_model_accepts_key_in_configured_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("LABTUI_TEST_KEY", "k-123")
    assert check_model(ModelSpec(name="anthropic/claude-x", api_key_env="LABTUI_TEST_KEY")) == []


def test_check_model_rejects_unroutable_name(capfd: pytest.CaptureFixture[str]) -> None:
    (problem,) = check_model(ModelSpec(name="qwen2.5"))
    assert capfd.readouterr() == ("", "")
    assert "'qwen2.5' is not a litellm model string" in problem
    assert "openai/qwen2.5" in problem


def test_check_model_local_server_needs_no_key(llm_server: ScriptedLLMServer) -> None:
    spec = ModelSpec(name=MODEL, api_base=llm_server.url, api_key_env="LABTUI_TEST_NO_SUCH_KEY")
    assert check_model(spec) == []


def test_import_does_not_load_litellm() -> None:
    """A fresh interpreter: importing the module must not pay for litellm's import."""
    code = (
        "import sys, labtui.core.llm.client\n"
        "assert 'litellm' not in sys.modules, 'litellm imported at module load'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""


# Recorded from llama-cpp-python's server (0.3.36) on 127.0.0.1, asked with a json_schema
# response_format: it answers HTTP 500 with this message (the traceback part left out).
LLAMA_CPP_PYTHON_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}"
)


def test_a_500_that_names_response_format_is_a_rejection_not_a_retry(
    llm_server: ScriptedLLMServer,
) -> None:
    from labtui.core.answers.experiment_answers import RunAnalysis

    llm_server.script(SERVED, Fault(status=500, message=LLAMA_CPP_PYTHON_500), json.dumps(ANALYSIS))
    model = make_llm(llm_server, Recorder())
    assert model.ask_json(ANALYSIS_PROMPT, parse_analysis, schema=RunAnalysis).next == "continue"
    assert _format_types(llm_server) == ["json_schema", "json_object"]


def test_a_run_on_reply_without_json_is_not_quoted_back(llm_server: ScriptedLLMServer) -> None:
    # Recorded (qwen15_moons_noise.jsonl, a conclusion): 1,600 tokens ending in a loop of
    # "\begin{thebibliographykey}" and no JSON; quoted back, it primed the same loop twice more.
    loop = exchanges("qwen15_moons_noise")[1]["reply"]
    assert loop.count("thebibliographykey") > 5 and len(loop) > 2000
    llm_server.script(SERVED, loop, '{"Overall": 6}')
    assert make_llm(llm_server, Recorder()).ask_json(MESSAGES, parse_score) == 6
    second = llm_server.requests[1]["messages"]
    assert second[: len(MESSAGES)] == MESSAGES and len(second) == len(MESSAGES) + 1
    assert all(m["content"] != loop for m in second)
    assert "ran on for" in second[-1]["content"] and "JSON" in second[-1]["content"]


def test_a_real_small_models_verdict_with_a_raw_line_break_in_a_string_is_read(
    llm_server: ScriptedLLMServer,
) -> None:
    # Recorded (qwen15_moons_line_break_verdict_novelty.jsonl, moons b8): the verdict's reason
    # held a raw control character; strict JSON refused it ("Invalid control character") and
    # the idea stayed unchecked after 5 papers were seen.
    (reply,) = replies("qwen15_moons_line_break_verdict_novelty")
    with pytest.raises(ValueError, match="Invalid control character"):
        extract_json(reply)
    llm_server.script(SERVED, reply)
    answer = make_llm(llm_server, Recorder()).ask_json(MESSAGES, lambda data: data, reasks=0)
    assert answer["decision"] == "not_novel" and "1412.6980" in answer["reason"]
