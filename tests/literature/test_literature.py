"""core.literature.arxiv with the arxiv package's feed parser against FakeArxiv (loopback, no network)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from support.fake_arxiv import FakeArxiv

from labtui.core import retry
from labtui.core.errors import LabtuiError
from labtui.core.events import Event, Notice
from labtui.core.latex.compile import compile_latex, tool_available
from labtui.core.literature import fulltext as paper_fulltext
from labtui.core.literature import http_service
from labtui.core.literature.arxiv import Literature
from labtui.core.literature.http_service import LiteratureUnavailable
from labtui.core.literature.record import Paper, format_papers
from labtui.core.pdf.document import pdf_text


def backed_off(sleeps: list[float], bases: list[float]) -> bool:
    """Each wait is its base stretched by the retry policy's jitter (up to half again)."""
    return len(sleeps) == len(bases) and all(
        b <= s <= b * (1 + retry.RetryPolicy.jitter) for s, b in zip(sleeps, bases, strict=True)
    )


@pytest.fixture
def server() -> Iterator[FakeArxiv]:
    with FakeArxiv() as fake:
        yield fake


@pytest.fixture(autouse=True)
def fresh_rate_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as if no request had been made in this process."""
    monkeypatch.setattr(http_service, "_last_request_at", {})


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    recorded: list[float] = []
    monkeypatch.setattr(time, "sleep", recorded.append)
    return recorded


def make(cache: Path, server: FakeArxiv, **kwargs: object) -> Literature:
    options: dict[str, object] = {"delay_s": 0.0, "backoff_s": 0.0}
    options.update(kwargs)
    return Literature(cache, base_url=server.url, **options)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# search
# --------------------------------------------------------------------------------------------


def test_search_returns_papers_with_arxiv_metadata(tmp_path: Path, server: FakeArxiv) -> None:
    papers = make(tmp_path, server).search("adam optimizer", max_results=5)

    assert [p.arxiv_id for p in papers] == ["1412.6980v9", "1711.05101v3"]
    adam = papers[0]
    assert adam.base_id == "1412.6980"
    assert adam.title == "Adam: A Method for Stochastic Optimization"
    assert adam.authors == ["Diederik P. Kingma", "Jimmy Ba"]
    assert adam.year == 2014  # the first version's year, not the latest revision's (2017)
    assert adam.primary_category == "cs.LG"
    assert adam.url == "https://arxiv.org/abs/1412.6980v9"
    assert adam.abstract.startswith("We introduce Adam, an algorithm for first-order")
    assert "\n" not in adam.abstract and "  " not in adam.abstract  # arXiv's wrapping undone
    assert "hyper-parameters" in adam.abstract


def test_search_sends_the_query_the_arxiv_api_expects(tmp_path: Path, server: FakeArxiv) -> None:
    papers = make(tmp_path, server).search("  two   moons mlp ", max_results=3)

    assert len(papers) == 3  # the recorded feed has five; arXiv pages by max_results
    assert server.hits == ["two moons mlp"]
    params = server.params[0]
    assert (params["max_results"], params["start"], params["sortBy"]) == ("3", "0", "relevance")


def test_an_identical_search_is_answered_from_the_cache(tmp_path: Path, server: FakeArxiv) -> None:
    first = make(tmp_path, server).search("batch normalization", max_results=2)
    assert len(server.hits) == 1

    again = make(tmp_path, server).search("batch normalization", max_results=2)  # a resumed run
    assert again == first and len(server.hits) == 1

    cached = list((tmp_path / "arxiv").glob("*.json"))
    assert len(cached) == 1
    record = json.loads(cached[0].read_text())
    assert record["query"] == "batch normalization" and record["max_results"] == 2

    make(tmp_path, server).search("batch normalization", max_results=4)  # another search
    assert len(server.hits) == 2


def test_a_damaged_cache_file_is_a_miss(tmp_path: Path, server: FakeArxiv) -> None:
    lit = make(tmp_path, server)
    lit.search("mixup", max_results=2)
    for path in (tmp_path / "arxiv").glob("*.json"):
        path.write_text("{ half a file")
    assert len(lit.search("mixup", max_results=2)) == 2
    assert len(server.hits) == 2


def test_no_results_is_an_answer_and_is_cached(tmp_path: Path, server: FakeArxiv) -> None:
    lit = make(tmp_path, server)
    assert lit.search("quantum chromodynamics lattice", max_results=5) == []
    assert lit.search("quantum chromodynamics lattice", max_results=5) == []
    assert len(server.hits) == 1
    assert lit.search("   ") == [] and len(server.hits) == 1  # nothing to ask


def test_503_twice_then_success_is_retried_with_backoff(
    tmp_path: Path, server: FakeArxiv, sleeps: list[float]
) -> None:
    notices: list[Event] = []
    lit = make(tmp_path, server, backoff_s=2.0, emit=notices.append, stage="novelty")
    server.fail_next(status=503, times=2)

    papers = lit.search("mixup regularization", max_results=3)

    assert [p.base_id for p in papers] == ["1710.09412", "1611.03530", "1711.05101"]
    assert server.hits == ["mixup regularization"] * 3
    assert backed_off(sleeps, [2.0, 4.0])  # exponential backoff
    assert [type(n) for n in notices] == [Notice, Notice]
    assert all(isinstance(n, Notice) and "HTTP 503" in n.text for n in notices)
    assert notices[0].stage == "novelty"


def test_retry_after_is_honoured(tmp_path: Path, server: FakeArxiv, sleeps: list[float]) -> None:
    server.fail_next(status=429, times=1, retry_after=7)
    assert make(tmp_path, server, backoff_s=1.0).search("adam")
    assert sleeps == [7.0]


def test_arxiv_staying_down_raises_literature_unavailable(
    tmp_path: Path, server: FakeArxiv, sleeps: list[float]
) -> None:
    lit = make(tmp_path, server, retries=2)
    server.fail_next(status=503, times=100)

    with pytest.raises(LiteratureUnavailable) as info:
        lit.search("adam")

    assert isinstance(info.value, LabtuiError)
    assert "HTTP 503" in info.value.message and "3 attempt" in info.value.message
    assert info.value.hint
    assert len(server.hits) == 3
    assert list((tmp_path / "arxiv").glob("*.json")) == []  # a failure is never cached

    server.clear_faults()
    assert lit.search("adam")  # the service is back: asked again, answered


def test_a_client_error_is_not_retried(tmp_path: Path, server: FakeArxiv) -> None:
    server.fail_next(status=400, times=1, body="Bad Request")
    with pytest.raises(LiteratureUnavailable, match="HTTP 400"):
        make(tmp_path, server).search("adam")
    assert len(server.hits) == 1


def test_unreachable_arxiv_raises_literature_unavailable(
    tmp_path: Path, sleeps: list[float]
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    lit = Literature(tmp_path, base_url=f"http://127.0.0.1:{port}/api/query", delay_s=0)
    with pytest.raises(LiteratureUnavailable, match="cannot reach arXiv"):
        lit.search("adam")
    assert len(sleeps) <= 1  # offline costs at most one retry


def test_a_throttling_page_is_not_mistaken_for_no_results(
    tmp_path: Path, server: FakeArxiv, sleeps: list[float]
) -> None:
    """arXiv throttles with a bare 'Rate exceeded.' body, which the client parses as empty."""
    server.fail_next(status=200, times=100, body="Rate exceeded.")
    lit = make(tmp_path, server, retries=1)
    with pytest.raises(LiteratureUnavailable, match="not an Atom feed"):
        lit.search("adam")
    assert len(server.hits) == 2
    assert list((tmp_path / "arxiv").glob("*.json")) == []


def test_an_arxiv_error_feed_is_a_rejected_query(tmp_path: Path, server: FakeArxiv) -> None:
    error_feed = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<feed xmlns="http://www.w3.org/2005/Atom">\n'
        "  <entry>\n"
        "    <id>http://arxiv.org/api/errors#malformed_query</id>\n"
        "    <title>Error</title>\n"
        "    <summary>malformed query</summary>\n"
        "    <updated>2024-05-06T00:00:00-04:00</updated>\n"
        "  </entry>\n"
        "</feed>\n"
    )
    server.fail_next(status=200, times=1, body=error_feed)
    with pytest.raises(LiteratureUnavailable, match="rejected the query: malformed query"):
        make(tmp_path, server).search("adam AND (")
    assert len(server.hits) == 1  # the same query would fail again: not retried


# --------------------------------------------------------------------------------------------
# rate limit
# --------------------------------------------------------------------------------------------


def test_requests_are_spaced_by_the_delay(
    tmp_path: Path, server: FakeArxiv, sleeps: list[float]
) -> None:
    lit = make(tmp_path, server, delay_s=3.0)
    lit.search("adam")
    assert sleeps == []  # nothing to wait for on the first request

    lit.search("mixup")
    assert len(sleeps) == 1 and 2.0 < sleeps[0] <= 3.0

    lit.search("adam")  # cache hit: no request, no wait
    assert len(sleeps) == 1


def test_the_delay_is_shared_by_every_instance(
    tmp_path: Path, server: FakeArxiv, sleeps: list[float]
) -> None:
    make(tmp_path / "a", server, delay_s=3.0).search("adam")
    make(tmp_path / "b", server, delay_s=3.0).search("adam")
    assert len(sleeps) == 1 and 2.0 < sleeps[0] <= 3.0


# --------------------------------------------------------------------------------------------
# full text
# --------------------------------------------------------------------------------------------

TRUNCATED = re.compile(r"\n\n\[… truncated: ([\d,]+) of ([\d,]+) characters\]$")


def adam(lit: Literature) -> Paper:
    return lit.search("adam optimizer", max_results=1)[0]


def pdf_bytes(build: Callable[[Any], None], **save: Any) -> bytes:
    """A one-page PDF that ``build(page)`` fills."""
    doc = pymupdf.open()
    build(doc.new_page())
    return doc.tobytes(**save)


def test_search_links_each_paper_to_its_pdf(tmp_path: Path, server: FakeArxiv) -> None:
    paper_ = adam(make(tmp_path, server))
    # the recorded feed's http://arxiv.org/pdf/ link, pointed at the fake by the fake itself
    assert paper_.pdf_url == f"http://127.0.0.1:{server.port}/pdf/1412.6980v9"


def test_full_text_is_extracted_up_to_the_references(tmp_path: Path, server: FakeArxiv) -> None:
    lit = make(tmp_path, server)
    text = lit.full_text(adam(lit))

    assert server.hits == ["adam optimizer", "/pdf/1412.6980v9"]
    assert text.startswith(
        "Warm-up Matters: A Small Study of Step Sizes for Adaptive Optimizers\n\n"
    )
    assert text.endswith("Larger models are left to future work.")  # no marker: it all fits
    paragraphs = text.split("\n\n")
    assert "1 Introduction" in paragraphs and "4 Conclusion" in paragraphs
    assert all("\n" not in p and "  " not in p for p in paragraphs)  # lines joined
    assert "carefully tuned schedule." in text  # "sched-/ule" mended
    assert "how long the warm-up has to be" in text  # a hyphen the paper writes is kept
    assert "the state-of-the-art recipes" in text  # a compound broken at its own hyphen
    for left_out in ("References", "Kingma and Jimmy Ba", "Appendix", "fixture paper", "\n\n2\n"):
        assert left_out not in text  # references, appendix, running header, page numbers


def test_full_text_is_truncated_at_a_paragraph_with_a_marker(
    tmp_path: Path, server: FakeArxiv
) -> None:
    lit = make(tmp_path, server)
    whole = lit.full_text(adam(lit))

    text = lit.full_text(adam(lit), max_chars=1200)

    marker = TRUNCATED.search(text)
    assert marker is not None, text[-120:]
    kept = text[: marker.start()]
    assert marker.group(1) == f"{len(kept):,}" and marker.group(2) == f"{len(whole):,}"
    assert 600 <= len(kept) <= 1200
    assert whole.startswith(kept) and whole[len(kept) : len(kept) + 2] == "\n\n"  # a paragraph end


def test_truncation_falls_back_to_a_sentence_end() -> None:
    text = "One sentence here. " * 40 + "And a last one without an end"
    cut = paper_fulltext.truncate_text(text, 100)
    assert cut.startswith("One sentence here. ") and cut.split("\n\n")[0].endswith("here.")
    assert cut.endswith(
        f"[… truncated: {len(cut.split(chr(10))[0]):,} of {len(text):,} characters]"
    )
    assert paper_fulltext.truncate_text("short", 100) == "short"


def test_an_early_references_heading_is_a_contents_list_not_the_end() -> None:
    text = "\n\n".join(
        ["Contents", "1 Method", "References", " ".join(["x"] * 200), "References", "[1] A."]
    )
    assert paper_fulltext._cut_references(text) == text.rsplit("\n\nReferences", 1)[0]
    assert paper_fulltext._cut_references("Intro\n\nReferences\n\n[1] A.") == (
        "Intro\n\nReferences\n\n[1] A."  # within the first 30%: kept
    )


def test_full_text_is_cached_by_paper_not_by_server(tmp_path: Path, server: FakeArxiv) -> None:
    lit = make(tmp_path, server)
    first = lit.full_text(adam(lit), max_chars=1500)
    assert (tmp_path / "arxiv_pdf" / "1412.6980.txt").is_file()

    with FakeArxiv() as mirror:  # a resumed run, another base URL, another length
        again = make(tmp_path, mirror)
        moved = Paper.from_dict({**adam(lit).to_dict(), "pdf_url": f"{mirror.origin}/pdf/x"})
        assert again.full_text(moved, max_chars=1500) == first
        assert again.full_text(moved, max_chars=100000).endswith("future work.")
        assert mirror.hits == []
    assert server.hits == ["adam optimizer", "/pdf/1412.6980v9"]


def test_pdf_429_honours_retry_after_up_to_a_cap(
    tmp_path: Path, server: FakeArxiv, sleeps: list[float]
) -> None:
    notices: list[Event] = []
    lit = make(tmp_path, server, backoff_s=1.0, emit=notices.append, stage="novelty")
    paper_ = adam(lit)
    server.fail_next(status=429, times=1, retry_after=7)
    server.fail_next(status=429, times=1, retry_after=3600)

    assert lit.full_text(paper_).startswith("Warm-up Matters")

    assert sleeps == [7.0, http_service.MAX_BACKOFF_S]
    assert server.hits[1:] == ["/pdf/1412.6980v9"] * 3
    assert all(isinstance(n, Notice) and "PDF download with HTTP 429" in n.text for n in notices)
    assert len(notices) == 2 and notices[0].stage == "novelty"


def test_pdf_outage_raises_literature_unavailable(
    tmp_path: Path, server: FakeArxiv, sleeps: list[float]
) -> None:
    lit = make(tmp_path, server, retries=2, backoff_s=2.0)
    paper_ = adam(lit)
    server.fail_next(status=503, times=100)

    with pytest.raises(LiteratureUnavailable) as info:
        lit.full_text(paper_)

    assert "arXiv PDF download failed: HTTP 503 after 3 attempt(s)" in info.value.message
    assert "without the paper's full text" in info.value.hint
    assert backed_off(sleeps, [2.0, 4.0])
    assert not (tmp_path / "arxiv_pdf").exists()  # a failure is never cached


def test_unreachable_pdf_host_raises_literature_unavailable(
    tmp_path: Path, sleeps: list[float]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    lit = Literature(tmp_path, delay_s=0)
    with pytest.raises(LiteratureUnavailable, match="cannot reach arXiv"):
        lit.full_text(paper(pdf_url=f"http://127.0.0.1:{port}/pdf/1412.6980v9"))
    assert len(sleeps) <= 1


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (404, "Not Found", "arXiv PDF download failed: HTTP 404 from http"),
        (200, "<html><body>Rate exceeded.</body></html>", "sent something that is not a PDF"),
    ],
    ids=["missing", "not-a-pdf"],
)
def test_a_pdf_answer_that_waiting_cannot_fix_is_a_clear_error(
    tmp_path: Path, server: FakeArxiv, status: int, body: str, message: str
) -> None:
    lit = make(tmp_path, server)
    paper_ = adam(lit)
    server.fail_next(status=status, times=1, body=body)

    with pytest.raises(LiteratureUnavailable) as info:
        lit.full_text(paper_)

    assert message in info.value.message and "1412.6980v9" in str(info.value)
    assert "without the paper's full text" in info.value.hint
    assert server.hits.count("/pdf/1412.6980v9") == 1  # not retried
    assert not (tmp_path / "arxiv_pdf").exists()


def test_a_non_pdf_body_is_quoted_in_the_error(tmp_path: Path, server: FakeArxiv) -> None:
    lit = make(tmp_path, server)
    paper_ = adam(lit)
    server.fail_next(status=200, body="Rate exceeded.")
    with pytest.raises(
        LiteratureUnavailable, match=r"text/plain; charset=utf-8: 'Rate exceeded\.'"
    ):
        lit.full_text(paper_)


def _image(page: Any) -> None:
    pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
    pixmap.clear_with(128)
    page.insert_image(pymupdf.Rect(72, 72, 300, 300), pixmap=pixmap)


@pytest.mark.parametrize(
    ("pdf", "reason"),
    [
        (lambda: pdf_bytes(lambda page: None), "has no extractable text"),
        (lambda: pdf_bytes(_image), "has only images (a scan without a text layer)"),
        (
            lambda: pdf_bytes(
                lambda page: page.insert_text((72, 72), "secret"),
                encryption=pymupdf.PDF_ENCRYPT_AES_256,
                user_pw="user",
                owner_pw="owner",
            ),
            "is encrypted",
        ),
        (lambda: b"%PDF-1.7\n% a header and nothing else\n", "is damaged and cannot be read"),
    ],
    ids=["empty", "image-only", "encrypted", "damaged"],
)
def test_a_pdf_without_text_is_a_clear_error(
    tmp_path: Path, server: FakeArxiv, pdf: Callable[[], bytes], reason: str
) -> None:
    server.pdfs["1412.6980"] = pdf()
    lit = make(tmp_path, server)
    with pytest.raises(LiteratureUnavailable) as info:
        lit.full_text(adam(lit))
    assert info.value.message.startswith(f"arXiv's PDF of 1412.6980v9 {reason}")
    assert info.value.hint
    assert server.hits.count("/pdf/1412.6980v9") == 1  # not retried: it would not change


def test_a_pdf_download_waits_its_turn_behind_a_search(
    tmp_path: Path, server: FakeArxiv, sleeps: list[float]
) -> None:
    lit = make(tmp_path, server, delay_s=3.0)
    paper_ = adam(lit)
    assert sleeps == []
    lit.full_text(paper_)
    assert len(sleeps) == 1 and 2.0 < sleeps[0] <= 3.0  # one gate for all of arXiv
    lit.full_text(paper_)  # cached: no request, no wait
    assert len(sleeps) == 1


def test_an_old_cache_entry_without_pdf_url_still_loads(tmp_path: Path, server: FakeArxiv) -> None:
    make(tmp_path, server).search("adam optimizer", max_results=2)
    (path,) = (tmp_path / "arxiv").glob("*.json")
    record = json.loads(path.read_text())
    for entry in record["papers"]:
        del entry["pdf_url"]  # as written before full text existed
    path.write_text(json.dumps(record))

    papers = make(tmp_path, server).search("adam optimizer", max_results=2)

    assert len(server.hits) == 1  # answered from that cache entry
    assert [p.pdf_url for p in papers] == [
        "https://arxiv.org/pdf/1412.6980v9",
        "https://arxiv.org/pdf/1711.05101v3",
    ]


def test_full_text_rejects_a_bad_length(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_chars must be at least 1, got 0"):
        Literature(tmp_path).full_text(paper(), max_chars=0)


def test_tidy_pages_mends_lines_and_drops_page_furniture() -> None:
    header = "Journal of Tests, Vol. 1"
    pages = [
        [f"{header}\n", "arXiv:2101.00001v2 [cs.LG] 3 Feb 2021\n", "An opti-\nmizer and a\n"],
        [f"{header}\n", "para-\n", "graph.\n", "Kullback-\nLeibler di\u00ad\nvergence.\n", "2\n"],
        [f"{header}\n", "Ref:\nReferences\n[1] A.\n", "3\n"],
    ]
    assert paper_fulltext._tidy_pages(pages) == (
        "An optimizer and a paragraph.\n\nKullback-Leibler divergence.\n\nRef:\n\nReferences\n\n[1] A."
    )


# --------------------------------------------------------------------------------------------
# Paper, BibTeX, prompts
# --------------------------------------------------------------------------------------------


def paper(**overrides: object) -> Paper:
    fields: dict[str, object] = {
        "arxiv_id": "1412.6980v9",
        "title": "Adam: A Method for Stochastic Optimization",
        "authors": ["Diederik P. Kingma", "Jimmy Ba"],
        "year": 2014,
        "abstract": "We introduce Adam.",
        "url": "https://arxiv.org/abs/1412.6980v9",
        "primary_category": "cs.LG",
    }
    fields.update(overrides)
    return Paper(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("authors", "title", "year", "key"),
    [
        (
            ["Diederik P. Kingma"],
            "Adam: A Method for Stochastic Optimization",
            2014,
            "kingma2014adam",
        ),
        (["Hongyi Zhang"], "mixup: Beyond Empirical Risk Minimization", 2017, "zhang2017mixup"),
        (
            ["Chiyuan Zhang"],
            "Understanding deep learning requires rethinking generalization",
            2016,
            "zhang2016understanding",
        ),
        (
            ["David Lopez-Paz"],
            "On the Power of $\\ell_1$ Regularization",
            2019,
            "lopezpaz2019power",
        ),
        (["Jürgen Schmidhuber"], "The Deep Learning Revolution", 2015, "schmidhuber2015deep"),
        (["Müller, Klaus-Robert"], "A Study", 2001, "muller2001study"),
        (["Martin Luther King Jr."], "Why We Can't Wait", 1964, "king1964cant"),
        ([], "A", 2020, "anon2020paper"),
    ],
)
def test_bibtex_key(authors: list[str], title: str, year: int, key: str) -> None:
    assert paper(authors=authors, title=title, year=year).bibtex_key() == key


def test_bibtex_entry_fields_and_escaping() -> None:
    entry = paper(
        title="Fast & Cheap: 50% Fewer Steps for $\\ell_1$ models_v2 #1",
        authors=["José Gómez", "Ana O'Neil"],
        arxiv_id="2101.00001v2",
        year=2021,
        primary_category="stat.ML",
    ).bibtex()
    assert entry.startswith("@misc{gomez2021fast,\n")
    assert (
        "title         = {{Fast \\& Cheap: 50\\% Fewer Steps for $\\ell_1$ models\\_v2 \\#1}}"
        in entry
    )
    assert "author        = {Jos{\\'e} G{\\'o}mez and Ana O'Neil}" in entry
    assert "eprint        = {2101.00001}" in entry  # versionless: cite the paper, not a revision
    assert "archivePrefix = {arXiv}" in entry and "primaryClass  = {stat.ML}" in entry
    assert "url           = {https://arxiv.org/abs/2101.00001}" in entry
    assert entry.rstrip().endswith("}")


def test_bibtex_escapes_unbalanced_braces_and_dollars() -> None:
    entry = paper(title="Cost in $ and a { brace", authors=["A B"]).bibtex()
    assert "Cost in \\$ and a \\{ brace" in entry


def test_paper_round_trips_through_a_dict() -> None:
    original = paper()
    data = original.to_dict()
    assert Paper.from_dict(json.loads(json.dumps(data))) == original
    assert Paper.from_dict({**data, "added_later": 1}) == original


def test_format_papers_numbers_papers_for_prompts() -> None:
    text = format_papers([paper(), paper(title="Second", abstract="word " * 400)], 100)
    lines = text.splitlines()
    assert lines[0] == (
        "0: Adam: A Method for Stochastic Optimization. Diederik P. Kingma, Jimmy Ba. 2014. "
        "arXiv:1412.6980v9"
    )
    assert lines[1] == "   Abstract: We introduce Adam."
    assert lines[3].startswith("1: Second.")
    assert lines[4].endswith("...") and len(lines[4]) <= len("   Abstract: ") + 104
    assert format_papers([]) == "No papers found."


@pytest.mark.skipif(
    not (tool_available("latexmk") or tool_available("pdflatex")), reason="TeX is not installed"
)
def test_bibtex_of_found_papers_compiles_with_natbib(tmp_path: Path, server: FakeArxiv) -> None:
    papers = make(tmp_path / "cache", server).search("small mlp two moons", max_results=5)
    tricky = paper(
        arxiv_id="2101.00001v1",
        title="Fast & Cheap: 50% Fewer Steps for $\\ell_1$ models_v2 #1 ~ Ünïcode",
        authors=["José Gómez", "Zoë Ångström"],
        year=2021,
    )
    papers.append(tricky)
    keys = [p.bibtex_key() for p in papers]
    assert len(set(keys)) == len(keys) == 6
    bib = "".join(p.bibtex() for p in papers)
    cites = " ".join(f"\\citet{{{k}}} and \\citep{{{k}}}." for k in keys)
    tex = tmp_path / "latex" / "template.tex"
    tex.parent.mkdir()
    tex.write_text(
        "\\begin{filecontents}{references.bib}\n" + bib + "\\end{filecontents}\n"
        "\\documentclass{article}\n\\usepackage[utf8]{inputenc}\n\\usepackage{natbib}\n"
        "\\begin{document}\n" + cites + "\n"
        "\\bibliographystyle{plainnat}\n\\bibliography{references}\n\\end{document}\n"
    )

    outcome = compile_latex(tex, tmp_path / "paper.pdf", timeout_s=60)

    assert outcome.ok, outcome.log_tail
    assert outcome.warnings == [], outcome.warnings  # every key resolved, bibtex happy
    text = " ".join(pdf_text(tmp_path / "paper.pdf").split())
    for expected in (
        "Kingma and Ba",
        "Ioffe and Szegedy",
        "Loshchilov and Hutter",
        "Zhang et al.",
        "Adam: A Method for Stochastic",
        "Fast & Cheap: 50% Fewer Steps",
    ):
        assert expected in text


def test_importing_the_modules_does_not_import_arxiv_or_pymupdf() -> None:
    code = (
        "import sys, labtui.core.literature.arxiv, labtui.core.latex.compile, labtui.core.literature.semantic_scholar\n"
        "heavy = {'arxiv', 'requests', 'pymupdf', 'fitz'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
