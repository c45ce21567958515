"""Inactivity limits instead of a total timeout (core/llm/streaming.py), through labtui's own calls,
against the scripted server's slow replies; the model's speed in CostUpdate, the status bar and
`labtui doctor`.

Limits are fractions of a second here; a slow reply is several times slower than the limit it
must trip and several times faster than the limit it must not, and no test reads a clock.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from support.scripted_llm import ScriptedLLMServer, Slow

from labtui.core.doctor import _model_answers, ping_model
from labtui.core.errors import LLMError
from labtui.core.events import AgentChunk, AgentMessage, CostUpdate, Event, Notice
from labtui.core.llm import failures as llm_errors
from labtui.core.llm import server_idle, streaming
from labtui.core.llm.budget import Ledger
from labtui.core.llm.client import LLM
from labtui.core.llm.server_idle import note_abandoned, server_root, wait_for_abandoned
from labtui.core.llm.streaming import InactivityTimeout, Limits, consume_stream
from labtui.core.settings.config import Config, ModelSpec
from labtui.core.settings.sections import LLMSection

MODEL = "openai/scripted-slow"
SERVED = "scripted-slow"
MESSAGES = [{"role": "user", "content": "Say something slowly."}]


@pytest.fixture(autouse=True)
def quick_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_errors, "BACKOFF_BASE_S", 0.01)
    monkeypatch.setattr(server_idle, "IDLE_POLL_S", 0.02)
    monkeypatch.setattr(server_idle, "_abandoned", {})


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def notices(self) -> list[str]:
        return [n.text for n in self.of(Notice)]


def make_llm(server: ScriptedLLMServer, events: Recorder, **settings: Any) -> LLM:
    spec = ModelSpec(name=MODEL, api_base=server.url, api_key_env="LABTUI_TEST_NO_SUCH_KEY")
    return LLM(spec, LLMSection(**settings), Ledger(10.0, events), events, stage="ideas")


def warm_up(server: ScriptedLLMServer) -> None:
    """litellm's first call in a process imports for seconds: do it before limits are small."""
    server.script("warm-up", "ready")
    spec = ModelSpec(name="openai/warm-up", api_base=server.url)
    LLM(spec, LLMSection(), Ledger(10.0, Recorder()), Recorder(), stage="ideas").chat(MESSAGES)


# -- consume_stream on its own ----------------------------------------------------------------


def chunk(text: str) -> Any:
    return SimpleNamespace(choices=[SimpleNamespace(delta=SimpleNamespace(content=text))])


class StuckStream:
    """Yields its chunks, then blocks until closed, as a server that went quiet."""

    def __init__(self, *texts: str) -> None:
        self.texts = texts
        self.closed = threading.Event()

    def __iter__(self):
        yield from (chunk(text) for text in self.texts)
        self.closed.wait(30)

    def close(self) -> None:
        self.closed.set()


def test_no_first_token_in_time_closes_the_stream_and_says_which_limit() -> None:
    stream = StuckStream()
    with pytest.raises(InactivityTimeout) as caught:
        consume_stream(lambda: stream, Limits(first_token_s=0.1, idle_s=5), what="openai/m")
    assert isinstance(caught.value, TimeoutError)  # transient for every retry rule
    assert caught.value.setting == "first_token_s"
    assert "openai/m timed out: no first token within 0.1 s" in str(caught.value)
    assert "[llm] first_token_s" in str(caught.value)
    assert stream.closed.is_set()


def test_a_gap_after_the_first_token_closes_the_stream() -> None:
    stream, pieces = StuckStream("first words"), []
    with pytest.raises(InactivityTimeout) as caught:
        consume_stream(lambda: stream, Limits(first_token_s=5, idle_s=0.1), pieces.append)
    assert caught.value.setting == "idle_s" and "[llm] idle_s" in str(caught.value)
    assert pieces == ["first words"]
    assert stream.closed.is_set()


def test_an_error_of_the_request_reaches_the_caller() -> None:
    def refuse() -> Any:
        raise ConnectionError("refused")

    with pytest.raises(ConnectionError, match="refused"):
        consume_stream(refuse, Limits(first_token_s=5, idle_s=5))


def test_http_backstop_is_the_longer_limit_plus_a_margin() -> None:
    assert Limits(600, 120).http_timeout_s == 600 + streaming.HTTP_TIMEOUT_MARGIN_S
    assert Limits(0, 120).http_timeout_s is None  # 0: no limit, so no backstop either


# -- through LLM.chat and the scripted server --------------------------------------------------


def test_a_reply_that_keeps_coming_is_never_cut_off(llm_server: ScriptedLLMServer) -> None:
    # 12 pieces 0.1 s apart: longer in all than first_token_s + idle_s, never a gap near idle_s.
    warm_up(llm_server)
    reply = "A slow but steady answer from a small local model, arriving a few words at a time."
    llm_server.script(SERVED, Slow(reply, first_token_s=0.1, gap_s=0.1, chunks=12))
    events = Recorder()
    text = make_llm(llm_server, events, first_token_s=0.5, idle_s=0.5).chat(MESSAGES)
    assert text == reply
    assert "".join(c.text for c in events.of(AgentChunk)) == reply
    assert len(events.of(AgentChunk)) == 12
    assert events.notices() == []
    assert len(llm_server.requests_for(SERVED)) == 1 and llm_server.abandoned == []


@pytest.mark.parametrize(
    ("headers_first", "cancellable"),
    [(False, False), (True, False), (False, True), (True, True)],
    ids=["llama.cpp-headers-late", "headers-first", "cancels-on-close", "headers-first-cancels"],
)
def test_no_first_token_in_time_is_retried_only_once_the_server_is_idle(
    llm_server: ScriptedLLMServer, headers_first: bool, cancellable: bool
) -> None:
    warm_up(llm_server)
    late = Slow(
        "too late",
        first_token_s=1.2,
        gap_s=0.1,
        headers_first=headers_first,
        cancellable=cancellable,
    )
    llm_server.script(SERVED, late, "on time")
    events = Recorder()
    text = make_llm(llm_server, events, first_token_s=0.3, idle_s=3.0).chat(MESSAGES)
    assert text == "on time"
    first, *rest = events.notices()
    assert "no first token within 0.3 s" in first and "[llm] first_token_s" in first
    assert "retrying" in first
    assert any("waiting for the server" in n for n in rest)
    assert not any("still seems busy" in n for n in rest)
    assert llm_server.abandoned == [SERVED]  # the server saw the client leave mid-answer...
    assert llm_server.overlaps == []  # ...and got the retry only once it was idle again
    assert len(llm_server.requests_for(SERVED)) == 2
    # A server that watches its connection stops reading the prompt as soon as labtui gives up,
    # even before it sent any response (llama.cpp sends its headers with the first token).
    assert llm_server.cancelled == ([SERVED] if cancellable else [])
    assert [m.text for m in events.of(AgentMessage)] == ["on time"]


def test_a_gap_longer_than_idle_s_cuts_the_reply_off(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, Slow("Three words, then silence" * 3, gap_s=1.5, chunks=3))
    events = Recorder()
    model = make_llm(llm_server, events, first_token_s=3.0, idle_s=0.3, retries=0)
    with pytest.raises(LLMError) as caught:
        model.chat(MESSAGES)
    assert "no token for 0.3 s after the reply began" in caught.value.message
    assert "[llm] idle_s" in caught.value.hint
    assert len(events.of(AgentChunk)) == 1  # the reply was shown while it came
    assert events.of(CostUpdate) == []


def test_cost_update_carries_the_calls_timing(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, Slow("Some answer with a handful of tokens.", 0.05, 0.05, 4))
    events = Recorder()
    make_llm(llm_server, events).chat(MESSAGES)
    (cost,) = events.of(CostUpdate)
    assert 0 < cost.first_token_s <= cost.seconds
    assert cost.prompt_tps > 0 and cost.output_tps > 0


def test_unstreamed_calls_book_their_total_time_only(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, "whole")
    events = Recorder()
    make_llm(llm_server, events).chat(MESSAGES, stream=False)
    (cost,) = events.of(CostUpdate)
    assert cost.first_token_s == 0 and cost.seconds > 0 and cost.prompt_tps == 0


# -- waiting for a server that may still be busy ------------------------------------------------


def test_a_server_that_cannot_say_gets_a_bounded_cooldown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_idle, "COOLDOWN_S", 0.05)
    notices: list[str] = []
    with ScriptedLLMServer(slots_route=False) as server:  # like llama-cpp-python: no /slots
        note_abandoned(server.url)
        wait_for_abandoned(server.url, Limits(5, 5), notices.append)
        wait_for_abandoned(server.url, Limits(5, 5), notices.append)  # done: no second wait
    assert len(notices) == 1 and "waiting for the server" in notices[0]


def test_no_wait_without_an_abandoned_request(llm_server: ScriptedLLMServer) -> None:
    notices: list[str] = []
    wait_for_abandoned(llm_server.url, Limits(5, 5), notices.append)
    wait_for_abandoned("", Limits(5, 5), notices.append)  # hosted: no api_base, never waits
    assert notices == []


def test_server_root_and_slot_states() -> None:
    assert server_root("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080"
    assert server_root("http://host:11434") == "http://host:11434"

    def answer(status: int, body: Any) -> Any:
        return SimpleNamespace(status_code=status, json=lambda: body)

    busy = server_idle._slots_busy
    assert busy(answer(200, [{"is_processing": True}, {"is_processing": False}])) is False
    assert busy(answer(200, [{"is_processing": True}])) is True
    assert busy(answer(200, [{"id": 0, "state": 1}])) is True  # older llama.cpp
    assert busy(answer(501, {"error": "slots disabled"})) is None
    assert busy(answer(200, {"status": "ok"})) is None


# -- the speed, shown -------------------------------------------------------------------------


def test_doctor_times_one_tiny_answer(llm_server: ScriptedLLMServer) -> None:
    llm_server.script(SERVED, Slow("ok", first_token_s=0.05, gap_s=0.05, chunks=2))
    spec = ModelSpec(name=MODEL, api_base=llm_server.url)
    check = ping_model(spec, LLMSection())
    assert check.ok, check.detail
    assert f"{MODEL} at {llm_server.url} answered 'ok' in " in check.detail
    assert "first token" in check.detail and "tok/s" in check.detail
    (request,) = llm_server.requests
    assert request["max_tokens"] <= 16 and "ok" in request["messages"][-1]["content"]


def test_doctor_says_clearly_when_a_model_does_not_answer(unused_port_url: str) -> None:
    spec = ModelSpec(name=MODEL, api_base=unused_port_url)
    check = ping_model(spec, LLMSection(retries=4))
    assert not check.ok and check.required
    assert "connection failed" in check.detail and "fix:" in check.detail
    assert "failed 1 times" in check.detail  # no retries in the doctor


def test_doctor_calls_no_model_when_none_is_configured() -> None:
    assert _model_answers(Config()) == []


def test_doctor_calls_each_distinct_model_once(llm_server: ScriptedLLMServer) -> None:
    config = Config()
    config.models.default = MODEL
    config.models.api_base = llm_server.url
    config.models.review = "openai/scripted-reviewer"
    llm_server.script(SERVED, "ok")
    llm_server.script("scripted-reviewer", "ok")
    checks = _model_answers(config)
    assert [c.ok for c in checks] == [True, True]
    assert len(llm_server.requests) == 2


@pytest.fixture
def unused_port_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def cost(**timing: float) -> CostUpdate:
    return CostUpdate(
        stage="ideas",
        model=MODEL,
        tokens_in=3100,
        tokens_out=98,
        cost_usd=0.0,
        stage_tokens_in=3100,
        stage_tokens_out=98,
        stage_cost_usd=0.0,
        total_cost_usd=0.0,
        budget_usd=10.0,
        **timing,
    )


def test_the_status_bar_shows_the_last_measured_speed() -> None:
    from labtui.tui.status import Progress, summary_line

    progress = Progress(budget_usd=10.0)
    progress.apply(cost())
    before = str(summary_line("p", progress, elapsed_s=0))
    assert "tok/s" not in before  # nothing measured yet: the line is as it always was
    progress.apply(cost(first_token_s=100.0, seconds=110.0))
    line = str(summary_line("p", progress, elapsed_s=0))
    assert "in 31 tok/s · out 9.8 tok/s" in line
    progress.apply(cost())  # an unmeasured call keeps the last measured speed
    assert "in 31 tok/s · out 9.8 tok/s" in str(summary_line("p", progress, elapsed_s=0))
