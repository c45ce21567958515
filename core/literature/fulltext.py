"""A downloaded paper's readable text: paragraphs from the PDF's text blocks, de-hyphenated,
without running heads, page numbers and arXiv's side stamp, up to its References; cut for a
prompt at a paragraph or sentence end with a marker that says how much was left out.
"""

from __future__ import annotations

import re

from ..pdf.document import UnreadablePdf, open_pdf, text_flags
from .http_service import LiteratureUnavailable

# A References heading earlier than this share of the text is a table of contents, not the end.
REFERENCES_MIN_SHARE = 0.3

_REFERENCES_HEADING = re.compile(
    r"(?:(?:\d{1,2}|[IVX]{1,4})\.?\s+)?"
    r"(?:references(?:\s+and\s+notes)?|bibliography|literature\s+cited|works\s+cited)[.:]?",
    re.IGNORECASE,
)
_ARXIV_STAMP = re.compile(r"arXiv:\S+\s+\[[^\]]+\]\s+\d{1,2}\s+\w{3}\s+\d{4}")
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_LINE_END_HYPHEN = re.compile(r"([^\W\d_]+)-\n([^\W\d_]+)")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]?(?=\s)")


def pdf_to_text(data: bytes, label: str = "the PDF") -> str:
    """The readable text of a PDF: paragraphs, de-hyphenated, up to a References heading.

    Running headers, page numbers and arXiv's side stamp are left out. Raises
    LiteratureUnavailable saying why when there is no text: damaged, encrypted, no pages, or
    only images (a scan). ``label`` names the PDF in those errors.
    """
    hint = "the stage goes on without the paper's full text"
    try:
        with open_pdf(data) as doc:
            if doc.page_count == 0:
                raise LiteratureUnavailable(f"{label} has no pages", hint)
            flags = text_flags("blocks")
            pages = [
                [block[4] for block in page.get_text("blocks", flags=flags) if block[6] == 0]
                for page in doc
            ]
            text = _tidy_pages(pages)
            scanned = not text and any(page.get_images() for page in doc)
    except UnreadablePdf as problem:
        if problem.reason == "encrypted":
            raise LiteratureUnavailable(
                f"{label} is encrypted (it needs a password)", hint
            ) from None
        raise LiteratureUnavailable(
            f"{label} is damaged and cannot be read ({problem.detail})", hint
        ) from problem
    except RuntimeError as err:
        raise LiteratureUnavailable(f"{label} is damaged ({err})", hint) from err
    if scanned:
        raise LiteratureUnavailable(
            f"{label} has only images (a scan without a text layer): no text to read", hint
        )
    if not text:
        raise LiteratureUnavailable(f"{label} has no extractable text (its pages are empty)", hint)
    return _cut_references(text)


def _tidy_pages(pages: list[list[str]]) -> str:
    """Text blocks of each page (as PDF extraction gives them) to paragraphs split by blank lines.

    Lines of a block are joined, and so are blocks that a column or page break split; words
    hyphenated across a line end are mended (a hyphen the document writes elsewhere, as in
    "warm-up", is kept), and a References heading becomes a paragraph of its own even when the
    PDF glued it to the first reference.
    """
    running = _running_lines(pages)
    paragraphs: list[str] = []
    for blocks in pages:
        for block in blocks:
            lines = [" ".join(line.split()) for line in block.replace("\u00ad\n", "").splitlines()]
            lines = [line.replace("\u00ad", "") for line in lines if line]
            if len(lines) == 1 and _is_page_furniture(lines[0], running):
                continue
            current: list[str] = []
            for line in lines:
                if _is_references_heading(line):
                    paragraphs += ["\n".join(current), line] if current else [line]
                    current = []
                else:
                    current.append(line)
            if current:
                paragraphs.append("\n".join(current))
    # A paragraph that a column or page break split goes on in lowercase: join it again.
    joined: list[str] = []
    for paragraph in paragraphs:
        if joined and paragraph[:1].islower() and not joined[-1].endswith((".", "!", "?", ":")):
            joined[-1] += "\n" + paragraph
        else:
            joined.append(paragraph)
    raw = "\n\n".join(joined)
    vocabulary = {word.lower() for word in _WORD.findall(raw)}

    def mend(match: re.Match[str]) -> str:
        head, tail = match.groups()
        compound = match.start() > 0 and raw[match.start() - 1] == "-"  # "state-of-\nthe-art"
        if (
            compound
            or tail[0].isupper()
            or (
                f"{head}-{tail}".lower() in vocabulary and f"{head}{tail}".lower() not in vocabulary
            )
        ):
            return f"{head}-{tail}"
        return head + tail

    mended = _LINE_END_HYPHEN.sub(mend, raw)
    return "\n\n".join(p for p in (" ".join(p.split()) for p in mended.split("\n\n")) if p)


def _running_lines(pages: list[list[str]]) -> set[str]:
    """One-line blocks repeated on most pages: running headers and footers (digits masked)."""
    if len(pages) < 3:
        return set()
    seen: dict[str, int] = {}
    for blocks in pages:
        keys = {_furniture_key(b) for b in blocks if b.strip() and "\n" not in b.strip()}
        for key in keys:
            seen[key] = seen.get(key, 0) + 1
    return {key for key, count in seen.items() if count > len(pages) / 2 and len(key) < 120}


def _furniture_key(line: str) -> str:
    return re.sub(r"\d+", "#", " ".join(line.split()))


def _is_page_furniture(line: str, running: set[str]) -> bool:
    return (
        line.isdigit()  # a page number
        or _ARXIV_STAMP.fullmatch(line) is not None
        or _furniture_key(line) in running
    )


def _is_references_heading(line: str) -> bool:
    # A capital (or a section number) first: a wrapped sentence can leave "references" alone.
    first = line[:1]
    return (first.isupper() or first.isdigit()) and _REFERENCES_HEADING.fullmatch(line) is not None


def _cut_references(text: str) -> str:
    """The text before its References heading, unless that comes in the first 30% (a contents
    list, or a paper that is mostly bibliography): then all of it."""
    floor = len(text) * REFERENCES_MIN_SHARE
    offset = 0
    for paragraph in text.split("\n\n"):
        if offset >= floor and _is_references_heading(paragraph):
            return text[:offset].rstrip()
        offset += len(paragraph) + 2
    return text


def truncate_text(text: str, max_chars: int) -> str:
    """``text`` if it fits in ``max_chars``, else its start cut at a paragraph end (or a sentence
    end, or a space) that keeps at least half, followed by a marker saying how much was kept.
    """
    if len(text) <= max_chars:
        return text
    window = text[:max_chars]
    floor = max_chars // 2
    cut = window.rfind("\n\n")
    if cut < floor:
        cut = max((m.end() for m in _SENTENCE_END.finditer(window)), default=-1)
    if cut < floor:
        cut = window.rfind(" ")
    if cut < floor:
        cut = max_chars
    kept = text[:cut].rstrip()
    return f"{kept}\n\n[… truncated: {len(kept):,} of {len(text):,} characters]"
