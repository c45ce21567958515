"""Personas, an idea and a TEST-ONLY scripted panel model for the persona-panel tests."""

from __future__ import annotations

import re
from typing import Any

from support.research_script import fenced_json

ADA = {"name": "Ada (optimisation)", "expertise": "Optimisers.", "stance": "A sceptic."}


def remark(name: str, turn: int) -> str:
    return f"REMARK<{name} in turn {turn}>"


def summary(turn: int) -> str:
    return f"SUMMARY<turn {turn}>"


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def turn_of(text: str) -> int:
    return int(re.search(r"turn (\d+) of", text).group(1))


BO = {"name": "Bo (statistics)", "expertise": "Seeds and error bars.", "stance": "A theorist."}


IDEA = {
    "Name": "wider_hidden_layer",
    "Title": "Does width help on two moons?",
    "Hypothesis": "A wider layer fits the curved boundary better.",
    "Experiment": "Double HIDDEN_UNITS and compare test accuracy with run_0.",
    "Interestingness": 5,
    "Feasibility": 9,
    "Novelty": 3,
}


class PanelModel:
    """TEST-ONLY: answers each panel request by what it asks for; persona answers come in the
    order given, one per attempt (the first, then each re-ask)."""

    def __init__(self, *persona_answers: Any) -> None:
        self.persona_answers = persona_answers or ({"personas": [ADA, BO]},)

    def __call__(self, request: dict[str, Any]) -> str:
        messages = request["messages"]
        asked = next(message_text(m) for m in messages if m["role"] == "user")
        if asked.startswith("You lead a small research team"):
            attempt = sum(m["role"] == "assistant" for m in messages)
            return fenced_json(self.persona_answers[attempt])
        if asked.startswith("Panel discussion"):
            speaker = next(p["name"] for p in (ADA, BO) if p["name"] in message_text(messages[0]))
            return remark(speaker, turn_of(asked))
        if asked.startswith("You lead the panel. Summarise"):
            return summary(turn_of(asked))
        if asked.startswith("You lead the panel, and its discussion"):
            return fenced_json({"ideas": [IDEA, {**IDEA, "Name": "narrower_layer"}]})
        raise AssertionError(f"unexpected request: {asked[:80]!r}")
