"""Review records for the tests."""

from __future__ import annotations

# Written by hand, not recorded: the reply a ~1.5B model (Qwen2.5-Coder-1.5B behind llama.cpp) gave
# to `labtui review` in issue 13, built from the description: every text field "..."
# (copied from the form's example as prompts/review.md showed it then), the scores in range, and
# "Reject, Overall 4". tests/recorded/real_model/README.md lists it under "Written by hand".
HAND_WRITTEN_DOTS_REVIEW = {
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
