"""How long a researcher's script trains, and how long it must train to write its metrics.

`labtui init` ran a script's defaults as they were: ``--max_steps -1`` (train until stopped) and
``--steps 100000`` (80 minutes on a CPU) ran until [limits] run_timeout_s ended them, and a 10-step
smoke run of a script that writes its scalars only at step 500 wrote none. From the survey's
records alone (core/onboarding/repo_facts.py), never running the script, this module finds:

- ``run_length_options`` (the first is ``run_length_option``): the options (argparse, click,
  typer, Hydra keys) that set how many steps or epochs a run trains, or, where the script has
  none, its module constants (``max_iters = 5000``), which only an edit changes;
- ``interval_options``: the options that set how often a run evaluates, logs or saves;
- ``first_write`` (``first_write_step``): at which step a metric write's enclosing ``if``
  conditions first hold, their names read as the options' defaults and the module's constants,
  both as the script stands and with the smoke run's settings (the arithmetic itself is
  core/onboarding/step_search.py's).

core/onboarding/run_budget.py turns these into the counts the proposed commands give.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from ..source.parse import parse_code, parse_expression
from ..source.python import is_call, literal, name_of
from .python_survey import RUN_LENGTH, option_flag
from .repo_facts import Constant, EntryPoint, Option
from .step_search import Unreadable, first_true

SMOKE_COUNT = {"step": 10, "epoch": 1}  # a smoke run: seconds, not minutes
SMOKE_INTERVAL = {"step": 5, "epoch": 1}  # an interval in a smoke run: twice in its 10 steps
# A count beyond these has no end a baseline reaches: at [limits] run_timeout_s's default of
# 1800 s, 10^4 steps fit only at under 0.18 s a step, 10^3 epochs only at under 1.8 s an epoch.
UNBOUNDED = {"step": 10**4, "epoch": 10**3}
_LOOPS = ("for ", "async for ", "while ")  # the recorder's loops among the conditions

_INTERVAL = re.compile(
    r"(?P<what>eval|evaluate|evaluation|val|valid|validation|test|log|logging|print|report"
    r"|display|summary|save|ckpt|checkpoint|sample|sampling|plot)"
    r"_?(every(_n)?(_(steps?|epochs?|iters?|batches))?|interval|freq(uency)?|period|steps)"
    r"|check_val_every_n_epoch|val_check_interval|every_n_(steps|epochs|iters)"
)
_WRITES_NO_METRIC = {"save", "ckpt", "checkpoint", "sample", "sampling", "plot"}
# A loop's counter as code names it: step, it, iter_num, global_step, epoch, batch_idx, i, …
_COUNTER = re.compile(
    r"(global_|total_|current_|curr_|cur_|train_|n_|num_)?"
    r"(step|it|iter|iter_num|itr|iteration|epoch|ep|e|i|j|k|t|n|idx|batch_idx|batch_i|batch"
    r"|update|updates|step_num|epoch_num|iter_count)"
)


@dataclass(frozen=True)
class LengthOption:
    """An option, or a module constant, that sets how long a run trains."""

    flag: str  # "--max_steps", "trainer.max_epochs"; "" for a module constant
    dest: str
    default: Any
    unit: str  # "step" | "epoch"
    unbounded: bool  # no limit (-1, None, inf, 0 for a max_*), or more than UNBOUNDED
    why: str
    flags: tuple[str, ...] = ()  # every spelling a command line may use
    settable: bool = True  # False: a module constant, which only an edit of the script changes
    joined: bool = False  # written --name=value only (a configurator's constant)

    @property
    def no_limit(self) -> bool:
        """-1, None, inf, 0: "no limit" as a value, not a large count (Hugging Face's
        ``max_steps=-1`` beside ``num_train_epochs`` means "as many as the epochs take")."""
        return self.unbounded and not (number(self.default) or 0) > UNBOUNDED[self.unit]


@dataclass(frozen=True)
class IntervalOption:
    """An option, or a module constant, that sets how often a run evaluates, logs or saves."""

    flag: str
    dest: str
    default: Any
    unit: str  # "step" | "epoch"
    metric: bool  # evaluating or logging: a metric is written then (saving writes none)
    flags: tuple[str, ...] = ()
    settable: bool = True
    joined: bool = False  # written --name=value only (a configurator's constant)


@dataclass(frozen=True)
class FirstWrite:
    """When a metric write's enclosing conditions first hold, counted by the loop's counter."""

    condition: str  # the conditions joined by "and", as the code spells them
    at: int | None  # the counter's value then, with the script's defaults (None: never)
    smoke_at: int | None  # the same in the smoke run: its intervals turned down, its length short
    unit: str  # "step" | "epoch"
    intervals: tuple[IntervalOption, ...] = ()  # the options the conditions take a modulo by
    follows_length: bool = False  # it reads the run's length (i == max_iters - 1): at the end
    start: int = 0  # the counter's first value: 1 in ``for step in range(1, n + 1)``

    @property
    def needed(self) -> int | None:
        """How many steps (epochs) a run must have for the write to come, as the script stands."""
        return None if self.at is None else self.at - self.start + 1

    @property
    def smoke_needed(self) -> int | None:
        return None if self.smoke_at is None else self.smoke_at - self.start + 1


# -- the run's length and its intervals ---------------------------------------------------------


def number(value: Any) -> float | None:
    """A count's value as a number; None for a switch, a string or nothing."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _name(dest: str) -> str:
    return dest.lower().replace("-", "_").split(".")[-1]


def _unit(name: str) -> str:
    return "epoch" if "epoch" in name else "step"


CONFIGURATOR = "configurator"  # an Option's action: a constant set by --name=value


def _command_line_options(entry: EntryPoint) -> list[Option]:
    """Options a command line can set: not a switch, a subcommand's or a positional one; and
    where the script runs a configurator (nanoGPT), its numeric constants, set by --name=value."""
    options = [
        o
        for o in entry.options
        if not o.subcommand
        and o.type not in ("bool", "str")
        and not isinstance(o.default, bool | str)
        and (entry.kind == "hydra" or o.flags[0].startswith("-"))
    ]
    if entry.configurable:
        options += [
            Option((f"--{c.name}",), c.name, c.value, type(c.value).__name__, action=CONFIGURATOR)
            for c in entry.constants
        ]
    return options


def no_end(default: Any, name: str, unit: str) -> str:
    """Why a value sets no end a baseline reaches ("no limit"); "" when it sets one."""
    value = number(default)
    if default is None:
        return "no value: the script decides, often with no limit"
    if value is None:
        return "no number"
    if value < 0 or math.isinf(value) or (value == 0 and name.startswith("max")):
        return "no limit"
    if value > UNBOUNDED[unit]:
        return f"more than {UNBOUNDED[unit]:,} {unit}s: no end in reach"
    return ""


def run_length_options(entry: EntryPoint) -> tuple[LengthOption, ...]:
    """The options that set how long a run trains, the one that bounds it first (a bounded one,
    in steps before epochs); the module's constants only where the script has no such option."""
    found = []
    for o in _command_line_options(entry):
        name = _name(o.dest)
        if RUN_LENGTH.fullmatch(name):
            unit, flag = _unit(name), option_flag(o)
            endless = no_end(o.default, name, unit)
            said = f"{o.default!r} by default" + (f", {endless}" if endless else "")
            why = f"{flag} ({entry.kind}) sets how many {unit}s a run trains: {said}"
            joined = o.action == CONFIGURATOR
            found.append(
                LengthOption(
                    flag, o.dest, o.default, unit, bool(endless), why, o.flags, True, joined
                )
            )
    if not found:
        found = [
            _constant_length(entry, c)
            for c in entry.constants
            if RUN_LENGTH.fullmatch(_name(c.name))
        ]
    return tuple(sorted(found, key=lambda o: (o.unbounded, o.unit != "step")))


def _constant_length(entry: EntryPoint, constant: Constant) -> LengthOption:
    unit = _unit(_name(constant.name))
    endless = no_end(constant.value, _name(constant.name), unit)
    why = (
        f"{constant.name} = {constant.value!r} at {entry.path}:{constant.line} sets how many "
        f"{unit}s a run trains{f' ({endless})' if endless else ''}; it is a module constant, which "
        "no command-line option changes: only an edit of the script does"
    )
    return LengthOption("", constant.name, constant.value, unit, bool(endless), why, settable=False)


def run_length_option(entry: EntryPoint) -> LengthOption | None:
    """The option (or constant) that sets how long a run trains; None when nothing does."""
    return next(iter(run_length_options(entry)), None)


def interval_options(entry: EntryPoint) -> tuple[IntervalOption, ...]:
    """The options that set how often a run evaluates, logs or saves (eval_interval,
    log_every, val_check_interval, …; not eval_iters, the batches one evaluation takes), and
    the module constants so named that no option shadows."""
    found = [
        _interval(o.dest, o.default, option_flag(o), o.flags, True, joined=o.action == CONFIGURATOR)
        for o in _command_line_options(entry)
        if _INTERVAL.fullmatch(_name(o.dest))
    ]
    named = {_name(o.dest) for o in found}
    found += [
        _interval(c.name, c.value, "", (), False)
        for c in entry.constants
        if _INTERVAL.fullmatch(_name(c.name)) and _name(c.name) not in named
    ]
    return tuple(found)


def _interval(
    dest: str,
    default: Any,
    flag: str,
    flags: tuple[str, ...],
    settable: bool,
    *,
    joined: bool = False,
) -> IntervalOption:
    name = _name(dest)
    match = _INTERVAL.fullmatch(name)
    what = match.group("what") if match else ""
    metric = what not in _WRITES_NO_METRIC
    return IntervalOption(flag, dest, default, _unit(name), metric, flags, settable, joined)


# -- when a metric is first written -------------------------------------------------------------


@dataclass(frozen=True)
class _Named:
    """What a name in a condition stands for."""

    counter: str = ""  # "step" | "epoch": the loop's counter
    start: int = 0  # the counter's first value, where a range() says it
    value: float | None = None  # the script's default or the constant
    smoke: float | None = None  # its value in the smoke run
    length: bool = False  # the run's length option (or constant)
    interval: IntervalOption | None = None  # the option, when a command line can turn it down


class _Scope:
    """The names a condition may read: the entry's options, by their dest or its last part
    (``cfg.trainer.max_epochs``, ``self.eval_every``), and its module constants."""

    def __init__(self, entry: EntryPoint, loops: dict[str, tuple[str, int]]) -> None:
        self.options = {o.dest.lower().replace("-", "_"): o for o in _command_line_options(entry)}
        self.constants = {c.name.lower(): c for c in entry.constants}
        self.lengths = {o.dest.lower(): o for o in run_length_options(entry)}
        self.loops = loops  # the enclosing for loops' counters: their units and first values

    def named(self, dotted: str, modulus: str = "") -> _Named | None:
        """``modulus``: the counter's unit when the name is what a ``%`` divides by."""
        if dotted in self.loops:
            unit, start = self.loops[dotted]
            return _Named(counter=unit, start=start)
        parts = dotted.lower().split(".")
        if len(parts) == 1 and _COUNTER.fullmatch(parts[0]) and not dotted.isupper():
            return _Named(counter=_unit(parts[0]))  # EPOCHS, upper case, is a module constant
        for i in range(len(parts)):
            suffix = ".".join(parts[i:])
            if suffix in self.options:
                return self._option(self.options[suffix], modulus)
            if suffix in self.constants:
                constant = self.constants[suffix]
                is_length = suffix in self.lengths
                return _Named(value=constant.value, smoke=constant.value, length=is_length)
        return _Named(counter=_unit(parts[-1])) if _COUNTER.fullmatch(parts[-1]) else None

    def _option(self, option: Option, modulus: str) -> _Named:
        value = number(option.default)
        length = self.lengths.get(option.dest.lower())
        if length is not None:
            short = SMOKE_COUNT[length.unit]
            smoke = short if length.unbounded or (value or 0) > short else value
            return _Named(value=value, smoke=smoke, length=True)
        if not modulus:
            return _Named(value=value, smoke=value)
        joined = option.action == CONFIGURATOR
        interval = _interval(
            option.dest, option.default, option_flag(option), option.flags, True, joined=joined
        )
        interval = replace(interval, unit=modulus)  # counted as the loop counts, not as named
        low = SMOKE_INTERVAL[modulus]
        smoke = low if isinstance(option.default, int) and option.default > low else value
        return _Named(value=value, smoke=smoke, interval=interval)


def first_write(conditions: Sequence[str], entry: EntryPoint) -> FirstWrite | None:
    """When a write under these enclosing ``if`` tests and loops (``ast.unparse`` strings,
    outermost first: "step % 500 == 0", "for step in range(args.max_steps)", "while True")
    first happens. A ``for`` loop over range() or enumerate() names a counter; tests that name
    none (``rank == 0``, ``args.use_tb``) are taken to hold. None when a test that names one
    reads something unknown (a call, an option with no numeric default, a name neither option
    nor constant) or does not parse (a test cut short by "…")."""
    loops = [c.strip() for c in conditions if c.strip().startswith(_LOOPS[:2])]
    try:
        tests = [
            parse_expression(c.strip()).body for c in conditions if not c.strip().startswith(_LOOPS)
        ]
    except (SyntaxError, ValueError, RecursionError):
        return None
    looped = _loop_counters(loops, entry)
    scope, kept, names = _Scope(entry, looped), [], {}
    for part in (p for t in tests for p in _conjuncts(t)):
        moduli = {n for node in ast.walk(part) if _is_modulo(node) for n in _names(node.right)}
        counted = {v.counter for v in map(scope.named, _names(part)) if v and v.counter}
        unit = counted.pop() if len(counted) == 1 else ""
        here = {n: scope.named(n, unit if n in moduli else "") for n in _names(part)}
        if not any(v is not None and v.counter for v in here.values()):
            continue
        if any(v is None for v in here.values()):
            return None
        kept.append(part)
        names.update(here)
    units = {v.counter for v in names.values() if v is not None and v.counter}
    if len(units) > 1:
        return None  # an epoch and a step counter: no one count to give
    found = {k: v for k, v in names.items() if v is not None}
    counters = [k for k, v in found.items() if v.counter]
    start = max((v.start for v in found.values() if v.counter), default=0)
    # A counter the loop body advances (step += 1), before the test or after it: which is not
    # read here. The first value that holds after the first step, and one step more than the
    # counter's value (as if it were advanced after the test), is long enough either way.
    unseen = bool(counters) and not any(c in looped for c in counters)
    try:
        at, smoke = (
            _first_value(kept, {k: getattr(v, what) for k, v in found.items() if not v.counter},
                         counters, start, unseen)
            for what in ("value", "smoke")
        )  # fmt: skip
    except Unreadable:
        return None
    if any(v.value is None and not v.counter and not v.length for v in found.values()):
        return None  # an interval of None: the script has no step to write at, or errs
    intervals = tuple(v.interval for v in found.values() if v.interval is not None)
    follows = any(v.length for v in found.values())
    said = [c.strip() for c in conditions if not c.strip().startswith(_LOOPS)]
    condition = " and ".join(f"({c})" if " or " in c and len(said) > 1 else c for c in said)
    unit = units.pop() if units else "step"
    return FirstWrite(condition, at, smoke, unit, intervals, follows, start)


def _first_value(
    tests: list[ast.expr], values: dict[str, Any], counters: list[str], start: int, unseen: bool
) -> int | None:
    """The counter's first value at which ``tests`` hold. ``unseen``: the loop body advances
    the counter (step += 1), before the test or after it, which is not read here; then the
    first value that holds after the first step, unless the tests hold at the first two values
    alike (the first step writes whichever the order)."""
    at = first_true(tests, values, counters, start)
    if not unseen:
        return at
    later = first_true(tests, values, counters, start + 1)
    return at if at == start and later == start + 1 else later


def _loop_counters(loops: list[str], entry: EntryPoint) -> dict[str, tuple[str, int]]:
    """``for step in range(args.max_steps)``, ``for i, batch in enumerate(loader)``, ``for
    epoch in tqdm(range(n))``: each loop's counter, in epochs where its name or its range's
    length option says so, and its first value (``range(1, n + 1)``, ``enumerate(x, 1)``)."""
    epochs = {o.dest.lower().split(".")[-1] for o in run_length_options(entry) if o.unit == "epoch"}
    counters = {}
    for text in loops:
        try:
            loop = parse_code(f"{text.removeprefix('async ')}: pass").body[0]
        except (SyntaxError, ValueError, RecursionError):
            continue
        if not isinstance(loop, ast.For):
            continue
        iterated, target = loop.iter, loop.target
        while is_call(iterated, "tqdm", "track") and iterated.args:
            iterated = iterated.args[0]  # a progress bar round the range
        if is_call(iterated, "enumerate") and isinstance(target, ast.Tuple) and target.elts:
            target, first = target.elts[0], _start(iterated, 1)
        elif is_call(iterated, "range", "trange"):
            first = _start(iterated, 0) if len(iterated.args) > 1 else 0
        else:
            continue
        if isinstance(target, ast.Name):
            said = {n.split(".")[-1].lower() for n in _names(iterated)}
            by_range = "epoch" if said & epochs else "step"
            unit = "epoch" if "epoch" in target.id.lower() else by_range
            counters[target.id] = (unit, first)
    return counters


def _start(call: ast.Call, at: int) -> int:
    """range(1, n)'s or enumerate(x, start=1)'s first value when a literal gives it, else 0."""
    given = call.args[at] if len(call.args) > at else None
    given = next((k.value for k in call.keywords if k.arg == "start"), given)
    value = literal(given)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def first_write_step(conditions: tuple[str, ...], entry: EntryPoint) -> int | None:
    """After how many steps (or epochs) the write first happens with the script's defaults:
    the loop counter's value then; None when it cannot be told or never happens."""
    found = first_write(conditions, entry)
    return found.at if found is not None else None


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _conjuncts(value)]
    return [test]


def _is_modulo(node: ast.AST) -> TypeGuard[ast.BinOp]:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)


def _names(node: ast.AST) -> list[str]:
    """The dotted names an expression reads (``args.eval_interval``), outermost only."""
    dotted = name_of(node) if isinstance(node, ast.Name | ast.Attribute) else ""
    if dotted:
        return [dotted]
    return [n for child in ast.iter_child_nodes(node) for n in _names(child)]
