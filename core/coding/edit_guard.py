"""What an edit may do, and the checks a model's edit must pass before it touches the tree.

A small model answering in aider's ``whole`` format copies the format's example file
(``path/to/filename.js``, aider's ``show_greeting.py``), returns one function as "the whole file"
(an 8-line experiment.py that deleted 58 of 60 lines), or leaves code out with "# ... rest of the
code". aider applies all of that as asked. :class:`EditPolicy` says what one step's edit may touch
and :func:`check_edit` judges one file's new text against its old text; aider's IO bridge
(core/coding/aider_io.py) stages its writes, and the coder (core/coding/coder.py) runs these checks and
writes all of a reply or none of it.

Everything here is a pure function of names and texts, so it is cheap to import and to test.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from ..source.parse import parse_code
from ..source.python import is_main_guard, undefined_names
from ..workspace.run_folder import FINAL_INFO

# A file had to have more than this many non-blank lines for "deletes most of it" to apply: a
# short file is often rewritten whole, and rightly.
SHRINK_MIN_LINES = 20
SHRINK_MAX_FRACTION = 0.5  # more than this share of the old non-blank lines gone is refused

# The experiment contract (ARCHITECTURE.md, Templates): `python experiment.py --out_dir=run_i`
# writes run_i/final_info.json. A Python file that had these keeps them.
CONTRACT_OPTIONS = ("--out_dir",)
CONTRACT_LITERALS = (FINAL_INFO,)

# What a LaTeX paper must keep where it had it (checked outside comments). The patterns tell
# \bibliography{...} from \bibliographystyle{...}.
LATEX_MARKERS: dict[str, str] = {
    r"\documentclass": r"\\documentclass\b",
    r"\begin{document}": r"\\begin\s*\{document\}",
    r"\end{document}": r"\\end\s*\{document\}",
    r"\bibliographystyle": r"\\bibliographystyle\s*\{",
    r"\bibliography": r"\\bibliography\s*\{",
}

# File names in aider's own format examples (its `whole` example is show_greeting.py, its `diff`
# examples mathweb/flask/app.py): a model that writes them is copying the prompt.
FORMAT_EXAMPLE_NAMES = frozenset({"show_greeting.py", "mathweb/flask/app.py"})
PLACEHOLDER_STEMS = frozenset(
    {"filename", "file_name", "file", "your_file", "yourfile", "example", "path_to_file"}
)
PLACEHOLDER_SUFFIXES = frozenset({".ext", ".extension"})

# Lines that stand for code the model left out. A bare "..." line or a comment made of "..."
# (or starting with it), or a comment saying the rest stays as it was.
_ELLIPSIS = r"(?:\.\.\.+|…)"
_BARE_ELLIPSIS = re.compile(rf"^{_ELLIPSIS}$")
_COMMENT = re.compile(r"^(?:#+|//+|%+|/\*+|<!--|\*)\s*(?P<text>.*?)\s*(?:\*/|-->)?$")
_ELISION_PHRASES = re.compile(
    r"rest of (?:the )?(?:code|file|script|function|class|document|paper|content)"
    r"|existing code|remains? the same|remains? unchanged|stays? the same|same as before"
    r"|\(unchanged\)|unchanged code|previous code|code omitted|omitted for brevity"
    r"|entire file content|goes in between",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Contract:
    """What one file must keep, checked by code (the AST for Python, markers for LaTeX).

    ``options``: argparse options that must still be declared (an ``add_argument`` call with the
    string). ``literals``: strings that must still occur as string literals in code (docstrings do
    not count). ``latex``: keys of :data:`LATEX_MARKERS` that must still occur outside comments.
    """

    python: bool = False  # the new text must parse as Python
    entry: bool = False  # the new text keeps its ``if __name__ == "__main__":`` block
    options: tuple[str, ...] = ()
    literals: tuple[str, ...] = ()
    latex: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [m for m in self.latex if m not in LATEX_MARKERS]
        if unknown:
            raise ValueError(
                f"Contract(latex=...) names unknown markers {unknown}; "
                f"use some of {list(LATEX_MARKERS)}"
            )


@dataclass(frozen=True)
class EditPolicy:
    """What one step's edit may touch besides the files it edits (the files passed to
    ``Coder.edit``): other existing files (``also_edit``) and new files (``create``), each a list
    of globs on the project-relative path (fnmatch: ``*`` also crosses ``/``). ``contracts`` gives
    a file's contract by its project-relative path; a file without one keeps what its old text had
    (:func:`contract_for`). The default edits the step's files only and creates nothing."""

    create: tuple[str, ...] = ()
    also_edit: tuple[str, ...] = ()
    contracts: Mapping[str, Contract] = field(default_factory=dict)

    def may_create(self, name: str) -> bool:
        return _matches(name, self.create)

    def may_also_edit(self, name: str) -> bool:
        return _matches(name, self.also_edit)

    def contract(self, name: str, old: str | None) -> Contract:
        return self.contracts.get(name) or contract_for(name, old)


def _matches(name: str, globs: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in globs)


@dataclass(frozen=True)
class Problem:
    """One reason to refuse an edit: the file, what kind of problem, and a sentence that says it
    with its numbers (shown to the researcher and quoted to the model)."""

    path: str
    # shrink | elision | syntax | contract | names | placeholder | new-file | other-file | place
    kind: str
    reason: str


# -- names ------------------------------------------------------------------------------------


def placeholder_name(name: str) -> bool:
    """Whether a file name is a placeholder or a format example's, not a real file of a project:
    ``path/to/…``, ``filename.*``, ``file.ext``, ``example.*``, ``your_file``, ``<name>``,
    anything with ``...`` or ``…``, and aider's own example files."""
    text = name.strip().replace("\\", "/")
    path = PurePosixPath(text)
    lowered = text.lower()
    if lowered in FORMAT_EXAMPLE_NAMES or "..." in text or "…" in text:
        return True
    if re.search(r"(^|/)path/to(/|$)", lowered) or any(c in text for c in "<>{}"):
        return True
    stem, suffix = path.stem.lower(), path.suffix.lower()
    return (
        stem in PLACEHOLDER_STEMS
        or suffix in PLACEHOLDER_SUFFIXES
        or stem.startswith(("your_", "your-"))
    )


def new_file_problem(name: str, policy: EditPolicy, editing: list[str]) -> Problem | None:
    """Why the step may not create ``name`` (project-relative), or None when it may."""
    if placeholder_name(name):
        return Problem(
            name,
            "placeholder",
            f"would create {name}, a placeholder name copied from the format example, "
            "not a file of this project",
        )
    if not policy.may_create(name):
        allowed = f"only {', '.join(policy.create)}" if policy.create else "no new files"
        return Problem(
            name,
            "new-file",
            f"would create {name}, but this step edits {_listing(editing)} and may create "
            f"{allowed}",
        )
    return None


def other_file_problem(name: str, editing: list[str]) -> Problem:
    return Problem(
        name, "other-file", f"would edit {name}, but this step edits only {_listing(editing)}"
    )


def _listing(names: list[str]) -> str:
    return ", ".join(names) if names else "no files"


# -- contracts --------------------------------------------------------------------------------


def contract_for(name: str, old: str | None) -> Contract:
    """The contract a file's old text implies: Python keeps parsing (when it parsed) and keeps the
    experiment contract it had; LaTeX keeps the document skeleton and bibliography it had. A new
    Python file must parse."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".py":
        if old is None:
            return Contract(python=True)
        tree = _parse(old)
        if tree is None:
            return Contract()  # a file that did not parse may be fixed in steps
        options = tuple(o for o in CONTRACT_OPTIONS if o in _argparse_options(tree))
        literals = tuple(
            text
            for text in (*CONTRACT_OPTIONS, *CONTRACT_LITERALS)
            if text not in options and _has_literal(tree, text)
        )
        entry = any(is_main_guard(statement) for statement in tree.body)
        return Contract(python=True, entry=entry, options=options, literals=literals)
    if suffix == ".tex" and old is not None:
        body = _latex_without_comments(old)
        kept = tuple(k for k, pattern in LATEX_MARKERS.items() if re.search(pattern, body))
        return Contract(latex=kept)
    return Contract()


def contract_problems(name: str, new: str, contract: Contract) -> list[Problem]:
    problems: list[Problem] = []
    if contract.python or contract.options or contract.literals:
        tree = _parse(new)
        if tree is None:
            return [Problem(name, "syntax", f"would make {name} invalid Python ({_syntax(new)})")]
        if contract.entry and not any(is_main_guard(s) for s in tree.body):
            problems.append(
                Problem(
                    name,
                    "contract",
                    f'would drop the `if __name__ == "__main__":` block from {name}: the run '
                    f"would define everything, call nothing and write no results",
                )
            )
        declared = _argparse_options(tree)
        for option in contract.options:
            if option not in declared:
                problems.append(
                    Problem(
                        name,
                        "contract",
                        f"would drop the {option} option from {name} (no "
                        f"add_argument({option!r}) left); the experiment is run with {option}",
                    )
                )
        for text in contract.literals:
            if not _has_literal(tree, text):
                problems.append(
                    Problem(
                        name,
                        "contract",
                        f"would drop {text!r} from the code of {name}; {_why_literal(text)}",
                    )
                )
    if contract.latex:
        body = _latex_without_comments(new)
        for marker in contract.latex:
            if not re.search(LATEX_MARKERS[marker], body):
                problems.append(Problem(name, "contract", f"would drop {marker} from {name}"))
    return problems


def _why_literal(text: str) -> str:
    if text in CONTRACT_LITERALS:
        return f"the experiment must write <out_dir>/{text}"
    return "the experiment contract needs it"


def _parse(text: str) -> ast.Module | None:
    try:
        return parse_code(text)
    except (SyntaxError, ValueError):
        return None


def _syntax(text: str) -> str:
    try:
        parse_code(text)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:
        return str(exc)
    return "it does not parse"


def _argparse_options(tree: ast.AST) -> set[str]:
    """Every string passed to an ``add_argument(...)`` call."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called == "add_argument":
            found |= {
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            }
    return found


def _has_literal(tree: ast.AST, text: str) -> bool:
    """Whether a string literal in code (not a docstring or a bare string statement) contains
    ``text``; f-strings count by their literal parts."""
    bare = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return any(
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in bare
        and text in node.value
        for node in ast.walk(tree)
    )


def _latex_without_comments(text: str) -> str:
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in text.splitlines())


# -- shrink and elision -----------------------------------------------------------------------


def _content_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def shrink_problem(name: str, old: str, new: str) -> Problem | None:
    """A reply that would delete most of a file: more than half of the old non-blank lines gone
    from a file of more than :data:`SHRINK_MIN_LINES` of them."""
    before, after = _content_lines(old), _content_lines(new)
    if len(before) <= SHRINK_MIN_LINES:
        return None
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    deleted = len(before) - kept
    if deleted <= SHRINK_MAX_FRACTION * len(before):
        return None
    return Problem(
        name,
        "shrink",
        f"would delete {deleted} of {len(before)} lines of {name}, leaving {len(after)} lines",
    )


def elided_lines(old: str, new: str) -> list[str]:
    """New lines that stand for left-out code and that the old text did not already contain."""
    existing = set(_content_lines(old))
    return [line for line in _content_lines(new) if line not in existing and _stands_for_code(line)]


def _stands_for_code(line: str) -> bool:
    if _BARE_ELLIPSIS.match(line):
        return True
    comment = _COMMENT.match(line)
    if comment is None:
        # A trailing comment: `x = 1  # ... rest unchanged`.
        tail = re.search(r"(?:\s#|\s//)\s*(.*)$", line)
        return bool(tail and _ELISION_PHRASES.search(tail.group(1)))
    text = comment.group("text")
    return bool(re.match(rf"^{_ELLIPSIS}", text) or _ELISION_PHRASES.search(text))


def elision_problem(name: str, old: str, new: str) -> Problem | None:
    lines = elided_lines(old, new)
    if not lines:
        return None
    shown = "; ".join(f"`{line[:80]}`" for line in lines[:3])
    more = f" and {len(lines) - 3} more" if len(lines) > 3 else ""
    return Problem(
        name, "elision", f"would leave code out of {name}: it has {shown}{more} in place of code"
    )


# -- all together -----------------------------------------------------------------------------


def check_edit(name: str, old: str | None, new: str, contract: Contract) -> list[Problem]:
    """Every reason to refuse changing ``name`` from ``old`` (None: a new file) to ``new``."""
    problems: list[Problem] = []
    if old is not None:
        shrink = shrink_problem(name, old, new)
        if shrink:
            problems.append(shrink)
    elision = elision_problem(name, old or "", new)
    if elision:
        problems.append(elision)
    problems += contract_problems(name, new, contract)
    if old is not None and name.endswith(".py"):
        problems += undefined_problem(name, old, new)
    return problems


def undefined_problem(name: str, old: str, new: str) -> list[Problem]:
    """Names the new code uses that nothing defines and the old did not: a NameError when it
    runs (the 1.5B model's whole moons file used ``rng`` where its train had no ``rng``)."""
    introduced = sorted(undefined_names(new) - undefined_names(old))
    if not introduced:
        return []
    return [
        Problem(
            name,
            "names",
            f"would use {', '.join(introduced)} in {name}, which nothing there defines: the run "
            "would stop with a NameError",
        )
    ]


# Every write-up edit (sections, refinement, provenance, LaTeX fixes, review rounds) changes the
# LaTeX file only, creates no file, and keeps the paper's skeleton and bibliography.
PAPER_ONLY = EditPolicy()
