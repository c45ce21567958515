"""The paper's table of runs and its sentences of findings, written by code from each run's
final_info.json: every finished run (the baseline first) by metric, the mean ± standard error
over its seeds, the difference against the baseline and the verdict labtui computed
(core/runs/effects.py). A 1.5B model's Results had no table and no run's number; this one has
every run's, and each number in it is one provenance traces back to a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import LabtuiError
from ..machine.metric_lines import is_time_like
from ..runs.effect_text import fmt_signed
from ..runs.effects import (
    BETTER,
    CHANGED,
    IDENTICAL,
    NOISE_DIGITS,
    WITHIN_NOISE,
    WORSE,
    Effect,
    effects_of_runs,
    fmt,
    metric_directions,
    overall,
    several_datasets,
)
from ..runs.run_changes import RunChanges
from ..workspace.run_folder import result_folders
from .ledger_appendix import DESCRIPTION_COMMAND, latex_escaped

TABLE_LABEL = "tab:runs"
# What a verdict is called in the table; a time's better and worse are faster and slower.
_VERDICT_WORDS = {
    IDENTICAL: "identical",
    WITHIN_NOISE: "within noise",
    BETTER: "better",
    WORSE: "worse",
    CHANGED: "changed",
}
_TIME_WORDS = {BETTER: "faster", WORSE: "slower"}


@dataclass(frozen=True)
class RunResults:
    """One finished run's effects against the baseline (the baseline's against itself)."""

    run: str
    effects: tuple[Effect, ...]

    @property
    def primary(self) -> list[Effect]:
        """Its results, not its costs (times), unless it reports only times."""
        return [e for e in self.effects if e.primary] or list(self.effects)


def project_results(root: Path, baseline: str = "run_0") -> list[RunResults]:
    """Every finished run of the project with its effects, the baseline first; [] without a
    baseline that finished."""
    root = Path(root)
    folders = {f.name: f for f in result_folders(root)}
    if baseline not in folders:
        return []
    directions = metric_directions(root)
    base = folders[baseline]
    found = []
    for name, folder in [(baseline, base), *((n, f) for n, f in folders.items() if n != baseline)]:
        try:
            found.append(RunResults(name, tuple(effects_of_runs(folder, base, directions))))
        except LabtuiError:  # a run whose numbers cannot be read has no row
            continue
    return found


def datasets_of(effects: list[Effect] | tuple[Effect, ...]) -> list[str]:
    """The data sets the effects span, in order."""
    return list(dict.fromkeys(e.dataset for e in effects))


def verdict_word(e: Effect) -> str:
    if is_time_like(e.metric) and e.verdict in _TIME_WORDS:
        return _TIME_WORDS[e.verdict]
    return _VERDICT_WORDS.get(e.verdict, e.verdict)


def results_table(runs: list[RunResults], baseline: str = "run_0") -> str:
    """The LaTeX table of every run by primary metric (its results, not its times: those are
    the setup's wall times): mean ± s.e., the difference against the baseline (absolute and in
    percent), the verdict."""
    several = len({e.dataset for r in runs for e in r.effects}) > 1
    rows = []
    for result in runs:
        for e in result.primary:
            name = e.name(several)
            value = fmt(e.value) + (f" $\\pm$ {fmt(e.stderr, NOISE_DIGITS)}" if e.stderr else "")
            is_base = result.run == baseline
            difference = "--" if is_base else _difference(e)
            verdict = "baseline" if is_base else verdict_word(e)
            rows.append(
                f"{latex_escaped(result.run)} & {latex_escaped(name)} & {value} & "
                f"{difference} & {verdict} \\\\"
            )
    base = latex_escaped(baseline)
    return "\n".join(
        [
            "\\begin{table}[tbp]",  # a tall table (4 data sets by 4 metrics) has a page of its own
            "\\centering",
            "\\small",
            "\\begin{tabular}{llrrl}",
            "\\toprule",
            f"Run & Metric & Mean $\\pm$ s.e. & Difference from {base} & Verdict \\\\",
            "\\midrule",
            *rows,
            "\\bottomrule",
            "\\end{tabular}",
            f"\\caption{{Every finished run by primary metric: the mean over its seeds with the standard "
            f"error, the difference from the baseline {base} (in percent in brackets) and the "
            "verdict: within noise where the difference is at most twice the combined standard "
            "error, identical where the printed digits agree.}",
            f"\\label{{{TABLE_LABEL}}}",
            "\\end{table}",
        ]
    )


def _difference(e: Effect) -> str:
    if e.value == e.baseline:
        return "0"
    relative = f" ({fmt_signed(e.relative)}\\%)" if e.relative is not None else ""
    return fmt_signed(e.difference) + relative


def change_name(changes: RunChanges | None) -> str:
    """What a run changed, as a name provenance does not read as a result (its numbers are
    the code's, computed from the commits)."""
    if changes is None:
        return ""
    summary = changes.summary()
    return f"\\{DESCRIPTION_COMMAND}{{{latex_escaped(summary)}}}" if summary else ""


# More primary metrics than this and the sentence names only those beyond noise; the table has all.
FINDING_NUMBERS = 4


def finding_sentence(result: RunResults, changes: RunChanges | None) -> str:
    """One run against the baseline in one sentence, with the numbers of its primary metrics:
    "run\\_1 (sets N\\_FEATURES from 64 to 512) is worse than run\\_0 on …: 0.9053 against 0.9367".
    With many metrics (several data sets), only those beyond noise are quoted."""
    primary = result.primary
    if not primary:
        return ""
    said = latex_escaped(overall(primary).text)
    what = change_name(changes)
    run = latex_escaped(result.run)
    if what:
        said = said.replace(run, f"{run}, which {what},", 1)
    several = several_datasets(primary)
    quoted = primary
    if len(primary) > FINDING_NUMBERS:
        quoted = [e for e in primary if e.verdict in (BETTER, WORSE, CHANGED)][:FINDING_NUMBERS]
    numbers = "; ".join(
        f"{latex_escaped(e.name(several))} {fmt(e.value)} against {fmt(e.baseline)}" for e in quoted
    )
    if len(primary) > FINDING_NUMBERS:
        table = f"Table~\\ref{{{TABLE_LABEL}}} gives all {len(primary)}"
        numbers = f"{numbers}; {table}" if numbers else table
    return f"{said[:1].upper()}{said[1:]} ({numbers})."
