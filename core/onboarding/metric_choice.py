"""Which numbers `labtui init` proposes to measure an experiment by, when no earlier run left a
result file: what the code writes (core/onboarding/metric_names.py) and what the configs say.

A W&B sweep (``metric: {name: validation/loss, goal: minimize}``) and a Hydra config
(``optimized_metric``, a checkpoint's ``monitor`` with ``mode: max``) are the strongest evidence
of which metric matters and which way is better; the code says where the numbers land.
``propose_metrics`` chooses one [results] source from that (TensorBoard tags, W&B keys, the
logger Lightning is given, printed lines) and at most MAX_METRICS of its names, each with a
direction and the reason a researcher reads.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, TypeGuard

import yaml

from ..machine.metric_lines import GROUP_KEYS, STEP_KEYS, is_time_like
from ..source.files import is_data, read_text
from .metric_names import CodeMetrics, LoggerFound, MetricFound, direction_by_name, metrics_in_code
from .repo_facts import EntryPoint, RepoSurvey
from .write_switches import switched_off

MAX_METRICS = 4
MAX_CONFIGS = 200  # YAML files read for a sweep's or Hydra's metric
GOOD_METRIC = re.compile(r"acc|loss|f1|bleu|rouge|ppl|perplex|score|reward|auc|iou|error", re.I)
HELD_OUT = re.compile(r"(^|[._/-])(eval|val|valid|validation|test)", re.I)
# a learning rate, a norm or a step count, and the sizes a script prints of its data and model
# (nanoGPT's "found vocab_size = 65"): numbers that do not say how well a run went
_NOT_A_MEASURE = re.compile(
    r"(^|[._/])(lr|learning_rate|grad_norm|global_step|_step)$"
    r"|(^|[._/])(vocab|num|n)_|(size|count|params|parameters|dim|dims|len|length)$",
    re.I,
)
# a name that only says which data ("Accuracy on test set: 97.7%" is read back as test_set):
# no measure of its own
_ONLY_A_SPLIT = re.compile(
    r"(train|training|val|valid|validation|dev|test|eval|evaluation|holdout)[_ ]?"
    r"(set|split|data|dataset)?",
    re.I,
)
_EVENTS = "events.out.tfevents.*"
_GOALS = {"minimize": "lower", "maximize": "higher", "min": "lower", "max": "higher"}
# which source reads which kinds of metric, in the order a source is preferred
_SOURCE_KINDS = {
    "tensorboard": ("tensorboard",),
    "wandb": ("wandb",),
    "csv": (),
    "stdout": ("stdout",),
}
_LIGHTNING_LOGGER = {"TensorBoardLogger": "tensorboard", "WandbLogger": "wandb", "CSVLogger": "csv"}


@dataclass(frozen=True)
class MetricProposal:
    """[results] as the code and configs suggest it; ``path`` "" for the source's usual place."""

    source: str
    source_reason: str
    metrics: dict[str, str]  # name -> "higher" | "lower"
    metrics_reason: str
    path: str = ""
    path_reason: str = ""
    question: str = ""  # what is left to ask; "" when the metrics were found


def propose_metrics(
    survey: RepoSurvey, entry: EntryPoint | None, code: CodeMetrics | None = None
) -> MetricProposal | None:
    """The source and metrics the code and configs suggest; None when they name no metric."""
    code = code or metrics_in_code(survey, entry)
    stated = metrics_in_configs(survey, entry)
    root = Path(survey.root)
    found = [m for m in code.found if _is_measure(m.name) and not switched_off(m, root, entry)]
    if not found and not stated:
        return None
    lightning = _lightning_logger(code) if code.of_kind("lightning") or code.trainer else None
    source = _choose_source(found, stated, lightning)
    if source is None:
        return _mlflow_only(found) if any(m.kind == "mlflow" for m in found) else None
    chosen = _best(_readable(found, source, lightning), stated)
    if not chosen:
        return None
    names = {m.name: m.direction for m in chosen}
    reason = ". ".join(m.reason for m in chosen)
    path, path_reason = _path(survey, entry, source, chosen, code, lightning)
    return MetricProposal(
        source=source,
        source_reason=_source_reason(source, chosen, lightning),
        metrics=names,
        metrics_reason=reason,
        path=path,
        path_reason=path_reason,
    )


def _is_measure(name: str) -> bool:
    """Not a step, a seed, a time, a learning rate or a data split's name alone: numbers that do
    not say how well it went."""
    last = re.split(r"[./]", name)[-1].lower()
    return not (
        last in STEP_KEYS
        or last in GROUP_KEYS
        or is_time_like(name)
        or _NOT_A_MEASURE.search(name)
        or _ONLY_A_SPLIT.fullmatch(name)
    )


# -- the source ----------------------------------------------------------------------------------


def _lightning_logger(code: CodeMetrics) -> LoggerFound:
    """The logger Lightning writes through: the one the code makes (TensorBoard first, then CSV,
    then W&B, by how surely labtui reads them), else the Trainer's default: TensorBoard when
    tensorboard is importable, else a CSVLogger."""
    made = [lg for lg in code.loggers if lg.call in _LIGHTNING_LOGGER]
    rank = ("TensorBoardLogger", "CSVLogger", "WandbLogger")
    if made:
        return min(made, key=lambda lg: rank.index(lg.call))
    call = "TensorBoardLogger" if _tensorboard_importable() else "CSVLogger"
    return LoggerFound(_LIGHTNING_LOGGER[call], call, "", None, "lightning_logs", where="")


def _tensorboard_importable() -> bool:
    return any(importlib.util.find_spec(m) for m in ("tensorboard", "tensorboardX"))


TENSORBOARD_DEFAULT = "the Trainer's default logger, TensorBoardLogger (tensorboard is importable)"


def csv_where_no_tensorboard(
    values: dict[str, Any], reasons: dict[str, str], python: str, has_tensorboard: bool
) -> None:
    """Lightning's default logger, told by labtui's own interpreter, checked in the one the runs
    use: without tensorboard there, Lightning writes a CSVLogger's metrics.csv (the repository
    bench's Lightning example: labtui looked for event files that never came)."""
    results = values.get("results", {})
    said = reasons.get("results.source", "")
    if has_tensorboard or results.get("source") != "tensorboard" or TENSORBOARD_DEFAULT not in said:
        return
    versions = str(results.get("path", "")).rpartition("/version_*/")[0] or "**/lightning_logs"
    results["source"], results["path"] = "csv", f"{versions}/version_*/metrics.csv"
    reasons["results.source"] = said.replace(
        TENSORBOARD_DEFAULT,
        f"the Trainer's default logger, CSVLogger (tensorboard is not importable in {python})",
    )
    reasons["results.path"] = f"the Trainer's logger writes metrics.csv under {versions}/version_*"


def _choose_source(
    found: list[MetricFound], stated: list[MetricFound], lightning: LoggerFound | None
) -> str | None:
    """A config's metric picks the source that writes it; else TensorBoard, W&B, Lightning's
    logger, printed lines, in that order; None when only MLflow names were found."""
    written = {m.name: _source_of(m, lightning) for m in found}
    for metric in stated:
        if written.get(metric.name):
            return written[metric.name]
    for source in _SOURCE_KINDS:
        if any(_source_of(m, lightning) == source for m in found):
            return source
    if stated:  # a config names the metric; the code writes it under a name not read here
        return _source_of(stated[0], lightning)
    return None


def _source_of(metric: MetricFound, lightning: LoggerFound | None) -> str | None:
    if metric.kind == "lightning":
        return lightning.kind if lightning and lightning.kind != "mlflow" else None
    return metric.kind if metric.kind in _SOURCE_KINDS else None


def _readable(
    found: list[MetricFound], source: str, lightning: LoggerFound | None
) -> list[MetricFound]:
    """The metrics the chosen source reads back; MLflow's too when the same names are printed.
    add_scalars' tags mix several series under one name: only when nothing else is written."""
    mine = [m for m in found if _source_of(m, lightning) == source]
    if source == "stdout":
        printed = {m.name for m in mine}
        mine += [m for m in found if m.kind == "mlflow" and m.name in printed]
    single = [m for m in mine if not m.folders]
    return single or mine[:1]


def _mlflow_only(found: list[MetricFound]) -> MetricProposal:
    names = ", ".join(dict.fromkeys(m.name for m in found))
    return MetricProposal(
        source="stdout",
        source_reason=f"the code logs {names} to MLflow only, which labtui does not read",
        metrics={},
        metrics_reason="",
        question=(
            f"The code logs {names} to MLflow, which labtui does not read: which numbers does "
            "a run print (or write to a file), and is higher or lower better?"
        ),
    )


def _source_reason(source: str, chosen: list[MetricFound], lightning: LoggerFound | None) -> str:
    where = ", ".join(dict.fromkeys(m.where.split(":")[0] for m in chosen if m.where))
    if any(m.kind == "lightning" for m in chosen) and lightning:
        if lightning.where:
            how = f"the {lightning.call} made at {lightning.where}"
        else:
            importable = "is" if lightning.kind == "tensorboard" else "is not"
            how = f"the Trainer's default logger, {lightning.call} (tensorboard {importable} importable)"
        return f"{where} log with Lightning's self.log, through {how}"
    words = {
        "tensorboard": "TensorBoard scalars written",
        "wandb": "W&B keys logged",
        "stdout": "metric lines printed",
        "csv": "a CSV table written",
    }
    return f"{words[source]} in {where or 'the configs'}"


# -- the metrics ---------------------------------------------------------------------------------


def _best(found: list[MetricFound], stated: list[MetricFound]) -> list[MetricFound]:
    """At most MAX_METRICS names: a config's first (with its goal), then held-out ones
    (val/test/eval) before the rest, known measures before other names, in reading order."""
    by_name: dict[str, MetricFound] = {}
    for metric in found:
        by_name.setdefault(metric.name, metric)
    firsts: list[MetricFound] = []
    for config in stated:
        code = by_name.pop(config.name, None)
        if code is not None or not by_name:
            # the config's goal, where the code writes it (its guess by the name said no more)
            written = code.reason.split("; by its name")[0] if code else ""
            why = f"{config.reason}, written at {written}" if code else config.reason
            firsts.append(replace(code or config, direction=config.direction, reason=why))
    rest = sorted(
        enumerate(by_name.values()),
        key=lambda item: (
            not HELD_OUT.search(item[1].name),
            not GOOD_METRIC.search(item[1].name),
            item[0],
        ),
    )
    chosen = list({m.name: m for m in [*firsts, *(m for _i, m in rest)]}.values())
    return chosen[:MAX_METRICS]


def rank_names(names: list[str]) -> list[str]:
    """Names of known measures first, held-out ones (eval/val/test) next, else as given."""

    def rank(item: tuple[int, str]) -> tuple[int, int]:
        index, name = item
        return -(2 * bool(GOOD_METRIC.search(name)) + bool(HELD_OUT.search(name))), index

    return [name for _index, name in sorted(enumerate(names), key=rank)]


# -- where the numbers land ----------------------------------------------------------------------


def _path(
    survey: RepoSurvey,
    entry: EntryPoint | None,
    source: str,
    chosen: list[MetricFound],
    code: CodeMetrics,
    lightning: LoggerFound | None,
) -> tuple[str, str]:
    """[results] path: "" where the source's usual place holds the numbers ({out_dir}'s event
    files, W&B's latest run), else a glob of where the code's logger writes."""
    dest = next((o.dest for o in survey.output_options if entry and o.entry == entry.path), "")
    if any(m.kind == "lightning" for m in chosen) and lightning and source != "wandb":
        return _lightning_path(lightning, dest, source)
    if source != "tensorboard":
        return "", ""
    writers = [lg for lg in code.loggers if lg.call == "SummaryWriter"]
    folder = _folder(writers[0], dest) if writers else "{out_dir}"
    several = next((m for m in chosen if m.folders), None)
    if several is not None:  # add_scalars: the held-out series' own folder
        sub = min(several.folders, key=lambda f: not HELD_OUT.search(f))
        where = f"{folder}/**/{sub}/{_EVENTS}"
        return where, f'{several.where} writes each series of "{several.name}" in a folder'
    if folder == "{out_dir}":
        return "", ""
    why = f"{writers[0].where} {writers[0].call}({writers[0].folder}) writes there"
    if not writers[0].folder:
        why = f"{writers[0].where} SummaryWriter() writes under runs/ by default"
    return f"{folder}/**/{_EVENTS}", why


def _lightning_path(lightning: LoggerFound, dest: str, source: str) -> tuple[str, str]:
    folder = _folder(lightning, dest, default="**")
    made = f"{lightning.where} {lightning.call}" if lightning.where else "the Trainer's logger"
    versions = f"{folder}/{lightning.name}/version_*"
    if source == "csv":
        return f"{versions}/metrics.csv", f"{made} writes metrics.csv under {versions}"
    return f"{versions}/{_EVENTS}", f"{made} writes its event files under {versions}"


def _folder(logger: LoggerFound, dest: str, default: str = "runs") -> str:
    """The logger's folder as a [results] path: {out_dir} when it is the run's output option,
    the literal folder, or ``default`` (SummaryWriter's runs/; anywhere for Lightning)."""
    if dest and re.search(rf"\b{re.escape(dest)}\b", logger.folder):
        return "{out_dir}"
    if logger.folder_literal:
        return logger.folder_literal.rstrip("/")
    if not logger.folder:
        return default
    return "**" if default == "**" else "{out_dir}"


# -- configs -------------------------------------------------------------------------------------


def metrics_in_configs(survey: RepoSurvey, entry: EntryPoint | None) -> list[MetricFound]:
    """The metrics W&B sweeps and Hydra configs name, with the goal they state: sweeps first,
    then the entry's Hydra config folder, then any other YAML file."""
    root = Path(survey.root)
    hydra_dir = ""
    if entry and entry.hydra and entry.hydra.config_file:
        hydra_dir = str(PurePosixPath(entry.hydra.config_file).parent)
    yamls = [f for f in survey.files if f.endswith((".yaml", ".yml")) and not is_data(f)]
    yamls = [f for f in yamls if not any(p.startswith(".") for p in PurePosixPath(f).parts)]
    yamls.sort(
        key=lambda f: (
            not PurePosixPath(f).name.startswith("sweep"),
            not (hydra_dir and f.startswith(f"{hydra_dir}/")),
        )
    )
    found: list[MetricFound] = []
    for path in yamls[:MAX_CONFIGS]:
        text = read_text(root, path) or ""
        if re.search(r"metric|monitor", text):
            found += _config_metrics(path, text)
    return list({m.name: m for m in reversed(found)}.values())[::-1]


def _config_metrics(path: str, text: str) -> list[MetricFound]:
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return []
    found: list[MetricFound] = []
    for document in documents:
        # Optuna's sweeper states the direction once for the file (hydra.sweeper.direction)
        goals = (_goal(m.get("direction")) for m in _mappings(document))
        direction = next((g for g in goals if g), None)
        sweep = PurePosixPath(path).name.startswith("sweep") or (
            isinstance(document, dict) and "method" in document
        )
        for mapping in _mappings(document):
            found += _named_in(path, text, mapping, sweep, direction)
    return found


def _mappings(node: Any, depth: int = 0) -> list[dict[str, Any]]:
    if depth > 8:
        return []
    if isinstance(node, dict):
        return [node, *(m for v in node.values() for m in _mappings(v, depth + 1))]
    if isinstance(node, list):
        return [m for v in node for m in _mappings(v, depth + 1)]
    return []


def _named_in(
    path: str, text: str, mapping: dict[str, Any], sweep: bool, direction: str | None
) -> list[MetricFound]:
    """metric: {name, goal} (a W&B sweep); optimized_metric, monitor, or metric with a goal,
    a mode or a direction beside it (Hydra, Lightning's callbacks, Optuna)."""
    found = []
    metric = mapping.get("metric")
    if isinstance(metric, dict) and _usable(metric.get("name")):
        goal = metric.get("goal")
        found.append(_stated(path, text, metric["name"], "metric", "goal", goal, sweep))
    for key in ("optimized_metric", "monitor", "metric"):
        name = mapping.get(key)
        said = next(((k, mapping[k]) for k in ("mode", "goal", "direction") if k in mapping), None)
        if key == "optimized_metric" and said is None and direction:
            said = ("direction", "maximize" if direction == "higher" else "minimize")
        if _usable(name) and (key != "metric" or said):
            word, goal = said or ("", None)
            found.append(_stated(path, text, name, key, word, goal, sweep))
    return found


def _usable(name: Any) -> TypeGuard[str]:
    return isinstance(name, str) and bool(name) and "${" not in name and name != "???"


def _goal(value: Any) -> str | None:
    return _GOALS.get(str(value).lower()) if value is not None else None


def _stated(
    path: str, text: str, name: str, key: str, word: str, goal: Any, sweep: bool
) -> MetricFound:
    line = next((i for i, t in enumerate(text.splitlines(), 1) if name in t), 0)
    where = f"{path}:{line}" if line else path
    direction = _goal(goal)
    said = f"{path}: {key} {name}"
    if direction and word:
        said += f", {word} {goal}"
    else:
        direction, why = direction_by_name(name)
        said += f" (no goal stated; {why})"
    kind = "wandb" if sweep else "lightning"
    return MetricFound(name, kind, direction, said, where)
