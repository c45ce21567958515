"""Compiling LaTeX: latexmk, or pdflatex + bibtex, into a PDF and the parsed log.

Compiles run in ``<tex dir>/build`` so the source folder stays clean and the last good PDF is
never touched by a failing run: the built PDF is copied to its destination only after a
successful compile, atomically. Every TeX process runs in its own process group, so a timeout
(an infinite macro loop is easy to write) kills latexmk, pdflatex and bibtex together.

The log is parsed by ``core.latex.log``; chktex, the code checks and the bibliography are in
``core.latex.chktex``, ``core.latex.checks`` and ``core.latex.bibliography``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabtuiError
from ..machine.processes import CollectedRun, run_collected, tool_available
from ..pdf.document import page_count
from .log import LatexMessage, parse_blg, parse_log
from .source import filecontents_blocks, read_text_lenient

TEX_INSTALL_HINT = (
    "install TeX Live: sudo apt-get install latexmk texlive-latex-extra "
    "texlive-fonts-recommended texlive-bibtex-extra chktex (macOS: brew install --cask mactex)"
)
BUILD_DIR_NAME = "build"
LOG_TAIL_LINES = 40
KILL_GRACE_S = 2.0
# TeX wraps its log at 79 columns by default, splitting messages mid-word; these kpathsea
# variables (read from the environment) keep every message on one line for the parser.
TEX_LOG_ENV = {"max_print_line": "10000", "error_line": "254", "half_error_line": "238"}


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

    log_text = read_text_lenient(build / f"{tex.stem}.log")
    errors, warnings = parse_log(log_text, tex.name)
    warnings += parse_blg(read_text_lenient(build / f"{tex.stem}.blg"))
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


def _run_latexmk(tex: Path, deadline: float) -> CollectedRun:
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
    return run_collected(cmd, tex.parent, deadline, _tex_env(), KILL_GRACE_S)


def _run_pdflatex_chain(tex: Path, build: Path, deadline: float) -> CollectedRun:
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
    run = run_collected(latex_cmd, tex.parent, deadline, _tex_env(), KILL_GRACE_S)
    outputs.append(run.output)
    if run.returncode != 0 or run.timed_out:
        return CollectedRun(run.returncode, "\n".join(outputs), run.timed_out)
    if "\\bibdata" in read_text_lenient(build / f"{tex.stem}.aux"):
        if not tool_available("bibtex"):
            raise LabtuiError("bibtex was not found on PATH", hint=TEX_INSTALL_HINT)
        # bibtex runs beside the .aux; the .bib files live beside the .tex (or in build/).
        bib_env = _tex_env({"BIBINPUTS": f"{tex.parent}{os.pathsep}{build}{os.pathsep}"})
        run = run_collected(["bibtex", tex.stem], build, deadline, bib_env, KILL_GRACE_S)
        outputs.append(run.output)
        if run.timed_out:
            return CollectedRun(run.returncode, "\n".join(outputs), True)
    for _ in range(2):
        run = run_collected(latex_cmd, tex.parent, deadline, _tex_env(), KILL_GRACE_S)
        outputs.append(run.output)
        if run.returncode != 0 or run.timed_out:
            break
    return CollectedRun(run.returncode, "\n".join(outputs), run.timed_out)


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


# ---- filecontents ---------------------------------------------------------------------------


def _drop_stale_filecontents(tex_text: str, build: Path) -> None:
    """Delete build/ copies of filecontents files so TeX writes them afresh.

    LaTeX's filecontents never overwrites an existing file, so after the citations stage
    adds an entry, the old references.bib in build/ would otherwise win and the new
    citation would stay undefined.
    """
    for name, _ in filecontents_blocks(tex_text):
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
        for name, _ in filecontents_blocks(tex_text)
        if (tex_dir / name).is_file()
    ]
