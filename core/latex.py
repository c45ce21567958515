"""LaTeX: compile (latexmk, or pdflatex + bibtex), parse the log, chktex, and code checks.

Compiles run in ``<tex dir>/build`` so the source folder stays clean and the last good PDF is
never touched by a failing run: the built PDF is copied to its destination only after a
successful compile, atomically. Every TeX process runs in its own process group, so a timeout
(an infinite macro loop is easy to write) kills latexmk, pdflatex and bibtex together.

PyMuPDF is imported inside the functions that read PDFs, keeping this module cheap to import.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import LabtuiError

TEX_INSTALL_HINT = (
    "install TeX Live: sudo apt-get install latexmk texlive-latex-extra "
    "texlive-fonts-recommended texlive-bibtex-extra chktex (macOS: brew install --cask mactex)"
)
BUILD_DIR_NAME = "build"
LOG_TAIL_LINES = 40
KILL_GRACE_S = 2.0
CHKTEX_TIMEOUT_S = 60.0
# The same suppressions as The AI Scientist: 1 (command terminated with space), 2 (non-breaking
# space before \cite), 13 (intersentence spacing), 24 (space before \label) are style noise.
CHKTEX_SUPPRESS = ("-n2", "-n24", "-n13", "-n1")
GRAPHICS_EXTENSIONS = (".png", ".pdf", ".jpg", ".jpeg", ".eps")
# TeX wraps its log at 79 columns by default, splitting messages mid-word; these kpathsea
# variables (read from the environment) keep every message on one line for the parser.
TEX_LOG_ENV = {"max_print_line": "10000", "error_line": "254", "half_error_line": "238"}


@dataclass(frozen=True)
class LatexMessage:
    file: str
    line: int | None
    message: str
    kind: str  # "error" | "warning"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class CompileOutcome:
    ok: bool
    pdf: Path | None  # the installed PDF, only when ok
    pages: int
    errors: list[LatexMessage]
    warnings: list[LatexMessage]
    log_tail: str
    timed_out: bool

    def to_dict(self) -> dict[str, Any]:
        """The fields of a CompileResult event."""
        return {
            "ok": self.ok,
            "pdf": str(self.pdf) if self.pdf else "",
            "pages": self.pages,
            "errors": [m.to_dict() for m in self.errors],
            "warnings": [m.to_dict() for m in self.warnings],
        }


# --------------------------------------------------------------------------------------------
# Tools and processes
# --------------------------------------------------------------------------------------------


def tool_available(name: str) -> bool:
    """Whether an executable is on PATH (e.g. "chktex", so a caller can warn when it is not)."""
    return shutil.which(name) is not None


@dataclass(frozen=True)
class _Run:
    returncode: int
    output: str
    timed_out: bool


def _run(cmd: list[str], cwd: Path, deadline: float, env: dict[str, str]) -> _Run:
    """Run in a new session; on the deadline kill the whole group (pdflatex under latexmk)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return _Run(returncode=-1, output="", timed_out=True)
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,  # TeX must never sit waiting for a keyboard
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=remaining)
        return _Run(proc.returncode, out.decode("utf-8", "replace"), timed_out=False)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        return _Run(proc.returncode, out.decode("utf-8", "replace"), timed_out=True)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    # Children (pdflatex under latexmk) can outlive the leader: SIGKILL what is left.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tex_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TEX_LOG_ENV)
    env.update(extra or {})
    return env


# --------------------------------------------------------------------------------------------
# Compile
# --------------------------------------------------------------------------------------------


def compile_latex(tex: Path, output_pdf: Path, *, timeout_s: float = 120) -> CompileOutcome:
    """Compile ``tex`` in ``<tex dir>/build``; on success install the PDF at ``output_pdf``.

    A failed or timed-out compile leaves ``output_pdf`` exactly as it was (the last good PDF).
    Raises LabtuiError when the source is missing or no TeX engine is installed.
    """
    tex = Path(tex).resolve()
    output_pdf = Path(output_pdf).resolve()
    if not tex.is_file():
        raise LabtuiError(f"LaTeX source not found: {tex}", hint="run the write-up stage first")
    build = tex.parent / BUILD_DIR_NAME
    build.mkdir(parents=True, exist_ok=True)
    tex_text = tex.read_text(encoding="utf-8", errors="replace")
    _drop_stale_filecontents(tex_text, build)

    deadline = time.monotonic() + timeout_s
    if tool_available("latexmk"):
        run = _run_latexmk(tex, deadline)
    elif tool_available("pdflatex"):
        run = _run_pdflatex_chain(tex, build, deadline)
    else:
        raise LabtuiError("neither latexmk nor pdflatex was found on PATH", hint=TEX_INSTALL_HINT)

    log_text = _read_text(build / f"{tex.stem}.log")
    errors, warnings = parse_log(log_text, tex.name)
    warnings += parse_blg(_read_text(build / f"{tex.stem}.blg"))
    warnings += _shadowed_filecontents(tex_text, tex.parent)
    if run.timed_out:
        errors.append(
            LatexMessage(
                tex.name,
                None,
                f"compilation took longer than "
                f"{timeout_s:g} s and was stopped (a macro that loops "
                "forever?)",
                "error",
            )
        )
    elif run.returncode != 0 and not errors:
        errors.append(
            LatexMessage(
                tex.name,
                None,
                f"the TeX run failed (exit code {run.returncode}); see the log tail",
                "error",
            )
        )

    built = build / f"{tex.stem}.pdf"
    pages = 0
    ok = not run.timed_out and run.returncode == 0 and not errors and built.is_file()
    if ok:
        try:
            pages = page_count(built)  # counted before installing: never replace good with bad
        except LabtuiError as exc:
            ok = False
            errors.append(LatexMessage(built.name, None, exc.message, "error"))
    if ok:
        _install(built, output_pdf)
    tail_source = log_text if log_text.strip() else run.output
    return CompileOutcome(
        ok=ok,
        pdf=output_pdf if ok else None,
        pages=pages if ok else 0,
        errors=errors,
        warnings=warnings,
        log_tail="\n".join(tail_source.splitlines()[-LOG_TAIL_LINES:]),
        timed_out=run.timed_out,
    )


def _run_latexmk(tex: Path, deadline: float) -> _Run:
    cmd = [
        "latexmk",
        "-norc",  # a researcher's ~/.latexmkrc (e.g. continuous preview) must not change runs
        "-pdf",
        "-bibtex",
        "-interaction=nonstopmode",
        "-halt-on-error",
        "-file-line-error",
        f"-outdir={BUILD_DIR_NAME}",
        tex.name,
    ]
    return _run(cmd, tex.parent, deadline, _tex_env())


def _run_pdflatex_chain(tex: Path, build: Path, deadline: float) -> _Run:
    """pdflatex, bibtex when the document has a bibliography, then pdflatex twice."""
    latex_cmd = [
        "pdflatex",
        "-interaction=nonstopmode",
        "-halt-on-error",
        "-file-line-error",
        f"-output-directory={BUILD_DIR_NAME}",
        tex.name,
    ]
    outputs: list[str] = []
    run = _run(latex_cmd, tex.parent, deadline, _tex_env())
    outputs.append(run.output)
    if run.returncode != 0 or run.timed_out:
        return _Run(run.returncode, "\n".join(outputs), run.timed_out)
    if "\\bibdata" in _read_text(build / f"{tex.stem}.aux"):
        if not tool_available("bibtex"):
            raise LabtuiError("bibtex was not found on PATH", hint=TEX_INSTALL_HINT)
        # bibtex runs beside the .aux; the .bib files live beside the .tex (or in build/).
        bib_env = _tex_env({"BIBINPUTS": f"{tex.parent}{os.pathsep}{build}{os.pathsep}"})
        run = _run(["bibtex", tex.stem], build, deadline, bib_env)
        outputs.append(run.output)
        if run.timed_out:
            return _Run(run.returncode, "\n".join(outputs), True)
    for _ in range(2):
        run = _run(latex_cmd, tex.parent, deadline, _tex_env())
        outputs.append(run.output)
        if run.returncode != 0 or run.timed_out:
            break
    return _Run(run.returncode, "\n".join(outputs), run.timed_out)


def _install(built: Path, output_pdf: Path) -> None:
    """Copy atomically: a reader (the TUI, the reviewer) never sees half a PDF."""
    output_pdf.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=output_pdf.parent, prefix=".tmp-", suffix=".pdf")
    os.close(fd)
    try:
        shutil.copyfile(built, tmp)
        os.replace(tmp, output_pdf)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# ---- filecontents ---------------------------------------------------------------------------

_FILECONTENTS = re.compile(
    r"\\begin\{filecontents\*?\}\s*(?:\[[^\]]*\])?\s*\{([^}]+)\}(.*?)\\end\{filecontents\*?\}",
    re.DOTALL,
)


def _filecontents_blocks(tex_text: str) -> list[tuple[str, str]]:
    """(file name, contents) of every filecontents environment, in document order."""
    return [(m.group(1).strip(), m.group(2)) for m in _FILECONTENTS.finditer(tex_text)]


def _drop_stale_filecontents(tex_text: str, build: Path) -> None:
    """Delete build/ copies of filecontents files so TeX writes them afresh.

    LaTeX's filecontents never overwrites an existing file, so after the citations stage
    adds an entry, the old references.bib in build/ would otherwise win and the new
    citation would stay undefined.
    """
    for name, _ in _filecontents_blocks(tex_text):
        stale = build / name
        if stale.is_file() and stale.resolve().parent == build.resolve():
            stale.unlink()


def _shadowed_filecontents(tex_text: str, tex_dir: Path) -> list[LatexMessage]:
    """A file beside the .tex with a filecontents name wins over the embedded block."""
    return [
        LatexMessage(
            name,
            None,
            f"{name} beside the .tex file is used instead of the "
            f"filecontents block of the same name; delete the file or the block",
            "warning",
        )
        for name, _ in _filecontents_blocks(tex_text)
        if (tex_dir / name).is_file()
    ]


# --------------------------------------------------------------------------------------------
# Log parsing
# --------------------------------------------------------------------------------------------

# "./paper.tex:12: Undefined control sequence." (-file-line-error). Requiring a TeX-ish file
# extension keeps lines such as "Package: foo 2020/01/01" from reading as errors.
_FILE_LINE_ERROR = re.compile(
    r"^(?P<file>(?:[A-Za-z]:)?[^:\n]*?\.(?:tex|sty|cls|clo|def|cfg|fd|bbl|aux|ltx|dtx|ins)):"
    r"(?P<line>\d+): (?P<msg>.+)$"
)
_WARNING = re.compile(r"^(?:LaTeX|(?:Package|Class|Module) (?P<pkg>\S+)) Warning: (?P<msg>.*)$")
_CONTEXT_LINE = re.compile(r"^l\.(?P<line>\d+) ?(?P<text>.*)$")
_INPUT_LINE = re.compile(r"on input line (\d+)")
_FOLLOW_UP_ERRORS = ("==> Fatal error occurred", "Emergency stop")
TEX_LOG_WIDTH = 79  # a line of exactly this length in a default log continues on the next


def parse_log(text: str, main_file: str) -> tuple[list[LatexMessage], list[LatexMessage]]:
    """Errors and warnings of a (pdf)LaTeX log, each once, in log order.

    Warnings carry the line LaTeX names ("on input line N") and ``main_file``: the log does not
    reliably say which \\input file a warning came from.
    """
    lines = text.splitlines()
    errors: list[LatexMessage] = []
    warnings: list[LatexMessage] = []
    for i in range(len(lines)):
        message = _error_at(lines, i, main_file) or _warning_at(lines, i, main_file)
        if message is not None:
            (errors if message.kind == "error" else warnings).append(message)
    return _unique(errors), _unique(warnings)


def _error_at(lines: list[str], i: int, main_file: str) -> LatexMessage | None:
    line = lines[i]
    match = _FILE_LINE_ERROR.match(line)
    if match:
        file, lineno, msg = match.group("file"), int(match.group("line")), match.group("msg")
    elif line.startswith("! "):
        file, lineno, msg = main_file, None, line[2:]
    else:
        return None
    msg = msg.strip()
    if msg.startswith(_FOLLOW_UP_ERRORS):
        return None  # the consequence of the error already reported, not a second error
    context = _error_context(lines, i)
    if context is not None:
        lineno = lineno if lineno is not None else context[0]
        msg = _describe(msg, context[1])
    return LatexMessage(_clean_path(file), lineno, msg, "error")


def _error_context(lines: list[str], i: int) -> tuple[int, str] | None:
    """The ``l.N <text up to the error>`` line TeX prints a few lines after an error."""
    for follow in lines[i + 1 : i + 12]:
        match = _CONTEXT_LINE.match(follow)
        if match:
            return int(match.group("line")), match.group("text").rstrip()
        if _FILE_LINE_ERROR.match(follow) or follow.startswith("! "):
            return None
    return None


def _describe(msg: str, context: str) -> str:
    """Name the culprit: for an undefined control sequence it is the last one before the error."""
    if msg.startswith("Undefined control sequence"):
        culprit = re.findall(r"\\(?:[A-Za-z@]+|.)", context)
        if culprit:
            return f"Undefined control sequence {culprit[-1]}"
    return f"{msg} (at: {context.strip()[-80:]})" if context.strip() else msg


def _warning_at(lines: list[str], i: int, main_file: str) -> LatexMessage | None:
    match = _WARNING.match(lines[i])
    if not match:
        return None
    pkg = match.group("pkg")
    parts = [match.group("msg").strip()]
    previous = lines[i]
    for follow in lines[i + 1 : i + 8]:
        if pkg and follow.startswith(f"({pkg})"):
            parts.append(follow[len(pkg) + 2 :].strip())
        elif len(previous) == TEX_LOG_WIDTH and follow.strip():
            parts[-1] += follow.strip()  # a default-width log broke the line mid-word
        else:
            break
        previous = follow
    msg = " ".join(p for p in parts if p)
    line = _INPUT_LINE.search(msg)
    return LatexMessage(main_file, int(line.group(1)) if line else None, msg, "warning")


def _clean_path(file: str) -> str:
    return file.removeprefix("./")


def _unique(messages: Iterable[LatexMessage]) -> list[LatexMessage]:
    seen: set[tuple[str, int | None, str]] = set()
    out = []
    for m in messages:
        key = (m.file, m.line, m.message)
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out


_BLG_WARNING = re.compile(r"^Warning--(?P<msg>.+)$")
_BLG_ERROR = re.compile(r"^(?P<msg>.*?)---line (?P<line>\d+) of file (?P<file>\S+)$")
_BLG_NO_DATABASE = re.compile(r"^I couldn't open (?:database|auxiliary|style) file .+$")


def parse_blg(text: str) -> list[LatexMessage]:
    """BibTeX's own problems (missing entries, .bib syntax), as warnings: the PDF still builds."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if m := _BLG_WARNING.match(line):
            out.append(LatexMessage("bibtex", None, f"BibTeX: {m.group('msg')}", "warning"))
        elif m := _BLG_ERROR.match(line):
            msg = m.group("msg").strip() or (lines[i - 1].strip() if i else "syntax error")
            out.append(
                LatexMessage(m.group("file"), int(m.group("line")), f"BibTeX: {msg}", "warning")
            )
        elif _BLG_NO_DATABASE.match(line):
            out.append(LatexMessage("bibtex", None, f"BibTeX: {line.strip()}", "warning"))
    return _unique(out)


# --------------------------------------------------------------------------------------------
# chktex
# --------------------------------------------------------------------------------------------

_CHKTEX_SEP = "\x1f"  # a separator no file name or message contains


def chktex(tex: Path) -> list[LatexMessage]:
    """chktex's findings with line numbers; [] when chktex is not installed.

    A missing chktex is not an error (the paper still compiles): callers check
    ``tool_available("chktex")`` and warn once.
    """
    tex = Path(tex).resolve()
    if not tool_available("chktex"):
        return []
    fmt = _CHKTEX_SEP.join(["%f", "%l", "%c", "%k", "%n", "%m"]) + "\n"
    try:
        proc = subprocess.run(
            ["chktex", "-q", *CHKTEX_SUPPRESS, "-f", fmt, tex.name],
            check=False,  # chktex exits non-zero whenever it has something to say
            cwd=tex.parent,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=CHKTEX_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return [LatexMessage(tex.name, None, "chktex timed out", "warning")]
    return _parse_chktex(proc.stdout.decode("utf-8", "replace"))


def _parse_chktex(output: str) -> list[LatexMessage]:
    out = []
    for row in output.splitlines():
        parts = row.split(_CHKTEX_SEP)
        if len(parts) != 6:
            continue
        file, line, column, kind, number, message = parts
        out.append(
            LatexMessage(
                file=_clean_path(file),
                line=int(line) if line.isdigit() else None,
                message=f"{message.strip()} (chktex {number}, column {column})",
                kind="error" if kind.strip().lower() == "error" else "warning",
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# Code checks before compiling
# --------------------------------------------------------------------------------------------

_CITE = re.compile(r"\\[A-Za-z]*cite[A-Za-z]*\*?\s*(?:\[[^\]]*\]\s*){0,2}\{([^}]*)\}")
_BIB_ENTRY = re.compile(r"@\s*(\w+)\s*[{(]\s*([^,\s]+)\s*,")
_INCLUDEGRAPHICS = re.compile(r"\\includegraphics\*?\s*(?:\[[^\]]*\]\s*)?\{([^}]*)\}")
_GRAPHICSPATH = re.compile(r"\\graphicspath\s*\{((?:\s*\{[^}]*\}\s*)*)\}")
_SECTION = re.compile(r"\\section\*?\s*(?:\[[^\]]*\])?\s*\{")
_LABEL = re.compile(r"\\label\s*\{([^}]*)\}")
# Commands whose arguments are names, not text: an underscore there is legitimate.
_NAME_ARG_COMMANDS = (
    r"label|ref|eqref|pageref|autoref|cref|Cref|nameref|[A-Za-z]*cite[A-Za-z]*|includegraphics|"
    r"input|include|bibliography|bibliographystyle|graphicspath|usepackage|documentclass|"
    r"begin|end|url|href|hyperref|newcommand|renewcommand|def|setlength|addtolength|"
    r"includepdf|lstinputlisting|verb"
)
_NAME_ARGS = re.compile(r"\\(?:" + _NAME_ARG_COMMANDS + r")\*?\s*(?:\[[^\]]*\]\s*)?\{[^}]*\}")
_VERBATIM_ENVS = re.compile(
    r"\\begin\{(verbatim|lstlisting|minted|comment|filecontents)\*?\}.*?\\end\{\1\*?\}", re.DOTALL
)
_MATH = re.compile(
    r"\$\$.*?\$\$|(?<!\\)\$.*?(?<!\\)\$|\\\(.*?\\\)|\\\[.*?\\\]|"
    r"\\begin\{(equation|align|alignat|gather|multline|flalign|eqnarray|math|displaymath)"
    r"\*?\}.*?\\end\{\1\*?\}",
    re.DOTALL,
)


def check_references(
    tex_text: str, bib_text: str, project_root: Path, graphics_dirs: list[Path]
) -> list[str]:
    """Problems a compile would hide or report badly, each as a sentence a model can act on.

    ``project_root`` is the directory the .tex compiles in: relative ``graphics_dirs`` and
    ``\\graphicspath`` entries resolve against it (and graphicspath entries against each
    graphics dir too).
    """
    body = strip_comments(_VERBATIM_ENVS.sub(_blank, tex_text))
    problems: list[str] = []
    problems += _check_cites(body, bib_text)
    problems += _check_figures(body, Path(project_root), graphics_dirs)
    problems += _check_duplicate_sections(body)
    problems += _check_duplicate_labels(body)
    problems += _check_underscores(body)
    problems += _check_percent_after_numbers(_VERBATIM_ENVS.sub(_blank, tex_text))
    return problems


def bib_keys(bib_text: str) -> set[str]:
    """Entry keys of a .bib text (@string, @comment and @preamble are not entries)."""
    return {
        key
        for kind, key in _BIB_ENTRY.findall(bib_text)
        if kind.lower() not in {"string", "comment", "preamble"}
    }


def _check_cites(body: str, bib_text: str) -> list[str]:
    known = bib_keys(bib_text)
    problems = []
    reported: set[str] = set()
    for match in _CITE.finditer(body):
        for key in (k.strip() for k in match.group(1).split(",")):
            if key and key != "*" and key not in known and key not in reported:
                reported.add(key)
                problems.append(
                    f"Line {_line_of(body, match.start())}: \\cite key '{key}' is not in the "
                    f"bibliography (references.bib); use a key that is there or remove the "
                    f"citation."
                )
    return problems


def referenced_figures(
    tex: str, root: Path, graphics_dirs: Sequence[Path] = ()
) -> list[dict[str, Any]]:
    """Every ``\\includegraphics`` target of ``tex`` once, in order of first use.

    Each is ``{"path": name as written, "exists": bool, "line": first line}``. Targets resolve as
    TeX resolves them when compiling in ``root`` (the .tex file's folder): against ``root``,
    then ``graphics_dirs``, then every ``\\graphicspath`` entry. Commented-out and verbatim
    includes do not count: TeX never reads them.
    """
    body = strip_comments(_VERBATIM_ENVS.sub(_blank, tex))
    dirs = _graphics_search_dirs(body, Path(root), graphics_dirs)
    return [
        {"path": name, "exists": _find_graphic(name, dirs) is not None, "line": lines[0]}
        for name, lines in _figure_uses(body).items()
    ]


def _figure_uses(body: str) -> dict[str, list[int]]:
    """Lines of each ``\\includegraphics`` target of a comment-free body, in order of first use."""
    uses: dict[str, list[int]] = {}
    for match in _INCLUDEGRAPHICS.finditer(body):
        uses.setdefault(match.group(1).strip(), []).append(_line_of(body, match.start()))
    return uses


def _check_figures(body: str, root: Path, graphics_dirs: Sequence[Path]) -> list[str]:
    dirs = _graphics_search_dirs(body, root, graphics_dirs)
    uses = _figure_uses(body)
    problems = [
        f"Line {lines[0]}: figure file '{name}' does not exist (looked in "
        f"{', '.join(str(d) for d in dirs)}); include only figures that exist."
        for name, lines in uses.items()
        if _find_graphic(name, dirs) is None
    ]
    problems += [
        f"Figure file '{name}' is included {len(lines)} times (lines "
        f"{', '.join(map(str, lines))}); include each figure once."
        for name, lines in uses.items()
        if len(lines) > 1
    ]
    return problems


def _graphics_search_dirs(body: str, root: Path, graphics_dirs: Sequence[Path]) -> list[Path]:
    bases = [root] + [d if Path(d).is_absolute() else root / d for d in graphics_dirs]
    extra = []
    for match in _GRAPHICSPATH.finditer(body):
        for entry in re.findall(r"\{([^}]*)\}", match.group(1)):
            extra += [base / entry for base in bases]
    seen: dict[Path, None] = {}
    for d in bases + extra:
        seen.setdefault(Path(os.path.normpath(d)), None)
    return list(seen)


def _find_graphic(name: str, dirs: list[Path]) -> Path | None:
    candidates = [name] if Path(name).suffix.lower() in GRAPHICS_EXTENSIONS else []
    candidates += [name + ext for ext in GRAPHICS_EXTENSIONS]
    for d in dirs:
        for candidate in candidates:
            path = d / candidate
            if path.is_file():
                return path
    return None


def _check_duplicate_sections(body: str) -> list[str]:
    seen: dict[str, list[int]] = {}
    titles: dict[str, str] = {}
    for match in _SECTION.finditer(body):
        title = _balanced_group(body, match.end() - 1)
        norm = " ".join(title.split()).lower()
        seen.setdefault(norm, []).append(_line_of(body, match.start()))
        titles.setdefault(norm, " ".join(title.split()))
    return [
        f"Section '{titles[norm]}' appears {len(lines)} times (lines "
        f"{', '.join(map(str, lines))}); keep one and merge the text."
        for norm, lines in seen.items()
        if len(lines) > 1
    ]


def _check_duplicate_labels(body: str) -> list[str]:
    seen: dict[str, list[int]] = {}
    for match in _LABEL.finditer(body):
        seen.setdefault(match.group(1).strip(), []).append(_line_of(body, match.start()))
    return [
        f"Label '{label}' is defined {len(lines)} times (lines {', '.join(map(str, lines))}); "
        f"labels must be unique."
        for label, lines in seen.items()
        if len(lines) > 1
    ]


def _check_underscores(body: str) -> list[str]:
    text = _MATH.sub(_blank, body)
    text = _NAME_ARGS.sub(_blank, text)
    problems = []
    for match in re.finditer(r"(?<!\\)_", text):
        line = _line_of(text, match.start())
        snippet = body.splitlines()[line - 1].strip()[:60]
        problems.append(
            f"Line {line}: unescaped underscore outside math in '{snippet}'; write \\_ "
            f"(or put it in math mode)."
        )
    return _first_per_line(problems)


def _check_percent_after_numbers(tex_text: str) -> list[str]:
    """'improves by 5% over' starts a comment at the %: the rest of the line silently vanishes."""
    problems = []
    for n, line in enumerate(tex_text.splitlines(), start=1):
        start = _first_comment_start(line)
        if start and line[start - 1].isdigit():
            number = re.search(r"[\d.]*\d$", line[:start])
            value = number.group() if number else line[start - 1]
            problems.append(
                f"Line {n}: '{value}%' starts a comment at the %, so the rest of the line is "
                f"dropped; write {value}\\%."
            )
    return problems


def _first_comment_start(line: str) -> int | None:
    for match in re.finditer(r"%", line):
        backslashes = len(line[: match.start()]) - len(line[: match.start()].rstrip("\\"))
        if backslashes % 2 == 0:
            return match.start()
    return None


def strip_comments(text: str) -> str:
    """Blank out comments (an unescaped % to the end of the line), keeping line numbers."""
    out = []
    for line in text.split("\n"):
        start = _first_comment_start(line)
        out.append(line if start is None else line[:start] + " " * (len(line) - start))
    return "\n".join(out)


def _blank(match: re.Match[str]) -> str:
    """Replace a match by spaces but keep its newlines, so line numbers stay right."""
    return re.sub(r"[^\n]", " ", match.group())


def _balanced_group(text: str, open_index: int) -> str:
    depth = 0
    for i in range(open_index, len(text)):
        if text[i] == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[open_index + 1 : i]
    return text[open_index + 1 :]


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _first_per_line(problems: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for p in problems:
        prefix = p.split(":", 1)[0]
        if prefix not in seen:
            seen.add(prefix)
            out.append(p)
    return out


def add_bib_entries(tex: Path, entries: dict[str, str]) -> list[str]:
    """Add BibTeX ``entries`` (key -> entry) the document's bibliography lacks; the keys added.

    Where the bibliography is a filecontents block in the .tex (The AI Scientist's templates),
    the entries go at the end of its first .bib block; otherwise into the first .bib file the
    document names (or the only one beside it). Keys already there are left alone, so the
    template's own entries always win."""
    tex = Path(tex)
    text = tex.read_text(encoding="utf-8")
    present = bib_keys(bib_text_of(text, tex.parent))
    new = {key: entry.strip() for key, entry in entries.items() if key not in present}
    if not new:
        return []
    addition = "\n" + "\n\n".join(new.values()) + "\n"
    block = next(
        (m for m in _FILECONTENTS.finditer(text) if m.group(1).strip().endswith(".bib")), None
    )
    if block is not None:
        end = block.end(2)
        tex.write_text(text[:end].rstrip("\n") + "\n" + addition + text[end:], encoding="utf-8")
        return list(new)
    bib = _named_bib_file(text, tex.parent)
    if bib is None:
        raise LabtuiError(
            f"{tex} has no bibliography to add citations to",
            "add a filecontents block for references.bib or a \\bibliography{references} line",
        )
    previous = bib.read_text(encoding="utf-8") if bib.is_file() else ""
    bib.write_text(previous.rstrip("\n") + "\n" + addition, encoding="utf-8")
    return list(new)


def _named_bib_file(tex_text: str, latex_dir: Path) -> Path | None:
    names = _bibliography_names(tex_text)
    if names:
        name = names[0]
        return Path(latex_dir) / (name if name.endswith(".bib") else name + ".bib")
    beside = sorted(Path(latex_dir).glob("*.bib"))
    return beside[0] if len(beside) == 1 else None


def _bibliography_names(tex_text: str) -> list[str]:
    names: list[str] = []
    for match in re.finditer(
        r"\\(?:bibliography|addbibresource)\s*(?:\[[^\]]*\])?\{([^}]*)\}", strip_comments(tex_text)
    ):
        names += [n.strip() for n in match.group(1).split(",") if n.strip()]
    return names


def bib_text_of(tex_text: str, latex_dir: Path) -> str:
    """The bibliography a document uses: its filecontents .bib blocks, else the .bib files
    named by \\bibliography{} beside it, else every .bib beside it."""
    blocks = [body for name, body in _filecontents_blocks(tex_text) if name.endswith(".bib")]
    if blocks:
        return "\n".join(blocks)
    latex_dir = Path(latex_dir)
    names = _bibliography_names(tex_text)
    paths = [latex_dir / (n if n.endswith(".bib") else n + ".bib") for n in names]
    if not paths:
        paths = sorted(latex_dir.glob("*.bib"))
    return "\n".join(_read_text(p) for p in paths if p.is_file())


# --------------------------------------------------------------------------------------------
# PDFs
# --------------------------------------------------------------------------------------------


@contextmanager
def _open_pdf(pdf: Path) -> Iterator[Any]:
    import pymupdf  # the `fitz` alias is deprecated in PyMuPDF 1.24+ and warns on import

    pdf = Path(pdf)
    if not pdf.is_file():
        raise LabtuiError(f"PDF not found: {pdf}", hint="compile the paper first")
    try:
        doc = pymupdf.open(pdf)
    except Exception as exc:  # FileDataError, EmptyFileError, ...: all mean "not a PDF"
        raise LabtuiError(
            f"cannot read {pdf.name}: it is empty or not a valid PDF ({exc})",
            hint="recompile the paper; the compile log says why the PDF is broken",
        ) from exc
    try:
        if doc.needs_pass:
            raise LabtuiError(
                f"{pdf.name} is encrypted and needs a password",
                hint="give labtui an unencrypted PDF",
            )
        yield doc
    finally:
        doc.close()


def page_count(pdf: Path) -> int:
    with _open_pdf(pdf) as doc:
        return int(doc.page_count)


def pdf_text(pdf: Path) -> str:
    """All text of a PDF, pages separated by form feeds; an error when there is none."""
    with _open_pdf(pdf) as doc:
        text = "\f".join(page.get_text() for page in doc)
    if not text.strip():
        raise LabtuiError(
            f"{Path(pdf).name} has no extractable text (scanned images only?)",
            hint="the reviewer needs a PDF with a text layer; compile it from LaTeX",
        )
    return text
