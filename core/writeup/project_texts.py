"""What a project showed its model that a paper must not copy: the instructions the ideas and the
plan give ("Compare final test accuracy … and plot the test-accuracy curves to see whether …"),
and every reason labtui gave when it refused an answer. Beside labtui's own prompts and messages
(core/prose/copied.py), the texts ``labtui check`` and the write-up hold a project's paper to.
The idea's title and hypothesis are not among them: they are what the paper is about.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..events import Refused
from ..journal import JOURNAL_NAME, read_events
from ..prose.copied import Shingles, shingles, with_texts
from ..runs.effect_text import describe
from ..runs.effects import overall, project_effects, several_datasets
from ..workspace.artifacts import IDEAS, PLAN
from ..workspace.project import STATE_DIR

# The fields of ideas.json and plan.json that tell what to do, not what was found.
INSTRUCTION_FIELDS = ("Experiment", "experiment", "change", "measure")
# What a refusal quotes of the answer it refused: “…”, "…" or '…' (an apostrophe inside, as in
# "doesn't", does not end a quote; nor does a short 'word' quoted in between start one).
_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"|(?<!\w)'(?:[^'\n]|'(?=\w)){12,}'(?!\w)")


def project_shingles(root: Path) -> Shingles:
    """labtui's own texts and the project's instructions and refusals, as shared runs of words,
    less the words labtui writes into the paper about these runs: a refusal states the computed
    effects ("run_1 is worse than run_0 on test_accuracy_mean"), and the paper's sentence of
    findings says the same, as code wrote it."""
    return with_texts(project_texts(Path(root))) - shingles(fact_texts(Path(root)))


def fact_texts(root: Path) -> list[str]:
    """The effects of the project's runs as labtui says them (overall and one by one)."""
    found = project_effects(root)
    texts = [
        overall([e for e in effects if e.primary] or effects).text for effects in found.values()
    ]
    for effects in found.values():
        several = several_datasets(effects)
        texts += [describe(e, several) for e in effects]
    return texts


def project_texts(root: Path) -> list[str]:
    texts = []
    for name in (IDEAS, PLAN):
        texts += _fields(_json(root / name), INSTRUCTION_FIELDS)
    journal = root / STATE_DIR / JOURNAL_NAME
    if journal.is_file():
        # labtui's words only: a refusal quotes the answer it refused, which the next answer
        # may rightly keep
        texts += [
            _QUOTED.sub(" ", e.reason) for e in read_events(journal) if isinstance(e, Refused)
        ]
    return texts


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _fields(data: Any, names: tuple[str, ...]) -> list[str]:
    """The string values of ``names`` anywhere in ``data``."""
    if isinstance(data, list):
        return [text for item in data for text in _fields(item, names)]
    if not isinstance(data, dict):
        return []
    found = [v for k, v in data.items() if k in names and isinstance(v, str)]
    return found + [
        t for v in data.values() if isinstance(v, dict | list) for t in _fields(v, names)
    ]
