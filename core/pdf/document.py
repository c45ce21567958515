"""PDFs, opened in one place: PyMuPDF (imported only when a PDF is read) behind one context
manager that says plainly why a file cannot be read, and the text extraction flags labtui uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import LabtuiError


class UnreadablePdf(Exception):
    """A PDF that cannot be opened: ``reason`` is "missing", "damaged" or "encrypted"."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@contextmanager
def open_pdf(source: Path | bytes) -> Iterator[Any]:
    """The document in a file or in memory, closed after; UnreadablePdf says why it cannot be."""
    # PyMuPDF takes ~2 s to import: only reading a PDF needs it (the `fitz` alias is deprecated in
    # PyMuPDF 1.24+ and warns on import)
    import pymupdf  # noqa: PLC0415

    if not isinstance(source, bytes) and not Path(source).is_file():
        raise UnreadablePdf("missing", str(source))
    try:
        if isinstance(source, bytes):
            doc = pymupdf.open(stream=source, filetype="pdf")
        else:
            doc = pymupdf.open(Path(source))
    except Exception as exc:  # FileDataError, EmptyFileError, ...: all mean "not a PDF"
        raise UnreadablePdf("damaged", str(exc)) from exc
    try:
        if doc.needs_pass:
            raise UnreadablePdf("encrypted")
        yield doc
    finally:
        doc.close()


def text_flags(kind: str) -> int:
    """PyMuPDF's flags for ``page.get_text(kind)`` ("blocks" or "dict"): ligatures spelled out
    ("ﬁ" → "fi") so that words read and match, and no images."""
    import pymupdf  # noqa: PLC0415 -- ~2 s to import: only reading a PDF needs it

    base = pymupdf.TEXTFLAGS_DICT if kind == "dict" else pymupdf.TEXTFLAGS_BLOCKS
    return int(base & ~pymupdf.TEXT_PRESERVE_LIGATURES & ~pymupdf.TEXT_PRESERVE_IMAGES)


@contextmanager
def open_paper(pdf: Path) -> Iterator[Any]:
    """A paper labtui compiled or was given: LabtuiErrors that say what to do."""
    pdf = Path(pdf)
    try:
        with open_pdf(pdf) as doc:
            yield doc
    except UnreadablePdf as problem:
        if problem.reason == "missing":
            raise LabtuiError(f"PDF not found: {pdf}", hint="compile the paper first") from None
        if problem.reason == "encrypted":
            raise LabtuiError(
                f"{pdf.name} is encrypted and needs a password",
                hint="give labtui an unencrypted PDF",
            ) from None
        raise LabtuiError(
            f"cannot read {pdf.name}: it is empty or not a valid PDF ({problem.detail})",
            hint="recompile the paper; the compile log says why the PDF is broken",
        ) from problem


def page_count(pdf: Path) -> int:
    with open_paper(pdf) as doc:
        return int(doc.page_count)


def pdf_text(pdf: Path) -> str:
    """All text of a PDF, pages separated by form feeds; an error when there is none."""
    with open_paper(pdf) as doc:
        text = "\f".join(page.get_text() for page in doc)
    if not text.strip():
        raise LabtuiError(
            f"{Path(pdf).name} has no extractable text (scanned images only?)",
            hint="the reviewer needs a PDF with a text layer; compile it from LaTeX",
        )
    return text
