"""The one metric a hill-climb or a tree search improves (``[climb]``/``[tree] metric``) and which
way is better, checked against the baseline's numbers before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..runs.effects import UNKNOWN, direction_of, metric_directions
from ..workspace.run_folder import FinalInfo
from .ledger import finite

if TYPE_CHECKING:
    from ..settings.sections import SearchSection

HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Target:
    """The metric a search improves: ``dataset``'s mean ``name``, better ``direction``."""

    dataset: str
    name: str
    direction: str

    @property
    def key(self) -> str:
        return f"{self.dataset}.{self.name}"

    def value(self, means: dict[str, Any]) -> float | None:
        """The metric in a run's means ({dataset: {metric: value}}); None when it is absent."""
        entry = means.get(self.dataset)
        return finite(entry.get(self.name)) if isinstance(entry, dict) else None

    def stderr(self, final_info: FinalInfo | None) -> float | None:
        """The standard error the run reported of the metric's mean over its seeds (The AI
        Scientist's "stderrs": "<metric>_stderr" beside "<metric>_mean"); None without one."""
        entry = final_info.datasets.get(self.dataset) if final_info is not None else None
        if entry is None:
            return None
        return finite(entry.stderrs.get(f"{self.name.removesuffix('_mean')}_stderr"))

    def gain(self, value: float, over: float) -> float:
        """How much better ``value`` is than ``over`` (negative: worse)."""
        return value - over if self.direction == HIGHER else over - value

    def best_of(self, values: list[float]) -> float:
        return max(values) if self.direction == HIGHER else min(values)


def find_target(
    section: SearchSection, strategy: str, baseline: dict[str, Any], root: Path
) -> Target:
    """The metric ``[<strategy>] metric`` names among the baseline's means (or, when it names
    none, the first the project declares), with its direction; a ConfigError names the field
    and lists what the baseline reports."""
    reported = [
        (d, m) for d, values in baseline.items() for m in values if finite(values[m]) is not None
    ]
    listing = ", ".join(f"{d}.{m}" for d, m in reported) or "nothing"
    declared = metric_directions(root)
    if section.metric:
        found = [(d, m) for d, m in reported if section.metric in (m, f"{d}.{m}")]
        if len(found) != 1:
            why = "names no mean of" if not found else "is ambiguous in"
            raise ConfigError(
                f"labtui.toml: [{strategy}] metric = {section.metric!r} {why} the baseline's "
                f"final_info.json (run_0 reports {listing})",
                f'write [{strategy}] metric = "<one of those>"',
            )
    else:
        found = [
            (d, m) for d, m in reported if m in declared or m.removesuffix("_mean") in declared
        ]
        found = found or reported
        if not found:
            raise ConfigError(
                f"labtui.toml: [{strategy}] metric is empty and run_0 reports no number",
                f'make the baseline report its metric, then write [{strategy}] metric = "<name>"',
            )
    dataset, name = found[0]
    direction = section.direction or direction_of(name, declared)
    if direction == UNKNOWN:
        raise ConfigError(
            f"labtui.toml: [{strategy}] direction is empty and labtui cannot tell whether a "
            f"larger {name} is better",
            f'write [{strategy}] direction = "higher" (or "lower")',
        )
    return Target(dataset, name, direction)
