"""Review records for the tests."""

from __future__ import annotations

DOTS_REVIEW = {
    "Summary": "...",
    "Strengths": ["..."],
    "Weaknesses": ["..."],
    "Originality": 2,
    "Quality": 2,
    "Clarity": 3,
    "Significance": 2,
    "Questions": ["..."],
    "Limitations": ["..."],
    "Ethical Concerns": False,
    "Soundness": 2,
    "Presentation": 3,
    "Contribution": 2,
    "Overall": 4,
    "Confidence": 3,
    "Decision": "Reject",
}
