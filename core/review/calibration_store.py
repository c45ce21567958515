"""Where a reviewer's calibration is kept and how it is said.

A calibration (``labtui review --calibrate DIR``) measures one reviewer: a model with its
``[review]`` settings. It is written where the researcher asked (``calibration.json``) and
registered under the reviewer's fingerprint in labtui's data folder, so that every review by the
same reviewer (``labtui review``, the review checkpoint) can say how far its scores are to be
trusted, and a review by any other reviewer says that it is uncalibrated. A fabrication probe
(``--probe``) is registered beside it.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LabtuiError
from ..workspace.json_records import read_json, write_json

FORMAT = 1
# Settings that change what the reviewer answers; the rest (the budget, improvement rounds run
# after the first review) leave its judgement of a given paper as it was.
JUDGEMENT_SETTINGS = (
    "model",
    "ensemble",
    "temperature",
    "reflections",
    "few_shot",
    "examples",
    "threshold",
    "paper_chars",
)
UNCALIBRATED = "uncalibrated reviewer: its scores were never compared with human decisions"
CALIBRATE_HINT = "labtui review --calibrate DIR measures it on a benchmark of reviewed papers"
PROBE_NOTICED = "noticed a fabricated results table"
PROBE_FAILED = "accepted a results table with impossible values"


def fingerprint(reviewer: dict[str, Any]) -> str:
    """The reviewer's identity: a digest of the settings that decide its judgement
    (``reviewer`` as ``core.review.reviewer.reviewer_facts`` gives it)."""
    judged = {key: reviewer.get(key) for key in JUDGEMENT_SETTINGS}
    text = json.dumps(judged, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def registry() -> Path:
    """labtui's folder of calibrations, one file per reviewer fingerprint."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "labtui" / "calibrations"


def save_calibration(record: dict[str, Any], out: Path) -> Path:
    """Write ``record`` (with its ``reviewer``) to ``out`` and register it for its reviewer;
    a probe registered earlier for the same reviewer is kept. The registered path."""
    record = {"format": FORMAT, **record, "fingerprint": fingerprint(record["reviewer"])}
    _write(out, record)
    registered = registry() / f"{record['fingerprint']}.json"
    earlier = read_json(registered) or {}
    if "probe" in earlier and "probe" not in record:
        record["probe"] = earlier["probe"]
    _write(registered, record)
    return registered


def save_probe(reviewer: dict[str, Any], probe: dict[str, Any]) -> Path:
    """Register a fabrication probe's outcome beside the reviewer's calibration (if any)."""
    key = fingerprint(reviewer)
    registered = registry() / f"{key}.json"
    record = read_json(registered) or {"format": FORMAT, "reviewer": reviewer, "fingerprint": key}
    record["probe"] = probe
    _write(registered, record)
    return registered


def find_calibration(reviewer: dict[str, Any]) -> dict[str, Any] | None:
    """The registered record for this reviewer (calibration and/or probe), or None."""
    return read_json(registry() / f"{fingerprint(reviewer)}.json")


@dataclass(frozen=True)
class Trust:
    """How far a reviewer's scores are to be trusted, as its registered record says. ``said``:
    how it did against human decisions, or that it was never compared with them
    (``calibrated`` False); ``probe``: what a fabrication probe it passed found; ``flagged``: why
    its scores are not to be trusted (a probe it failed), "" when nothing flags it."""

    said: str
    calibrated: bool
    probe: str = ""
    flagged: str = ""

    @property
    def known(self) -> str:
        """What was measured of the reviewer: its calibration (or none) and a probe it passed."""
        return " · ".join(part for part in (self.said, self.probe) if part)

    @property
    def flag(self) -> str:
        """The flag of a probe it failed, as shown; "" when nothing flags it."""
        return f"FLAGGED: {self.flagged}" if self.flagged else ""

    @property
    def line(self) -> str:
        """The trust in one line, as a review shows it under its decision."""
        return " · ".join(part for part in (self.known, self.flag) if part)


def trust_in(record: dict[str, Any] | None) -> Trust:
    """What the registered ``record`` (:func:`find_calibration`'s) says of its reviewer: how it
    did against human decisions, or that it is uncalibrated; and a fabrication probe's outcome."""
    record = record or {}
    metrics = record.get("metrics")
    said = _measured(record, metrics) if metrics else UNCALIBRATED
    probe = record.get("probe")
    noticed = probe is not None and bool(probe.get("noticed"))
    failed = probe is not None and not noticed
    return Trust(
        said, bool(metrics), PROBE_NOTICED if noticed else "", PROBE_FAILED if failed else ""
    )


def reviewer_trust(reviewer: dict[str, Any] | None) -> Trust | None:
    """What the registry says of ``reviewer`` (``reviewer_facts``); None for a review that
    names no reviewer (one written before reviews named theirs)."""
    return None if reviewer is None else trust_in(find_calibration(reviewer))


def trust_line(record: dict[str, Any] | None) -> str:
    """:func:`trust_in` in one line."""
    return trust_in(record).line


def _measured(record: dict[str, Any], metrics: dict[str, Any]) -> str:
    benchmark = record.get("benchmark") or {}
    papers = metrics.get("papers", 0)
    of = f"{papers} of {benchmark['sampled']}" if not record.get("complete", True) else papers
    name = benchmark.get("name", "benchmark")
    low, high = metrics.get("balanced_accuracy_ci") or (None, None)
    interval = f" (95% CI {low:.2f}–{high:.2f})" if low is not None else ""
    parts = [
        f"this reviewer: balanced accuracy {_number(metrics.get('balanced_accuracy'))}"
        f"{interval} on {of} {name} papers"
    ]
    if metrics.get("roc_auc") is not None:
        parts.append(f"AUC {metrics['roc_auc']:.2f}")
    if metrics.get("accept_rate") is not None and metrics.get("human_accept_rate") is not None:
        parts.append(
            f"accepts {metrics['accept_rate']:.0%} (humans {metrics['human_accept_rate']:.0%})"
        )
    return " · ".join(parts)


def _number(value: Any) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _write(path: Path, record: dict[str, Any]) -> None:
    try:
        write_json(path, record)
    except OSError as exc:
        raise LabtuiError(
            f"cannot write the calibration to {path}: {exc.strerror or exc}",
            "give a writable --out path, or free the disk",
        ) from None
