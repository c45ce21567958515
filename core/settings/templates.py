"""Research templates: where to find them and whether a folder follows the contract.

The contract is The AI Scientist's, so its public templates work unchanged: ``experiment.py``
(run as ``python experiment.py --out_dir=run_i``, writing ``run_i/final_info.json`` as a dict of
dataset -> {"means": {...}}), ``plot.py``, ``prompt.json`` (system, task_description),
``seed_ideas.json`` and ``latex/template.tex`` with a bibliography.
"""

from __future__ import annotations

import json
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import TemplateError
from ..source.parse import parse_code
from .contract import FINAL_INFO

REQUIRED_FILES = (
    "experiment.py",
    "plot.py",
    "prompt.json",
    "seed_ideas.json",
    "latex/template.tex",
)


def builtin_templates_dir() -> Path:
    return Path(str(resources.files("labtui.templates")))


DEFAULT_PAPER = "paper_default/template.tex"  # for projects that bring no LaTeX of their own


def default_paper() -> Path:
    """labtui's bundled paper: a one-column article in an ML conference layout, with a
    bibliography and the write-up's placeholders."""
    return builtin_templates_dir() / DEFAULT_PAPER


RUN_TERMS = "labtui_run.py"  # the built-in templates' reader of a run's budget and seed


def copy_template(source: Path, target: Path) -> None:
    """A template's files into ``target``, with labtui's ``labtui_run.py`` beside them when its
    code imports it and brings none of its own (the built-in templates share one file, and a
    copy of one made elsewhere still runs)."""
    shutil.copytree(
        source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    imports = re.compile(r"^\s*(?:from|import)\s+labtui_run\b", re.MULTILINE)
    needs = any(
        imports.search(p.read_text(encoding="utf-8", errors="replace")) for p in target.glob("*.py")
    )
    if needs and not (target / RUN_TERMS).exists():
        shutil.copy2(builtin_templates_dir() / RUN_TERMS, target / RUN_TERMS)


def list_templates() -> list[str]:
    root = builtin_templates_dir()
    return sorted(p.name for p in root.iterdir() if (p / "experiment.py").exists())


def find_template(name_or_path: str) -> Path:
    """A built-in template by name, or any folder by path."""
    candidate = Path(name_or_path).expanduser()
    if candidate.is_dir():
        return candidate.resolve()
    builtin = builtin_templates_dir() / name_or_path
    if "/" not in name_or_path and builtin.is_dir():
        return builtin
    known = ", ".join(list_templates()) or "none installed"
    raise TemplateError(
        f"template {name_or_path!r} not found (neither a folder nor a built-in template)",
        f"use one of: {known}, or a path to a template folder",
    )


def _check_python(path: Path, problems: list[str]) -> None:
    try:
        parse_code(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        problems.append(f"{path.name}: Python syntax error at line {exc.lineno}: {exc.msg}")
    except UnicodeDecodeError:
        problems.append(f"{path.name}: not UTF-8 text")


def _load_json(path: Path, problems: list[str]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        problems.append(
            f"{path.name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        )
    return None


def _check_prompt(data: Any, problems: list[str]) -> None:
    if not isinstance(data, dict):
        problems.append('prompt.json: must be an object with "system" and "task_description"')
        return
    for key in ("system", "task_description"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            problems.append(f'prompt.json: field "{key}" is missing or not a non-empty string')


def _check_seed_ideas(data: Any, problems: list[str]) -> None:
    if not isinstance(data, list):
        problems.append("seed_ideas.json: must be a list of idea objects")
        return
    for i, idea in enumerate(data):
        if not isinstance(idea, dict):
            problems.append(f"seed_ideas.json: entry {i} is not an object")
            continue
        missing = [k for k in ("Name", "Title", "Experiment") if not isinstance(idea.get(k), str)]
        if missing:
            problems.append(
                f"seed_ideas.json: entry {i} lacks string field(s) {', '.join(missing)}"
            )


def check_final_info(data: Any, where: str) -> list[str]:
    """Problems with a final_info.json payload: a dict of dataset -> {"means": {name: number}}."""
    if not isinstance(data, dict) or not data:
        return [f'{where}: must be a non-empty object of dataset -> {{"means": {{...}}}}']
    problems = []
    for dataset, entry in data.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("means"), dict):
            problems.append(f'{where}: entry "{dataset}" has no "means" object')
    return problems


def latex_problems(path: Path, name: str = "latex/template.tex") -> list[str]:
    """What a paper's LaTeX lacks of the contract: the document, a bibliography and its
    \bibliography command ([] when nothing)."""
    problems: list[str] = []
    _check_latex(path, problems, name)
    return problems


def _check_latex(path: Path, problems: list[str], name: str = "latex/template.tex") -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    for needle in (r"\begin{document}", r"\end{document}"):
        if needle not in text:
            problems.append(f"{name}: no {needle}")
    has_bib = re.search(r"\\begin\{filecontents\*?\}\{[^}]*\.bib\}", text) or any(
        path.parent.glob("*.bib")
    )
    if not has_bib:
        problems.append(
            f"{name}: no bibliography (a filecontents block with references.bib, "
            "or a .bib file beside it)"
        )
    if r"\bibliography{" not in text:
        problems.append(f"{name}: no \\bibliography{{...}} command")


def validate_template(folder: Path) -> None:
    """Raise TemplateError naming every missing or malformed file of a template folder."""
    folder = Path(folder)
    problems: list[str] = []
    for name in REQUIRED_FILES:
        if not (folder / name).is_file():
            problems.append(f"{name}: missing")
    for name in ("experiment.py", "plot.py"):
        if (folder / name).is_file():
            _check_python(folder / name, problems)
    if (folder / "prompt.json").is_file():
        _check_prompt(_load_json(folder / "prompt.json", problems), problems)
    if (folder / "seed_ideas.json").is_file():
        _check_seed_ideas(_load_json(folder / "seed_ideas.json", problems), problems)
    if (folder / "latex/template.tex").is_file():
        _check_latex(folder / "latex/template.tex", problems)
    shipped_baseline = folder / "run_0" / FINAL_INFO
    if shipped_baseline.is_file():
        data = _load_json(shipped_baseline, problems)
        if data is not None:
            problems += check_final_info(data, f"run_0/{FINAL_INFO}")
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        raise TemplateError(
            f"template {folder} does not follow the template contract:\n{listing}",
            "add or repair the files listed (see docs/templates.md)",
        )
