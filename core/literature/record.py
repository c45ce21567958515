"""An arXiv paper as labtui keeps it: its record (cached, journaled), its BibTeX entry (key and
fields escaped for TeX, written by labtui, never by a model), and the numbered list a prompt shows.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, fields
from typing import Any

_TITLE_STOPWORDS = frozenset(
    {
        "a", "an", "the", "on", "of", "for", "in", "to", "and", "or", "with", "via", "from",
        "by", "at", "as", "is", "are", "do", "does", "can", "towards", "toward", "how", "what",
        "why", "when", "where", "which", "we", "our", "into", "using",
    }
)  # fmt: skip
_NAME_SUFFIXES = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"})
# Letters that Unicode does not decompose into base + accent.
_ASCII_FOLD = str.maketrans(
    {
        "ß": "ss",
        "ø": "o",
        "Ø": "O",
        "ł": "l",
        "Ł": "L",
        "æ": "ae",
        "Æ": "AE",
        "đ": "d",
        "Đ": "D",
        "œ": "oe",
        "Œ": "OE",
        "ı": "i",
    }
)


def base_id(arxiv_id: str) -> str:
    """An arXiv id without its version or prefix: "arXiv:1412.6980v9" -> "1412.6980"."""
    return re.sub(r"v\d+$", "", str(arxiv_id).strip().removeprefix("arXiv:"))


@dataclass(frozen=True)
class Paper:
    """One arXiv paper as the stages need it: enough to prompt with and to cite."""

    arxiv_id: str  # as arXiv returns it, with its version: "1412.6980v9"
    title: str
    authors: list[str]
    year: int  # of the first version, which is how arXiv papers are cited
    abstract: str
    url: str
    primary_category: str
    pdf_url: str = ""  # as arXiv links it; older caches lack it, so it is derived from the id

    def __post_init__(self) -> None:
        if not self.pdf_url:
            object.__setattr__(self, "pdf_url", f"https://arxiv.org/pdf/{self.arxiv_id}")

    @property
    def base_id(self) -> str:
        """The versionless id ("1412.6980"): what a citation should point at."""
        return base_id(self.arxiv_id)

    def bibtex_key(self) -> str:
        """A Google-Scholar-style key, e.g. ``kingma2014adam``: surname, year, first real word."""
        surname = _surname_slug(self.authors[0]) if self.authors else ""
        return f"{surname or 'anon'}{self.year}{_first_title_word(self.title)}"

    def bibtex(self) -> str:
        """A ``@misc`` entry (how arXiv itself exports preprints), LaTeX-escaped."""
        fields_ = [
            # Double braces keep capitals ("Adam", "MLP") that bibliography styles would lower.
            ("title", "{" + _tex_escape(self.title) + "}"),
            ("author", " and ".join(_tex_escape(name) for name in self.authors) or "Anonymous"),
            ("year", str(self.year)),
            ("eprint", self.base_id),
            ("archivePrefix", "arXiv"),
            ("primaryClass", self.primary_category),
            ("url", f"https://arxiv.org/abs/{self.base_id}"),
        ]
        body = "\n".join(f"  {name:<13} = {{{value}}}," for name, value in fields_ if value)
        return f"@misc{{{self.bibtex_key()},\n{body}\n}}\n"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Paper:
        """Rebuild from ``to_dict``; unknown keys are ignored so older caches keep loading."""
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["authors"] = list(kwargs.get("authors") or [])
        kwargs["year"] = int(kwargs.get("year") or 0)
        return cls(**kwargs)


def _ascii_slug(text: str) -> str:
    """Lowercase ASCII letters and digits only: what BibTeX keys tolerate everywhere."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_ASCII_FOLD))
    return re.sub(r"[^a-z0-9]", "", decomposed.encode("ascii", "ignore").decode().lower())


def _surname_slug(name: str) -> str:
    if "," in name:  # "Kingma, Diederik P."
        return _ascii_slug(name.split(",", 1)[0])
    tokens = [t for t in name.split() if t.lower() not in _NAME_SUFFIXES]
    return _ascii_slug(tokens[-1]) if tokens else ""


def _first_title_word(title: str) -> str:
    without_math = re.sub(r"\$[^$]*\$", " ", title)
    for word in re.split(r"[\s\-:/,.;!?()\[\]{}]+", without_math):
        slug = _ascii_slug(word)
        if slug and slug not in _TITLE_STOPWORDS:
            return slug
    return "paper"


# ---- LaTeX escaping for BibTeX fields -------------------------------------------------------

_TEX_SPECIALS = {
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
# Combining accents -> LaTeX accent commands, so accented names survive any bibliography style
# (BibTeX sorts and abbreviates bytes, and does not understand UTF-8).
_ACCENTS = {
    "\u0301": "'",
    "\u0300": "`",
    "\u0308": '"',
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0307": ".",
    "\u0327": "c",
    "\u030c": "v",
    "\u030a": "r",
    "\u0306": "u",
    "\u030b": "H",
    "\u0328": "k",
}
_SPECIAL_LETTERS = {
    "ß": r"{\ss}",
    "ø": r"{\o}",
    "Ø": r"{\O}",
    "ł": r"{\l}",
    "Ł": r"{\L}",
    "æ": r"{\ae}",
    "Æ": r"{\AE}",
    "œ": r"{\oe}",
    "Œ": r"{\OE}",
    "å": r"{\aa}",
    "Å": r"{\AA}",
}


def _tex_escape(text: str) -> str:
    """Escape text for a BibTeX field while keeping the ``$...$`` math arXiv metadata carries.

    arXiv titles are TeX-ish ("L$_2$ regularization"), so balanced math and commands pass
    through; characters that would break a compile outside math (& % # _ ~ ^) are escaped, and
    unbalanced ``$`` or braces are escaped too rather than trusted.
    """
    text = " ".join(text.split())
    escape_braces = not _braces_balanced(text)
    math_ok = text.count("$") % 2 == 0 and not escape_braces
    pieces = re.split(r"(\$[^$]*\$)", text) if math_ok else [text]
    out = []
    for piece in pieces:
        if math_ok and len(piece) >= 2 and piece.startswith("$") and piece.endswith("$"):
            out.append(piece)
        else:
            out.append(_escape_text_piece(piece, escape_braces))
    return "".join(out)


def _escape_text_piece(piece: str, escape_braces: bool) -> str:
    specials = dict(_TEX_SPECIALS, **{"$": r"\$"})
    if escape_braces:
        specials.update({"{": r"\{", "}": r"\}"})
    out = []
    for ch in unicodedata.normalize("NFC", piece):
        if ch in specials:
            out.append(specials[ch])
        elif ch in _SPECIAL_LETTERS:
            out.append(_SPECIAL_LETTERS[ch])
        elif ord(ch) > 127:
            out.append(_accent_to_tex(ch))
        else:
            out.append(ch)
    # What the source had already escaped ("\&") must not come out escaped twice ("\\&").
    return re.sub(r"\\\\([&%#_${}])", r"\\\1", "".join(out))


def _accent_to_tex(ch: str) -> str:
    decomposed = unicodedata.normalize("NFD", ch)
    base, marks = decomposed[0], decomposed[1:]
    if len(marks) != 1 or marks not in _ACCENTS or not base.isascii():
        return ch  # other characters are left to LaTeX's UTF-8 input encoding
    command = _ACCENTS[marks]
    if command.isalpha():
        return "{\\" + command + "{" + base + "}}"
    return "{\\" + command + base + "}"


def _braces_balanced(text: str) -> bool:
    depth = 0
    for match in re.finditer(r"(?<!\\)[{}]", text):
        depth += 1 if match.group() == "{" else -1
        if depth < 0:
            return False
    return depth == 0


MAX_AUTHORS_SHOWN = 8


def format_papers(papers: list[Paper], abstract_chars: int = 600) -> str:
    """A numbered list for LLM prompts; the numbers are what the model selects by."""
    if not papers:
        return "No papers found."
    return "\n\n".join(_format_paper(i, p, abstract_chars) for i, p in enumerate(papers))


def _format_paper(index: int, paper: Paper, abstract_chars: int) -> str:
    authors = ", ".join(paper.authors[:MAX_AUTHORS_SHOWN]) or "Unknown authors"
    if len(paper.authors) > MAX_AUTHORS_SHOWN:
        authors += ", et al"
    head = f"{index}: {paper.title}. {authors}. {paper.year}. arXiv:{paper.arxiv_id}"
    return f"{head}\n   Abstract: {shorten(paper.abstract, abstract_chars)}"


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word to about ``limit`` characters ("..." where cut)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    return cut.rstrip(",;:") + " ..."
