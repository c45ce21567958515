"""labtui's own model through the model client: with nothing configured, a call starts the
managed server on demand (said once), a second project's call uses the same server, and a server
that died — between calls or mid-answer — is started again and the answer asked again, once per
call. The server is the TEST-ONLY stand-in (tests/support/own_model.py)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from support.own_model import TINY_NAME, kill_ours, set_up_own_model
from support.standin_llama.llama_cpp.server.__main__ import ANSWER

from labtui.core.errors import LLMError
from labtui.core.events import Event, Notice
from labtui.core.llm import failures as llm_errors
from labtui.core.llm import local_server
from labtui.core.llm.budget import Ledger
from labtui.core.llm.client import LLM
from labtui.core.local_model import manage
from labtui.core.settings.config import Config, LocalChoice
from labtui.core.settings.sections import LLMSection

MESSAGES = [{"role": "user", "content": "Say hello."}]
OWN = LocalChoice(True)  # [models] local as labtui.toml has it by default


@pytest.fixture
def own(tmp_path, monkeypatch):
    monkeypatch.setattr(llm_errors, "BACKOFF_BASE_S", 0.01)
    monkeypatch.setattr(local_server, "_announced", set())  # said once per process: this test's
    model = set_up_own_model(tmp_path, monkeypatch)
    yield model
    kill_ours(tmp_path)


class Events(list[Event]):
    def __call__(self, event: Event) -> None:
        self.append(event)

    def notices(self) -> list[str]:
        return [event.text for event in self if isinstance(event, Notice)]


def own_llm(events: Events, config: Config | None = None) -> LLM:
    spec = (config or Config()).model_for("ideas")
    assert spec is not None and spec.local is not None  # nothing configured: labtui's own
    settings = LLMSection(first_token_s=120.0, idle_s=120.0, retries=3)
    return LLM(spec, settings, Ledger(1.0, events), events, stage="ideas")


def steer(weights: Path, **behaviour: Any) -> None:
    """What the stand-in does at its next request (its module docstring)."""
    Path(f"{weights}.standin.json").write_text(json.dumps(behaviour), encoding="utf-8")


def test_a_call_starts_the_server_on_demand_says_so_once_and_a_second_project_shares_it(own):
    events = Events()
    assert manage.running(OWN) is None
    assert own_llm(events).chat(MESSAGES) == ANSWER
    served = manage.running(OWN)
    assert served is not None and served.title == TINY_NAME
    using = [text for text in events.notices() if text.startswith("using the local model")]
    assert using == [
        f"using the local model {TINY_NAME} on 127.0.0.1:{served.port}; "
        "set LABTUI_MODEL to use another"
    ]
    other_project = Events()
    assert own_llm(other_project).chat(MESSAGES) == ANSWER
    assert manage.running(OWN) == served  # the same server, not another
    assert not any("starting" in text for text in other_project.notices())


def test_a_server_that_stopped_between_calls_is_started_again(own):
    events = Events()
    model = own_llm(events)
    model.chat(MESSAGES)
    first = manage.running(OWN)
    os.kill(first.pid, signal.SIGKILL)
    assert model.chat(MESSAGES) == ANSWER
    again = manage.running(OWN)
    assert again.pid != first.pid and again.port == first.port  # the same address
    assert any("had stopped: started again" in text for text in events.notices())


def test_a_server_that_dies_mid_answer_is_started_again_and_the_answer_asked_again(own):
    events = Events()
    model = own_llm(events)
    model.chat(MESSAGES)
    first = manage.running(OWN)
    steer(own.weights, crash=True)  # the running server dies in its next answer …

    def healed(event: Event) -> None:  # … and the one started after it answers
        events(event)
        if isinstance(event, Notice) and "starting the local model" in event.text:
            steer(own.weights)

    model.emit = healed
    assert model.chat(MESSAGES) == ANSWER
    assert manage.running(OWN).pid != first.pid


def test_a_server_that_dies_again_in_the_same_call_is_an_error_naming_its_log(own):
    events = Events()
    model = own_llm(events)
    model.chat(MESSAGES)
    steer(own.weights, crash=True)  # every server dies mid-answer
    with pytest.raises(LLMError) as failed:
        model.chat(MESSAGES)
    assert "stopped again while answering" in failed.value.message
    assert ".log" in failed.value.message and "labtui model" in failed.value.hint


def test_the_own_model_not_set_up_is_a_clear_error_not_a_download(tmp_path, own_model):
    events = Events()
    with pytest.raises(Exception) as failed:
        own_llm(events).chat(MESSAGES)
    assert "not set up on this machine" in str(failed.value)
    assert "labtui model pull" in str(failed.value)
    assert not (tmp_path / "home" / "cache" / "labtui" / "models").exists()
