"""`labtui doctor` on labtui's own model: with nothing configured it names the local model, where
its weights are and their checksum, its server, and times one answer; a second project on the same
machine is answered by the same server. Not set up, it says what `labtui model pull` would do and
calls nothing. The server is the TEST-ONLY stand-in (tests/support/own_model.py)."""

from __future__ import annotations

import re

import pytest
from support.own_model import TINY_NAME, kill_ours, set_up_own_model

from labtui.core.doctor import run_checks
from labtui.core.local_model import manage
from labtui.core.settings.config import Config, LocalChoice, save_config


def project(folder):
    folder.mkdir()
    save_config(Config(), folder)  # no model configured: labtui's own
    return folder


@pytest.fixture
def own(tmp_path, monkeypatch):
    model = set_up_own_model(tmp_path, monkeypatch)
    yield model
    kill_ours(tmp_path)


def test_doctor_shows_the_own_model_its_checksum_and_answer_time_and_one_server_serves_two_projects(
    tmp_path, own
):
    first = {check.name: check for check in run_checks(project(tmp_path / "a"))}
    local = first["model (local)"]
    assert local.ok and "labtui's own, for every stage" in local.detail
    assert f"model: {TINY_NAME}" in local.detail
    assert re.search(r"SHA-256 [0-9a-f]{12}… recorded", local.detail)
    answer = first["model answer"]
    assert answer.ok and "answered" in answer.detail
    assert re.search(r"at http://127\.0\.0\.1:\d+/v1 answered .* in \d+\.\d s", answer.detail)
    served = manage.running(LocalChoice(True))
    assert served is not None
    second = {check.name: check for check in run_checks(project(tmp_path / "b"))}
    assert f"up at {served.url} (pid {served.pid}" in second["model (local)"].detail
    assert manage.running(LocalChoice(True)) == served  # the same server: none started beside


def test_doctor_says_what_setting_up_the_own_model_does_and_calls_nothing(tmp_path, own_model):
    checks = {check.name: check for check in run_checks(project(tmp_path / "a"))}
    local = checks["model (local)"]
    assert not local.ok
    assert "weights: not fetched (from Hugging Face Hub, else the package index)" in local.detail
    assert "runtime: not built (labtui model pull builds it)" in local.detail
    assert "model answer" not in checks
    assert not any(name.startswith("model (") and name != "model (local)" for name in checks)
