"""`labtui model` (status, use, serve, stop) and the headless set-up of labtui's own model: what a
researcher reads, bad input said with its fix, the set-up drawn before the run goes on. The server
is the TEST-ONLY stand-in (tests/support/own_model.py); nothing is built or fetched."""

from __future__ import annotations

import pytest
from conftest import run_labtui
from support.own_model import TINY_NAME, kill_ours, set_up_own_model
from support.tui_scenes import LOCAL_NOT_SET_UP, FakeSession, ScriptedSetUp, local_offer

from labtui.core.local_model.progress import Progress
from labtui.tui.commands.common import problems_after_local_set_up


def test_status_on_a_machine_where_nothing_is_set_up(tmp_path, own_model):
    result = run_labtui("model", "status", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "model: Qwen2.5-Coder-1.5B-Instruct",
        "weights: not fetched (from Hugging Face Hub, else the package index)",
        "runtime: not built (labtui model pull builds it)",
        "server: not running (started on demand)",
    ]


def test_use_refuses_what_is_not_a_gguf_file_with_the_fix(tmp_path, own_model):
    (tmp_path / "notes.txt").write_text("not a model\n", encoding="utf-8")
    for path, said in (("notes.txt", "is not a GGUF model file"), ("gone.gguf", "does not exist")):
        result = run_labtui("model", "use", path, cwd=tmp_path)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert said in result.stderr and "fix:" in result.stderr


def test_use_serve_and_stop_a_chosen_file(tmp_path, monkeypatch):
    set_up_own_model(tmp_path, monkeypatch)  # its file chosen as `labtui model use` chooses
    try:
        status = run_labtui("model", "status", cwd=tmp_path)
        assert f"model: {TINY_NAME}" in status.stdout and "recorded)" in status.stdout
        served = run_labtui("model", "serve", cwd=tmp_path)
        assert served.returncode == 0, served.stderr
        assert f"{TINY_NAME}: started at http://127.0.0.1:" in served.stdout
        again = run_labtui("model", "serve", cwd=tmp_path)
        assert "already running" in again.stdout
        assert "server: up at http://127.0.0.1:" in run_labtui("model", "status").stdout
        assert run_labtui("model", "stop", cwd=tmp_path).stdout.strip() == (
            "stopped the local model's server"
        )
        forgot = run_labtui("model", "use", "--forget", cwd=tmp_path)
        assert "labtui's own model is used again" in forgot.stdout
    finally:
        kill_ours(tmp_path)


def test_headless_sets_the_own_model_up_with_progress_then_goes_on(capsys):
    set_up = ScriptedSetUp()
    set_up.release.set()
    session = FakeSession(problems=[LOCAL_NOT_SET_UP], offer=local_offer(set_up))
    seen: list[Progress] = []

    def set_up_and_see(sink):
        set_up(lambda step: (seen.append(step), sink(step)))
        session._problems = []

    session._offer = local_offer(set_up_and_see)
    assert problems_after_local_set_up(session) == []
    assert [step.step for step in seen] == ["building the model server", "downloading the weights"]
    said = capsys.readouterr().err
    assert "setting up labtui's own local model Qwen2.5-Coder-1.5B-Instruct" in said
    assert "[models] local = false turns this off" in said


def test_headless_with_the_own_model_set_up_sets_nothing_up():
    session = FakeSession(problems=[], offer=None)
    assert problems_after_local_set_up(session) == []


@pytest.mark.parametrize("action", ["status", "stop"])
def test_with_the_own_model_turned_off_the_commands_still_answer(tmp_path, action):
    result = run_labtui("model", action, cwd=tmp_path)  # LABTUI_MODELS__LOCAL=false, no project
    assert result.returncode == 0 and "Traceback" not in result.stderr
