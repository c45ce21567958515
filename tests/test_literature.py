"""core.literature through the real arxiv client against FakeArxiv (loopback, no network)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_arxiv import FakeArxiv

from labtui.core import literature
from labtui.core.errors import LabtuiError
from labtui.core.events import Event, Notice
from labtui.core.latex import compile_latex, pdf_text, tool_available
from labtui.core.literature import Literature, LiteratureUnavailable, Paper, format_papers


@pytest.fixture
def server() -> Iterator[FakeArxiv]:
    with FakeArxiv() as fake:
        yield fake


@pytest.fixture(autouse=True)
def fresh_rate_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as if no request had been made in this process."""
    monkeypatch.setattr(literature, "_last_request_at", None)


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
    assert sleeps == [2.0, 4.0]  # exponential backoff
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

    server._faults.clear()
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
        "import sys, labtui.core.literature, labtui.core.latex\n"
        "heavy = {'arxiv', 'requests', 'pymupdf', 'fitz'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
