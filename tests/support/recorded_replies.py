"""TEST-ONLY: real model answers recorded by tests/bench/real_model.py (tests/recorded/real_model/),
for the scripted server to replay. A recorded reply is a real model's own words; never edit one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "real_model"


def exchanges(name: str) -> list[dict[str, Any]]:
    """The exchanges of one recording (``<name>.jsonl``), in the order they happened."""
    path = RECORDED / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def replies(name: str, stage: str | None = None) -> list[str]:
    """The replies of a recording (of one stage), as the model gave them."""
    return [e["reply"] for e in exchanges(name) if stage is None or e["stage"] == stage]
