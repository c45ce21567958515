"""The scripted OpenAI-compatible test server answers as scripted, over plain HTTP."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from support.scripted_llm import Fault, ScriptedLLMServer


def post(url: str, body: dict[str, Any], timeout: float = 5.0) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def chat_body(model: str, content: str = "hello there", **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": content}], **extra}


def sse_events(raw: bytes) -> list[Any]:
    lines = [line for line in raw.decode().split("\n") if line.startswith("data: ")]
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:]) for line in lines]


def test_url_is_local_and_ends_in_v1(llm_server: ScriptedLLMServer) -> None:
    assert llm_server.url.startswith("http://127.0.0.1:")
    assert llm_server.url.endswith("/v1")


def test_replies_in_fifo_order_per_model(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("a", "first", "second")
    llm_server.script("b", "other")
    texts = []
    for model in ("a", "b", "a"):
        status, raw = post(llm_server.url, chat_body(model))
        assert status == 200
        texts.append(json.loads(raw)["choices"][0]["message"]["content"])
    assert texts == ["first", "other", "second"]
    assert [r["model"] for r in llm_server.requests] == ["a", "b", "a"]
    assert len(llm_server.requests_for("a")) == 2
    assert llm_server.errors == []


def test_completion_has_deterministic_usage(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("m", "x" * 40)
    _, raw = post(llm_server.url, chat_body("m", content="y" * 100))
    data = json.loads(raw)
    assert data["object"] == "chat.completion"
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["usage"] == {"prompt_tokens": 26, "completion_tokens": 11, "total_tokens": 37}
    assert llm_server.usage == {"m": {"prompt_tokens": 26, "completion_tokens": 11}}


def test_callable_reply_sees_request_body(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("m", lambda body: body["messages"][-1]["content"].upper())
    _, raw = post(llm_server.url, chat_body("m", content="shout"))
    assert json.loads(raw)["choices"][0]["message"]["content"] == "SHOUT"


def test_exhausted_script_answers_400_and_records_error(llm_server: ScriptedLLMServer) -> None:
    status, raw = post(llm_server.url, chat_body("nobody"))
    assert status == 400
    assert "no scripted reply left for model 'nobody'" in json.loads(raw)["error"]["message"]
    assert llm_server.errors == ["no scripted reply left for model 'nobody'"]


def test_default_reply_when_queue_empty(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("m", "scripted")
    llm_server.default("m", "fallback")
    answers = [json.loads(post(llm_server.url, chat_body("m"))[1]) for _ in range(3)]
    assert [a["choices"][0]["message"]["content"] for a in answers] == [
        "scripted",
        "fallback",
        "fallback",
    ]
    assert llm_server.errors == []


def test_fault_status_consumes_item(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("m", Fault(status=429), Fault(status=500), "ok")
    first, raw = post(llm_server.url, chat_body("m"))
    assert first == 429
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"
    assert post(llm_server.url, chat_body("m"))[0] == 500
    status, raw = post(llm_server.url, chat_body("m"))
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "ok"
    assert llm_server.remaining("m") == 0


def test_fault_delay_then_reply(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("m", Fault(delay_s=0.5, then="late"), "fast")
    with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
        post(llm_server.url, chat_body("m"), timeout=0.1)
    status, raw = post(llm_server.url, chat_body("m"))
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "fast"


def test_streaming_chunks_join_to_reply_with_usage(llm_server: ScriptedLLMServer) -> None:
    reply = "a streamed reply of some length"
    llm_server.script("m", reply)
    body = chat_body("m", stream=True, stream_options={"include_usage": True})
    status, raw = post(llm_server.url, body)
    assert status == 200
    events = sse_events(raw)
    assert events[-1] == "[DONE]"
    chunks = [e for e in events[:-1] if e["choices"]]
    assert all(e["object"] == "chat.completion.chunk" for e in chunks)
    assert len(chunks) > 2
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in chunks) == reply
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == len(reply) // 4 + 1


def test_streaming_without_usage_option_has_no_usage_chunk(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("m", "hi")
    _, raw = post(llm_server.url, chat_body("m", stream=True))
    events = sse_events(raw)
    assert all("usage" not in e for e in events[:-1])


def test_models_endpoint_and_unknown_route(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("scripted-ideas", "x")
    with urllib.request.urlopen(llm_server.url + "/models", timeout=5) as response:
        ids = [m["id"] for m in json.loads(response.read())["data"]]
    assert ids == ["scripted-ideas"]
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(llm_server.url + "/nothing", timeout=5)
    assert info.value.code == 404


def test_accepts_path_without_v1(llm_server: ScriptedLLMServer) -> None:
    llm_server.script("m", "ok")
    root = llm_server.url.removesuffix("/v1")
    status, _ = post(root, chat_body("m"))
    assert status == 200


def test_concurrent_requests_each_get_one_reply(llm_server: ScriptedLLMServer) -> None:
    replies = [f"r{i}" for i in range(20)]
    llm_server.script("m", *replies)
    got: list[str] = []
    lock = threading.Lock()

    def call() -> None:
        _, raw = post(llm_server.url, chat_body("m"))
        with lock:
            got.append(json.loads(raw)["choices"][0]["message"]["content"])

    threads = [threading.Thread(target=call) for _ in replies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == sorted(replies)
    assert len(llm_server.requests) == 20 and llm_server.errors == []


def test_stop_is_idempotent_and_frees_port() -> None:
    server = ScriptedLLMServer().start()
    url = server.url
    server.stop()
    server.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/models", timeout=1)
