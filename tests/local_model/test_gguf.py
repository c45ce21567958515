"""A GGUF file's header read with the standard library, bounded against hostile files."""

from __future__ import annotations

import struct

import pytest
from support.fake_hub import ARRAY, STRING, UINT8, UINT32, gguf_bytes, gguf_entry, gguf_string

from labtui.core.errors import LabtuiError
from labtui.core.local_model.gguf import MAX_ENTRIES, read_gguf_header


def _file(tmp_path, data: bytes, name: str = "model.gguf"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_the_version_and_name_are_read_past_entries_of_every_kind(tmp_path):
    header = read_gguf_header(_file(tmp_path, gguf_bytes("Qwen2.5 Coder 1.5B Instruct GGUF")))
    assert header.version == 3
    assert header.tensor_count == 0
    assert header.entry_count == 8
    assert header.name == "Qwen2.5 Coder 1.5B Instruct GGUF"


def test_version_2_is_read_too(tmp_path):
    assert read_gguf_header(_file(tmp_path, gguf_bytes("Old", version=2))).version == 2


def test_reading_stops_at_the_name(tmp_path):
    """What follows general.name is never read: here it is not even GGUF."""
    entries = [gguf_entry("general.name", STRING, "First"), b"\xff" * 64]
    header = read_gguf_header(_file(tmp_path, gguf_bytes(entries=entries, count=40, padding=0)))
    assert header.name == "First"


def test_a_file_without_a_name_has_none(tmp_path):
    assert read_gguf_header(_file(tmp_path, gguf_bytes(None))).name is None


def test_a_file_that_is_not_gguf_is_named_with_what_it_begins_with(tmp_path):
    path = _file(tmp_path, b"PK\x03\x04 a zip file, not a model", "weights.bin")
    with pytest.raises(LabtuiError) as raised:
        read_gguf_header(path)
    assert str(path) in raised.value.message
    assert "not a GGUF model file" in raised.value.message
    assert "b'PK\\x03\\x04'" in raised.value.message
    assert "GGUF" in raised.value.hint


def test_an_empty_file_is_said_to_be_empty(tmp_path):
    with pytest.raises(LabtuiError, match="it is empty"):
        read_gguf_header(_file(tmp_path, b""))


@pytest.mark.parametrize("keep", [6, 12, 30, 60, 120])
def test_a_truncated_file_says_where_it_ends(tmp_path, keep):
    whole = gguf_bytes("Cut Short", padding=0)
    path = _file(tmp_path, whole[:keep])
    with pytest.raises(LabtuiError) as raised:
        read_gguf_header(path)
    assert f"{path} is a truncated GGUF file: it ends after {keep:,} bytes" in raised.value.message
    assert "incomplete" in raised.value.hint


def test_a_truncated_array_is_found_though_it_is_skipped_unread(tmp_path):
    entries = [gguf_entry("big", ARRAY, (UINT32, list(range(100))))]
    path = _file(tmp_path, gguf_bytes(entries=entries, padding=0)[:-40])
    with pytest.raises(LabtuiError, match=r"truncated GGUF file.*inside the array 'big'"):
        read_gguf_header(path)


def test_an_old_version_and_a_big_endian_file_are_refused_in_words(tmp_path):
    with pytest.raises(LabtuiError, match="GGUF version 1 \\(too old\\)"):
        read_gguf_header(_file(tmp_path, gguf_bytes(version=1)))
    big_endian = b"GGUF" + struct.pack(">I", 3) + gguf_bytes()[8:]
    with pytest.raises(LabtuiError, match="big-endian"):
        read_gguf_header(_file(tmp_path, big_endian))


def test_a_string_claiming_more_than_the_bound_is_refused_unread(tmp_path):
    hostile = gguf_bytes(entries=[struct.pack("<Q", 1 << 60) + b"key"], padding=0)
    with pytest.raises(LabtuiError, match="past the first 16 MB"):
        read_gguf_header(_file(tmp_path, hostile))


def test_a_file_claiming_endless_entries_is_read_only_to_the_bound(tmp_path):
    many = [gguf_entry(f"k{index}", UINT8, 1) for index in range(MAX_ENTRIES)]
    name_after = [*many, gguf_entry("general.name", STRING, "Too Far")]
    header = read_gguf_header(_file(tmp_path, gguf_bytes(entries=name_after, count=1 << 62)))
    assert header.name is None


def test_arrays_nested_without_end_are_refused(tmp_path):
    nesting = gguf_string("deep") + struct.pack("<I", ARRAY) + struct.pack("<IQ", ARRAY, 1) * 50
    with pytest.raises(LabtuiError, match="nests arrays"):
        read_gguf_header(_file(tmp_path, gguf_bytes(entries=[nesting])))


def test_an_unknown_value_type_is_refused(tmp_path):
    odd = gguf_string("odd") + struct.pack("<I", 99)
    with pytest.raises(LabtuiError, match="unknown value type 99"):
        read_gguf_header(_file(tmp_path, gguf_bytes(entries=[odd])))


def test_a_folder_cannot_be_read(tmp_path):
    with pytest.raises(LabtuiError, match=f"cannot read {tmp_path}"):
        read_gguf_header(tmp_path)
