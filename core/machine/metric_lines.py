"""Numbers a running experiment prints, parsed from its log lines (metric_series.py keeps them
for the live plot).

Experiments report progress in many loose formats: ``seed 0 epoch 25/200 train_loss 0.41`` (the
moons template), ``step=100 loss=2.03``, ``loss: 0.34 - accuracy: 0.91`` (Keras), ``| epoch 3 |
loss 0.5 |``, a JSON object per line, or a Python dict repr (Hugging Face's Trainer). The parser
accepts all of them and reads a ``step``/``epoch``/``iter`` as the x coordinate rather than as a
metric. Colour codes (colorlog, tqdm) and Rich markup printed raw (``[bold green]``) are removed
first, and a name keeps the one word that qualifies it: ``train loss: 2.3 test loss: 2.4`` reports
``train_loss`` and ``test_loss``, not one ``loss`` twice (see ``_qualified`` for the rule).

Log lines arrive by the hundred thousand, so parsing is built to cost almost nothing on lines
that carry no metric: a line without a digit is rejected by one regex scan, and everything else
is one ``findall`` (after a substitution when it has an escape character or a Rich tag).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..events import LogLine, MetricPointData, MetricsReported

# The x coordinate, best first: when a line names several ("epoch 2 step 4000"), the finest wins.
STEP_KEYS: tuple[str, ...] = ("step", "global_step", "iteration", "iter", "epoch", "batch")
_STEP_RANK = {name: rank for rank, name in enumerate(STEP_KEYS)}

# Numbers that say which repetition a line belongs to, not how well it went: "seed 1" starts a
# new curve labelled "seed 1" instead of becoming a metric.
GROUP_KEYS = frozenset({"seed", "run", "fold", "trial", "rep", "repeat"})

# Words that often precede a number in prose ("took 3 s", "line 12", "saved to 4 files").
STOPWORDS = frozenset(
    "a an the to of in at on for from by with after before than and or is was are were be "
    "line lines file files version pid port code exit took using over per every about only "
    "first last all has have had got found wrote saved loaded read size shape dim dims "
    "python cuda torch numpy gpu gpus cpu cpus device devices worker workers thread threads".split()
)

# A bare "name value" pair (no = or :) is only trusted when the name sounds like a metric, or
# the line has other pairs too: "Downloading 100 files" must not become a metric "Downloading".
# Searched in the lower-cased name: IGNORECASE made the search 40 times slower on long names.
_METRIC_HINT = re.compile(
    r"loss|acc|err|ppl|perplex|f1|auc|bleu|rouge|reward|score|mse|mae|rmse|lr|norm|prec|recall"
    r"|iou|map|return|nll|kl|entropy|_"
)

# Names that measure time, not progress: plotted on request, never chosen by default.
_TIME_LIKE = re.compile(
    r"time|elapsed|duration|latency|clock"
    r"|(?:^|[_./])(?:eta|sec|secs|seconds|wall|s|ms|us)(?:$|[_./])",  # whole parts: not "beta"
    re.IGNORECASE,
)
# Metrics where smaller is better, for colouring deltas against the baseline.
_LOWER_IS_BETTER = re.compile(
    r"loss|err|ppl|perplex|mse|mae|rmse|nll|time|elapsed|duration|latency|wall|regret|(?:^|_)s$",
    re.IGNORECASE,
)

# A log record's level is neither a metric ("WARNING: 3 workers died") nor a qualifier ("INFO
# loss: 2"); uppercase only, as "error: 0.12" and "error rate" can be metrics.
_LOG_LEVELS = frozenset("TRACE DEBUG INFO NOTICE WARN WARNING ERROR CRITICAL FATAL".split())

_ANY_DIGIT = re.compile(r"\d").search
_ASCII_DIGITS = "0123456789"


def _has_digit(line: str) -> bool:
    """Whether a number may be in ``line``: ten substring scans at memchr speed (a regex's
    ``\\d`` crawled through a flood's 1 KB lines at 70 MB/s), the regex only for the rare line
    with non-ASCII characters, whose digits ``\\d`` also knows."""
    return any(digit in line for digit in _ASCII_DIGITS) or (
        not line.isascii() and _ANY_DIGIT(line) is not None
    )


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_PAIR = re.compile(
    # A name not glued to a word, path or number before it ("10ms/step" names nothing), in
    # optional quotes (dict reprs), then "=", ":" or spaces, the number, and "/total" if any.
    # The name may be two words ("train loss"), split again by _qualified. Its first part is
    # atomic and ends in a word character: the same matches as letting it backtrack (only the
    # whole run of name characters can be followed by a separator) at a fraction of the cost.
    r"""(?<![\w./-])["']?((?>[A-Za-z_][\w./-]*+)(?<=\w)"""
    r"""(?: [A-Za-z][A-Za-z0-9]*+(?=["']?[\s:=]))?)["']?"""
    rf"(\s*[:=]\s*|\s+)({_NUMBER})(?:\s*/\s*(\d+))?"
    # The number must end there: "2024-01-02" or "3.5GB" are not values.
    r"""(?=$|[\s,;|)\]}%"']|:(?:\s|$))"""
)

# Only the head of a huge line is parsed: metrics come first, dumps of tensors after.
MAX_PARSED_CHARS = 2000
# A flood of output is sampled for metrics: the newest lines of each pipe read, a contiguous
# window (a stride would alias with a metric printed every n-th line). A plot cannot show more
# than a couple of points per column anyway, and the pump that parses also drains the pipe:
# 256 lines a read made a journaled flood of 100k metric lines take 1.0 s instead of 0.3 s.
MAX_PARSED_PER_READ = 32
MAX_JSON_DEPTH = 3

# Terminal escape sequences: CSI (colours, cursor moves), OSC (titles, hyperlinks) closed by BEL
# or ST, the DCS/SOS/PM/APC strings, and the two-character escapes; a lone ESC goes too.
_ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|[ -/]*[0-~])?"
)
# What Rich's markup parser takes for a tag ("[bold red]", "[/]", "[link=...]"); whether it is
# one is for Rich's style parser to say, so "[train]" or "[epoch 3]" stay in the line.
_RICH_TAG = re.compile(r"\[(?:/|/?[a-z#@][^\[\]]*)\]")


@dataclass(slots=True)
class MetricPoint:
    """The metrics one log line reported.

    ``step`` is the x coordinate the line gave (None if it gave none), ``step_name`` its name and
    ``total`` the "/200" of "epoch 25/200"; ``group`` labels the repetition ("seed 1").
    """

    values: dict[str, float]
    step: float | None = None
    step_name: str = ""
    total: float | None = None
    group: str = ""

    @property
    def progress(self) -> str:
        """'epoch 25/200', 'step 300', or '' when the line gave no step."""
        if self.step is None:
            return ""
        text = f"{self.step_name} {_compact(self.step)}"
        return f"{text}/{_compact(self.total)}" if self.total is not None else text


def metrics_reported(log: LogLine) -> MetricsReported | None:
    """The metrics the lines of one pipe read report (its newest MAX_PARSED_PER_READ lines), as
    an event beside the LogLine; None when they report none."""
    lines = log.text.rsplit("\n", MAX_PARSED_PER_READ)[-MAX_PARSED_PER_READ:]  # not all of a flood
    points = [_data_of(point) for point in map(parse_metrics, lines) if point is not None]
    if not points:
        return None
    return MetricsReported(stage=log.stage, run_id=log.run_id, points=points)


def _data_of(point: MetricPoint) -> MetricPointData:
    return MetricPointData(
        values=dict(point.values),
        step=point.step,
        step_name=point.step_name,
        total=point.total,
        group=point.group,
    )


def point_of(data: MetricPointData) -> MetricPoint:
    """A MetricPoint from a MetricsReported event's point."""
    return MetricPoint(**data)


def _compact(value: float) -> str:
    """'25' for 25.0, '0.5' for 0.5: steps are usually whole numbers that travel as floats."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def is_time_like(name: str) -> bool:
    return bool(_TIME_LIKE.search(name))


def lower_is_better(name: str) -> bool:
    """A guess from the name alone: losses, errors and times shrink when things improve."""
    return bool(_LOWER_IS_BETTER.search(name))


def parse_metrics(line: str) -> MetricPoint | None:
    """The metrics a log line reports, or None when it reports none (most lines)."""
    line = line[:MAX_PARSED_CHARS]
    if not _has_digit(line):
        return None
    # `in` and `search` are cheap; most lines skip both substitutions.
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "[" in line and _RICH_TAG.search(line):
        line = _RICH_TAG.sub(_unless_rich_markup, line)
    stripped = line.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        point = _parse_json(stripped)
        if point is not None:
            return point
    return _parse_pairs(line)


def _unless_rich_markup(tag: re.Match[str]) -> str:
    """'' for a Rich markup tag a program printed raw, the bracketed text itself otherwise."""
    text = tag.group()
    return "" if _is_rich_markup(text[1:-1].removeprefix("/")) else text


@lru_cache(maxsize=512)
def _is_rich_markup(tag: str) -> bool:
    """Whether the inside of "[...]" is a Rich style ("bold green", "red on white", "#ff0000"),
    a link or an action; cached, as a log repeats its few tags on every line."""
    if not tag or tag.startswith(("link=", "@")):
        return True
    from rich.errors import StyleSyntaxError  # noqa: PLC0415 - only lines with "[a-z..." pay
    from rich.style import Style  # noqa: PLC0415

    try:
        Style.parse(tag)
    except StyleSyntaxError:
        return False
    return True


def _parse_pairs(line: str) -> MetricPoint | None:
    pairs = _PAIR.findall(line)
    if not pairs:
        return None
    named: list[tuple[str, str | float, bool, str, str]] = []
    for name, separator, value, total in pairs:
        name, hint_name = _qualified(name) if " " in name else (name, name)
        named.append((name, value, separator.strip() != "", total, hint_name))
    return _point_from(named)


_NOT_QUALIFIERS = STOPWORDS | GROUP_KEYS | frozenset(STEP_KEYS)


def _qualified(words: str) -> tuple[str, str]:
    """The metric name two words make ("train loss" → "train_loss"), and the name alone.

    The first word qualifies the second (a name of letters and digits, see _PAIR) when it is
    made of letters, is no log level ("INFO loss"), and neither word is a step or group key or
    a stopword ("the loss", "global step", "Train Epoch"); otherwise the second word stands
    alone. Two words are joined lower-case, to read as one snake_case metric.
    """
    qualifier, _, name = words.partition(" ")
    if (
        qualifier.isalpha()
        and qualifier not in _LOG_LEVELS
        and qualifier.lower() not in _NOT_QUALIFIERS
        and name.lower() not in _NOT_QUALIFIERS
    ):
        return f"{qualifier}_{name}".lower(), name
    return name, name


def _parse_json(text: str) -> MetricPoint | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, Mapping):
        return None
    return _point_from([(name, value, True, "", name) for name, value in _json_numbers(data)])


def _json_numbers(
    data: Mapping[str, Any], prefix: str = "", depth: int = 0
) -> Iterator[tuple[str, float]]:
    """Numeric leaves as dotted names (``{"val": {"loss": 1}}`` → ``val.loss``); bools are not."""
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and depth < MAX_JSON_DEPTH:
            yield from _json_numbers(value, name, depth + 1)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield name, float(value)


def _point_from(pairs: list[tuple[str, str | float, bool, str, str]]) -> MetricPoint | None:
    """Sort (name, value, explicit, total, hint name) pairs into step, group and metric values.

    ``explicit`` pairs were written ``name=value`` or ``name: value``; bare ``name value`` pairs
    need corroboration (see ``_METRIC_HINT``), which the hint name gives: the name without its
    qualifier, whose joining "_" proves nothing ("Downloading shard 3"). This runs for every log
    line with a number in it, hence one flat loop.
    """
    step: float | None = None
    step_name, step_rank, total = "", len(STEP_KEYS), ""
    groups: list[str] = []
    values: dict[str, float] = {}
    bare: list[tuple[str, str]] = []
    for name, value, explicit, pair_total, hint_name in pairs:
        key = name.lower()
        rank = _STEP_RANK.get(key)
        if rank is not None:
            if rank < step_rank:
                step, step_name, step_rank, total = float(value), key, rank, pair_total
        elif key in GROUP_KEYS:
            groups.append(f"{key} {_compact(float(value))}")
        elif key not in STOPWORDS and name not in _LOG_LEVELS:
            number = float(value)
            if math.isfinite(number):
                values[name] = number
                if not explicit:
                    bare.append((name, hint_name))
    if bare and not _bare_pairs_trusted(bare, len(values), step is not None):
        for name, _ in bare:
            values.pop(name, None)  # a name can come twice in a line ("worker 3 … worker 4")
    if not values:
        return None
    return MetricPoint(values, step, step_name, float(total) if total else None, " ".join(groups))


def _bare_pairs_trusted(bare: list[tuple[str, str]], n_values: int, has_step: bool) -> bool:
    return has_step or n_values >= 2 or any(_METRIC_HINT.search(hint.lower()) for _, hint in bare)
