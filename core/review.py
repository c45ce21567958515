"""The NeurIPS review form as a validated record. Out-of-range or missing fields are errors that
the LLM layer re-asks about; nothing is clamped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCORE_RANGES: dict[str, tuple[int, int]] = {
    "Originality": (1, 4),
    "Quality": (1, 4),
    "Clarity": (1, 4),
    "Significance": (1, 4),
    "Soundness": (1, 4),
    "Presentation": (1, 4),
    "Contribution": (1, 4),
    "Overall": (1, 10),
    "Confidence": (1, 5),
}
LIST_FIELDS = ("Strengths", "Weaknesses", "Questions", "Limitations")
DECISIONS = ("Accept", "Reject")


@dataclass(frozen=True)
class Review:
    fields: dict[str, Any]

    @property
    def overall(self) -> int:
        return int(self.fields["Overall"])

    @property
    def decision(self) -> str:
        return str(self.fields["Decision"])

    def markdown(self) -> str:
        scores = " · ".join(f"{k} {self.fields[k]}" for k in SCORE_RANGES)
        parts = [f"**{self.decision}** — {scores}", "", self.fields["Summary"], ""]
        for name in LIST_FIELDS:
            parts.append(f"**{name}**")
            parts += [f"- {item}" for item in self.fields[name] or ["(none)"]]
            parts.append("")
        return "\n".join(parts)


def parse_review(data: Any) -> Review:
    if not isinstance(data, dict):
        raise ValueError("the review must be one JSON object with the fields of the form")
    summary = data.get("Summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("field 'Summary' must be a non-empty string")
    for name in LIST_FIELDS:
        value = data.get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"field {name!r} must be a list of strings, got {value!r:.80}")
    for name, (low, high) in SCORE_RANGES.items():
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(
                f"field {name!r} must be an integer from {low} to {high}, got {value!r}"
            )
        if not low <= value <= high:
            raise ValueError(f"field {name!r} must be from {low} to {high}, got {value}")
    if not isinstance(data.get("Ethical Concerns"), bool):
        raise ValueError("field 'Ethical Concerns' must be true or false")
    if data.get("Decision") not in DECISIONS:
        raise ValueError(
            f"field 'Decision' must be 'Accept' or 'Reject', got {data.get('Decision')!r}"
        )
    keep = ("Summary", *LIST_FIELDS, *SCORE_RANGES, "Ethical Concerns", "Decision")
    return Review({k: data[k] for k in keep})
