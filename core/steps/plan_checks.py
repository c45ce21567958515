"""What a model's plan is checked for before it is kept; each problem asks the model again.

- **Settings said in words**: a run whose words are nothing but settings of the code gets them
  as its settings (core/runs/setting_words.py), so code makes it.
- **A run that changes nothing**: settings it names (in its ``settings`` or its words) all at the
  baseline's values; Qwen2.5-Coder-1.5B planned "Change BETA_SCHEDULE to 'linear'" for code
  whose schedule was linear.
- **Settings the code does not have, or values that do not fit**: the error gives the
  setting's facts (its type, its value now, its choices).
- **A setting the code does not have, set in words**: "'NUM_DIFFUSION_STEPS' to 100" (the 1.5B
  model, for code whose setting is NUM_TIMESTEPS) reads as a settings change of a name the
  code never mentions; asked again with the nearest names. A run that says it adds the new
  setting ("add a NUM_DIFFUSION_STEPS parameter") is a code change and goes to the coder.
- **An expectation against the idea's own hypothesis**: the 1.5B model's plan expected the
  accuracy to fall where its idea said the change would raise it. Where the hypothesis says
  which way a metric moves and a run expects the other way, the run is asked again — unless the
  run goes the other way too (it lowers what the hypothesis raises): then the opposite outcome
  is the hypothesis's own prediction.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace

from ..runs.planned_settings import changes_nothing
from ..runs.setting_changes import SettingError, planned_changes
from ..runs.setting_words import settings_in_words
from ..source.setting_edit import Editable
from ..workspace.artifacts import PlannedRun

HIGHER, LOWER = "higher", "lower"
# Words of a direction only: "improves" is higher for accuracy and lower for a loss, and "more"
# or "fewer" often says what the run changes ("fewer features"), not how the metric moves.
_UP = r"higher|increas\w*|rais\w*|rise|rises|rising|boost\w*"
_DOWN = r"lower|decreas\w*|reduc\w*|falls?|falling|drops?|dropping|declin\w*"
# "NUM_STEPS to 100", "'LR' = 0.1": a constant's name set to a value in words
_NAME_SET_TO = re.compile(r"[\'\"`]?\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\b[\'\"`]?\s*(?:to|=|:)\s*\S")
_ADDS = re.compile(r"\b(?:add\w*|introduc\w*|creat\w*|defin\w*|implement\w*|new)\b", re.I)
_NEGATION = re.compile(r"\b(?:not|no|never|n't|without)\b", re.IGNORECASE)
# The run's own direction of change: "a smaller network", "decrease the learning rate".
_REVERSED = re.compile(
    r"\b(?:decreas\w*|reduc\w*|lower\w*|smaller|fewer|less|halv\w*|remov\w*|narrow\w*|shrink\w*)",
    re.IGNORECASE,
)


def with_worded_settings(runs: list[PlannedRun], settings: list[Editable]) -> list[PlannedRun]:
    """Each run that lists no settings but whose words are nothing but settings of the code
    ("HIDDEN_UNITS = 128"), with those settings: made by code, not by a coder."""
    return [
        run if run.settings else replace(run, settings=settings_in_words(run.change, settings))
        for run in runs
    ]


def checked_plan(
    runs: list[PlannedRun],
    code: dict[str, str | None],
    settings: list[Editable],
    hypothesis: str,
) -> list[PlannedRun]:
    """The runs, when each changes something the code has, with values that fit, and expects
    what the idea's hypothesis predicts; ValueError names the first run that does not."""
    for number, run in enumerate(runs, 1):
        problem = _run_problem(run, code, settings) or _against_hypothesis(
            run, hypothesis, _lowers_a_setting(run, settings)
        )
        if problem:
            raise ValueError(f"run {number} ({run.change!r}) {problem}")
    return runs


def _run_problem(run: PlannedRun, code: dict[str, str | None], settings: list[Editable]) -> str:
    if run.settings:
        try:
            changes = planned_changes(settings, run.settings)
        except SettingError as exc:
            return f"cannot be made: {exc}"
        if not changes:
            held = ", ".join(f"{name} = {value!r}" for name, value in run.settings.items())
            return f"changes nothing: the baseline already has {held}; plan another value"
        return ""
    same = changes_nothing(run.change, code)
    if same:
        return f"changes nothing: {same}; plan a value the baseline does not have"
    return _unknown_setting(run.change, code, settings)


def _unknown_setting(change: str, code: dict[str, str | None], settings: list[Editable]) -> str:
    """Why ``change`` sets, in words, a constant the code never mentions ('' when it does not,
    or says it adds one)."""
    if _ADDS.search(change):
        return ""
    text = "\n".join(t for t in code.values() if t)
    for match in _NAME_SET_TO.finditer(change):
        name = match.group(1)
        if re.search(rf"\b{name}\b", text):
            continue
        names = [s.name for s in settings]
        near = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f" (did you mean {' or '.join(near)}?)" if near else ""
        return (
            f"sets {name}, which the code does not have{hint}; name one of its settings in "
            f'"settings" ({", ".join(names[:12]) or "it states none"}), or say what code to add'
        )
    return ""


def _against_hypothesis(run: PlannedRun, hypothesis: str, lowers: bool) -> str:
    """Why ``run``'s expectations contradict ``hypothesis`` ('' when they do not, or when the
    hypothesis says nothing code can read about a metric's direction)."""
    if not hypothesis or lowers or _goes_down(run):
        return ""
    for metric, expected in run.expect.items():
        stated = stated_direction(hypothesis, metric)
        if stated and stated != expected:
            return (
                f"expects {metric} {expected}, but the idea's hypothesis says it goes {stated} "
                f"({hypothesis.strip()[:160]!r}); expect what the hypothesis predicts"
            )
    return ""


def _lowers_a_setting(run: PlannedRun, settings: list[Editable]) -> bool:
    """Whether a number the run sets is smaller than the baseline's."""
    try:
        changes = planned_changes(settings, run.settings) if run.settings else []
    except SettingError:
        return False
    return any(
        isinstance(c.old, int | float) and isinstance(c.new, int | float) and c.new < c.old
        for c in changes
    )


def _goes_down(run: PlannedRun) -> bool:
    """Whether the run's words say it lowers or removes something: its outcome may then be the
    opposite of the hypothesis's and still be what the hypothesis predicts."""
    return bool(_REVERSED.search(run.change))


def stated_direction(hypothesis: str, metric: str) -> str:
    """Which way ``hypothesis`` says ``metric`` moves ("higher"/"lower"; '' when it names the
    metric with no direction, with both, or under a negation). The metric is found by its
    words: ``test_accuracy_mean`` as "test accuracy" or "accuracy"."""
    found = set()
    for sentence in re.split(r"(?<=[.;!?])\s+", hypothesis):
        if not _mentions(sentence, metric) or _NEGATION.search(sentence):
            continue
        up, down = (
            re.search(rf"\b(?:{_UP})\b", sentence, re.I),
            re.search(rf"\b(?:{_DOWN})\b", sentence, re.I),
        )
        if up and not down:
            found.add(HIGHER)
        elif down and not up:
            found.add(LOWER)
    return found.pop() if len(found) == 1 else ""


def _mentions(sentence: str, metric: str) -> bool:
    words = [w for w in metric.lower().removesuffix("_mean").split("_") if w]
    if not words:
        return False
    text = sentence.lower()
    return metric.lower() in text or " ".join(words) in text or words[-1] in text.split()
