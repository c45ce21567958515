"""One paper record whichever service found it, and one search across the services a project
has: arXiv always, Semantic Scholar when ``S2_API_KEY`` is set. The literature review and the
citation rounds both show the model these records and cite from them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..latex.bibliography import entry_key
from .http_service import LiteratureUnavailable
from .record import Paper

if TYPE_CHECKING:
    from ..stage_context import StageContext
    from .semantic_scholar import S2Paper


@dataclass(frozen=True)
class Found:
    """A paper as the review keeps it, whichever service found it: arXiv (citable by its
    eprint, full text readable) or Semantic Scholar (with citation counts and its BibTeX)."""

    key: str  # the id the agent uses: a versionless arXiv id, or "S2:<paper id>"
    title: str
    authors: list[str]
    year: int
    abstract: str
    url: str
    bibtex_key: str
    bibtex: str
    citations: int | None = None  # from Semantic Scholar, when it was asked
    arxiv: Paper | None = None  # for the full text

    @classmethod
    def from_arxiv(cls, paper: Paper) -> Found:
        return cls(
            paper.base_id, paper.title, list(paper.authors), paper.year, paper.abstract,
            paper.url, paper.bibtex_key(), paper.bibtex(), arxiv=paper,
        )  # fmt: skip

    @classmethod
    def from_s2(cls, paper: S2Paper) -> Found:
        arxiv = None
        if paper.arxiv_id:
            arxiv = Paper(
                paper.arxiv_id, paper.title, paper.authors, paper.year, paper.abstract,
                f"https://arxiv.org/abs/{paper.arxiv_id}", "",
            )  # fmt: skip
        key = f"S2:{paper.paper_id}" if arxiv is None else arxiv.base_id
        entry = paper.bibtex or (arxiv.bibtex() if arxiv else "")
        cite_key = entry_key(entry) or (arxiv.bibtex_key() if arxiv else "")
        return cls(
            key, paper.title, paper.authors, paper.year, paper.abstract, paper.url, cite_key,
            entry, citations=paper.citation_count, arxiv=arxiv,
        )  # fmt: skip

    def with_citations_of(self, other: Found) -> Found:
        """This record, with the citation count ``other`` (the same paper, found by the other
        service) knows and this one does not."""
        if self.citations is None and other.citations is not None:
            return replace(self, citations=other.citations)
        return self

    def listing(self, index: int) -> str:
        authors = ", ".join(self.authors[:3]) + (", et al" if len(self.authors) > 3 else "")
        cited = f" Cited by {self.citations}." if self.citations is not None else ""
        abstract = " ".join(self.abstract.split())[:600] or "(no abstract)"
        head = f"{index}: {self.title}. {authors or 'Unknown authors'}. {self.year}.{cited}"
        return f"{head} id {self.key}\n   Abstract: {abstract}"


def search_all(ctx: StageContext, query: str) -> tuple[list[Found], list[str]]:
    """Papers for ``query`` from every service the project has, one record per paper (a
    paper both services know keeps arXiv's record and gains the citation count), and a line
    per service that could not answer (each also said as a Notice)."""
    limit = ctx.config.literature.max_results
    services: list[tuple[str, Any, Any]] = [("arXiv", ctx.literature().search, Found.from_arxiv)]
    scholar = ctx.semantic_scholar()
    if scholar is not None:
        services.append(("Semantic Scholar", scholar.search, Found.from_s2))
    found: dict[str, Found] = {}
    down: list[str] = []
    for service, search, adapt in services:
        try:
            results = search(query, limit)
        except LiteratureUnavailable as exc:
            ctx.say(f"⚠ {service} search unavailable: {exc.message}")
            down.append(f"{service}: {exc.message}")
            continue
        for paper in map(adapt, results):
            known = found.get(paper.key)
            found[paper.key] = paper if known is None else known.with_citations_of(paper)
    return list(found.values()), down
