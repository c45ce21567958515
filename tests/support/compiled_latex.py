"""LaTeX fixtures compiled once per content for the test session: a document that several tests
(or each pytest-xdist worker's copy of a module fixture) need as a PDF is compiled by the first
that asks, with labtui's own compile, and copied for the others.

    outcome = latex_pdfs.compile(latex / "paper.tex", root / "paper.pdf", timeout_s=120)

The key is every file of the source's folder (the .tex, its style files and bibliography), so an
edited fixture is compiled afresh. Only successful compiles are kept: a failure is compiled, and
reported, every time. Tests of the compile itself (tests/latex/) call ``compile_latex`` directly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

from labtui.core.latex.compile import BUILD_DIR_NAME, CompileOutcome, compile_latex
from labtui.core.latex.log import LatexMessage
from support.session_files import locked


class CompiledPdfs:
    """A content-keyed store of compiled PDFs under ``folder`` (shared by the session's
    workers)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def compile(self, tex: Path, pdf: Path, timeout_s: float = 300) -> CompileOutcome:
        """As ``compile_latex(tex, pdf, timeout_s)``, from the store when this content was
        compiled before in the session."""
        entry = self.folder / source_key(tex)
        with locked(entry.with_suffix(".lock")):
            if (entry / "outcome.json").is_file():
                return _copied(entry, pdf)
            outcome = compile_latex(tex, pdf, timeout_s=timeout_s)
            if outcome.ok:
                _keep(entry, outcome)
            return outcome


def source_key(tex: Path) -> str:
    """A digest of the document's name and of every file beside it (the build folder aside)."""
    digest = hashlib.sha256(tex.name.encode())
    folder = tex.parent
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder)
        if relative.parts[0] == BUILD_DIR_NAME:
            continue
        digest.update(b"\0" + str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:32]


def _keep(entry: Path, outcome: CompileOutcome) -> None:
    partial = entry.with_name(entry.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    assert outcome.pdf is not None
    shutil.copyfile(outcome.pdf, partial / "paper.pdf")
    record = dataclasses.asdict(outcome)
    record["pdf"] = None
    (partial / "outcome.json").write_text(json.dumps(record), encoding="utf-8")
    partial.replace(entry)  # whole or not at all: a worker never reads half an entry


def _copied(entry: Path, pdf: Path) -> CompileOutcome:
    pdf.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(entry / "paper.pdf", pdf)
    record = json.loads((entry / "outcome.json").read_text(encoding="utf-8"))
    messages = {kind: [LatexMessage(**m) for m in record[kind]] for kind in ("errors", "warnings")}
    return CompileOutcome(**{**record, **messages, "pdf": pdf})
