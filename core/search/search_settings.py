"""The settings a search may change, and the steps labtui proposes from them by itself.

- **Which settings**: the code's, less those that define the measurement rather than the method
  (seeds, test and evaluation sizes, the data's own settings, logging): a climb that may lower
  ``N_TEST`` or pick a ``DATA_SEED`` can "improve" its metric without improving anything.
  ``[<strategy>] settings`` names the ones a search may change, and overrides this.
- **labtui's own step**: when the model gives no usable proposal (the 1.5B model proposed
  ``HIDDEN_UNITS = 192`` a third time and the climb ended after five minutes), the climb goes on
  as a coordinate search: the setting changed least so far, moved to the nearest value no step
  has run (twice or half a number, the other choice, the other truth value). The step says it
  was labtui's, and it is judged like any other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..answers.experiment_answers import Proposal
from ..answers.setting_answers import offered
from ..errors import ConfigError
from ..runs.setting_changes import file_settings, project_settings, same_value
from ..source.setting_edit import Editable
from ..steps.attempts import code_files

if TYPE_CHECKING:
    from ..settings.sections import SearchSection
    from ..stage_context import StageContext
    from ..workspace.project import Project

# words of a setting's name that say it defines what is measured, or only what is printed
MEASURE_WORDS = frozenset(
    "seed seeds test tests eval evaluation val valid validation data dataset log logging "
    "print verbose plot curve save checkpoint out output dir path device threads workers "
    "smoke budget".split()
)
# a number's nearest moves first: a coordinate search tries small steps before large ones
FACTORS = (2.0, 0.5, 1.5, 0.75, 4.0, 0.25, 3.0, 1 / 3, 8.0, 0.125, 10.0, 0.1)
FROM_ZERO_INT = (1, 2, 4, 8, 16)
STEPS_BESIDE = (1, -1, 2, -2)
FROM_ZERO_FLOAT = (0.1, 0.01, 0.3, 0.001)
LABTUI_STEP = "labtui's step"


def search_settings(ctx: StageContext, section: SearchSection) -> list[Editable]:
    """The settings a search's proposals may change: the code's, less those that define the
    measurement (``[<strategy>] settings`` picks some instead); a name there the code does not
    state is a ConfigError listing what it has."""
    root = ctx.project.root
    found = offered(project_settings(root, code_files(ctx.project)))
    if not section.settings:
        headings = block_headings(root, found)
        return [s for s in found if not defines_the_measure(s.name, headings.get(s.name, ""))]
    names = {setting.name: setting for setting in found}
    unknown = [name for name in section.settings if name not in names]
    if unknown:
        raise ConfigError(
            f"labtui.toml: [{ctx.config.experiment.strategy}] settings names {', '.join(unknown)}, "
            f"which {', '.join(code_files(ctx.project))} does not state",
            "name settings of the code: " + (", ".join(names) or "(it states none)"),
        )
    return [names[name] for name in section.settings]


def defines_the_measure(name: str, heading: str = "") -> bool:
    """Whether a setting sets what is measured or printed, not the method: its name says so
    (``N_TEST``, ``DATA_SEED``, ``LOG_EVERY``, ``eval.batch_size``), or the comment heading its
    block of the code does (``NOISE`` under ``# Data``, ``N_GENERATED`` under ``# Evaluation``).
    ``HIDDEN_UNITS``, ``lr``, ``DROPOUT`` under ``# Model`` are the method's."""
    return bool(MEASURE_WORDS & (_words(name) | _words(heading.split("(")[0])))


def _words(text: str) -> set[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)  # evalEvery -> eval_Every
    return set(re.split(r"[^a-z0-9]+", spaced.lower())) - {""}


def block_headings(root: Path, settings: list[Editable]) -> dict[str, str]:
    """{name: the comment line heading its block} for the settings of Python files: the
    comment-only line above the setting with no blank line between ("# Data" over ``N_TRAIN =
    200``, as the templates and much research code group their constants)."""
    headings: dict[str, str] = {}
    texts: dict[str, list[str]] = {}
    for setting in settings:
        if not setting.where.endswith(".py") or not setting.line:
            continue
        if setting.where not in texts:
            path = Path(root) / setting.where
            texts[setting.where] = path.read_text(encoding="utf-8").splitlines()
        heading = heading_above(texts[setting.where], setting.line - 1)
        if heading:
            headings[setting.name] = heading
    return headings


def heading_above(lines: list[str], index: int) -> str:
    for line in reversed(lines[max(0, index - 40) : index]):
        stripped = line.strip()
        if not stripped:
            return ""
        if stripped.startswith("#") and not stripped.strip("#-= "):
            return ""  # a rule of dashes closes the block
        if stripped.startswith("#"):
            return stripped.lstrip("# ")
    return ""


def nearby_values(setting: Editable) -> list[Any]:
    """Values near ``setting``'s, nearest first: another choice, the other truth value, or a
    number moved by a factor (a fraction near 1, such as a momentum, moved by its distance to
    1, so 0.9 gives 0.95 and 0.8, never 1.8), a whole number then by one or two as well, its
    sign kept; [] for a text without choices or a list."""
    value = setting.value
    if setting.choices:
        return [choice for choice in setting.choices if choice != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        if value == 0:
            return list(FROM_ZERO_INT)
        # then a step or two beside it: a count near its best is worth trying too
        moved = [round(value * f) for f in FACTORS] + [value + d for d in STEPS_BESIDE]
        return _unique(value, [v for v in moved if v * value > 0])  # its sign kept
    if isinstance(value, float):
        return _unique(value, _float_moves(value))
    return []


def _float_moves(value: float) -> list[float]:
    if value == 0:
        return list(FROM_ZERO_FLOAT)
    if 0.5 < value < 1:
        moved = [1 - (1 - value) * f for f in FACTORS]
    else:
        moved = [value * f for f in FACTORS]
    # a fraction stays one (a momentum of 1.8 or 0 is no nearby value)
    return [v for v in moved if 1e-9 < v < 1 - 1e-9] if 0 < value < 1 else moved


def _unique(value: Any, moves: Any) -> list[Any]:
    seen: list[Any] = []
    for move in moves:
        neat = float(f"{move:.4g}") if isinstance(move, float) else move
        if neat != value and neat not in seen:
            seen.append(neat)
    return seen


def labtui_proposal(
    settings: list[Editable],
    changed: str,
    is_new: Callable[[dict[str, Any]], bool],
    why: str,
) -> Proposal | None:
    """labtui's own next step: the setting named least in ``changed`` (the earlier steps'
    changes) moved to its nearest value for which ``is_new``; None when every nearby value of
    every setting has run. ``why``: what the model's proposal lacked, for the ledger."""
    by_use = sorted(settings, key=lambda s: len(re.findall(rf"\b{re.escape(s.name)}\b", changed)))
    for setting in by_use:
        for value in nearby_values(setting):
            if is_new({setting.name: value}):
                return Proposal.model_validate(
                    {
                        "description": f"Set {setting.name} from {setting.value!r} to {value!r} ({LABTUI_STEP})",
                        "change": f"{LABTUI_STEP}, as the model gave no usable proposal ({why})",
                        "settings": {setting.name: value},
                    }
                )
    return None


def values_at(project: Project, commit: str) -> dict[str, Any]:
    """{name: value} of the settings the experiment's files state at ``commit``."""
    found: dict[str, Any] = {}
    for name in code_files(project):
        text = project.file_at(commit, name)
        for setting in file_settings(text, name) if text is not None else []:
            found.setdefault(setting.name, setting.value)
    return found


def back_to(values: dict[str, Any], settings: list[Editable], wanted: dict[str, Any]) -> bool:
    """Whether setting ``wanted`` puts every one of ``settings`` back to ``values`` (the
    search's start): the baseline's code again, though its text may differ (0.50 and 0.5)."""
    after = {setting.name: setting.value for setting in settings} | wanted
    return all(same_value(values[name], value) for name, value in after.items() if name in values)
