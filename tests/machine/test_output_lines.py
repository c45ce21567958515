"""A child's output as lines: universal newlines across reads, floods cut into pieces, the tail
bounded; the same lines however the bytes were chunked."""

from __future__ import annotations

import random

from labtui.core.machine.output_lines import MAX_LINE_CHARS, LineSplitter, Tail


def split_in(chunks: list[bytes]) -> list[str]:
    splitter = LineSplitter()
    lines = [line for chunk in chunks for line in splitter.feed(chunk)]
    return lines + splitter.end()


def test_universal_newlines_whatever_the_chunks() -> None:
    data = b"a\r\nb\rc\nprogress 1\rprogress 2\r\n\nlast \xc3\xa9"
    expected = ["a", "b", "c", "progress 1", "progress 2", "", "last é"]
    assert split_in([data]) == expected
    rng = random.Random(7)
    for _ in range(200):  # '\r\n' and a UTF-8 character split across reads
        cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, 8)))
        chunks = [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        assert split_in(chunks) == expected


def test_only_newlines_break_lines_as_in_python_text_files() -> None:
    assert split_in([b"page\x0cbreak\x1crecord\n"]) == ["page\x0cbreak\x1crecord"]


def test_long_lines_and_a_newline_free_flood_come_in_pieces() -> None:
    long = "z" * (MAX_LINE_CHARS * 2 + 5)
    assert split_in([f"{long}\nshort\n".encode()]) == [
        "z" * MAX_LINE_CHARS,
        "z" * MAX_LINE_CHARS,
        "z" * 5,
        "short",
    ]
    splitter = LineSplitter()
    pieces = splitter.feed(b"w" * (MAX_LINE_CHARS * 3 + 1))  # no newline yet: it cannot wait
    assert pieces == ["w" * MAX_LINE_CHARS] * 3 and splitter.end() == ["w"]


def test_the_tail_keeps_the_newest_whole_lines_that_cover_its_limit() -> None:
    tail = Tail(10)
    tail.extend([f"line {i}" for i in range(1000)])
    assert tail.text() == "8\nline 999"  # the last 10 characters, from whole lines
    tail.extend(["x" * 50])
    assert tail.text() == "x" * 10
    empty = Tail(0)
    empty.extend(["anything"])
    assert empty.text() == ""
