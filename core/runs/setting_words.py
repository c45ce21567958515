"""Settings a change states in words, when the words say nothing else: "HIDDEN_UNITS = 128",
"Set LEARNING_RATE to 0.1 and HIDDEN_UNITS to 64", "ACTIVATION: 'relu'".

Offered the code's settings as an enum, the 1.5B model still wrote ``"settings": []`` and put
the change in words (``"change": "HIDDEN_UNITS = 128"``), and the run went to a whole-file edit.
What code can read, code reads: when every word of a change is a setting of the code, its value,
or a connecting word, the change is that settings change. A change that says anything more
("... and add dropout") is code, and stays the coder's.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ..source.setting_edit import Editable, SettingError, check_value

_VALUE = (
    r"'[^'\n]*'|\"[^\"\n]*\"|\(.*?\)|\[.*?\]"
    r"|[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|True\b|False\b|[A-Za-z_][\w-]*"
)
_SETS = r"(?:\s+from\s+`?\S+?`?)?\s*(?:\bto\b|=|->|→|:)\s*"
# What may stand around the settings in a change that is nothing but them.
_FILLER = re.compile(
    r"\b(?:set|sets|setting|change|changes|changing|the|a|an|and|its|value|values|of|in|"
    r"experiment\.py|increase|increases|decrease|decreases|raise|lower|use|run|with|instead|"
    r"only|both|also|then|constant|parameter|hyperparameter|from|baseline|number|try|"
    r"trying)\b|[,.;:`'\"()\s]",
    re.IGNORECASE,
)


def settings_in_words(change: str, settings: list[Editable]) -> dict[str, Any]:
    """{name: value} the words set, when they set settings of the code and say nothing else;
    {} otherwise (no setting named, a value that does not fit, or more than settings)."""
    found: dict[str, Any] = {}
    rest = change
    for setting in sorted(settings, key=lambda s: -len(s.name)):
        pattern = re.compile(
            rf"`?\b{_spelled(setting.name)}\b`?{_SETS}`?(?P<value>{_VALUE})`?", re.IGNORECASE
        )
        match = pattern.search(rest)
        if match is None:
            continue
        value = _typed(match.group("value"), setting)
        if value is _UNFIT:
            return {}
        found[setting.name] = value
        rest = rest[: match.start()] + " " + rest[match.end() :]
    if not found or _FILLER.sub("", rest):
        return {}
    return found


def _spelled(name: str) -> str:
    """The setting's name as code writes it or as words do: HIDDEN_UNITS, hidden units."""
    words = [re.escape(part) for part in re.split(r"[_.]", name) if part]
    return rf"(?:{re.escape(name)}|{r'[ _]'.join(words)})"


_UNFIT = object()


def _typed(written: str, setting: Editable) -> Any:
    """The value the words give, in the setting's type (a bare word is a string); _UNFIT when
    it does not fit the setting."""
    try:
        value = ast.literal_eval(written)
    except (ValueError, SyntaxError):
        value = written
    try:
        return check_value(setting, value)
    except SettingError:
        return _UNFIT
