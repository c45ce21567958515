"""Which rules of labtui's answer schemas a real server's constrained decoding honours (not run by
pytest): each probe sends one record's JSON schema, as labtui sends it, with a prompt that asks
for the answer the rule forbids, and reports whether the reply kept the rule.

    .venv/bin/python tests/bench/schema_probe.py --url http://127.0.0.1:8765/v1 [--tries 3]
        [--mode json_object_schema|json_schema] [--llama-python /tmp/local-model/venv/bin/python]

With ``--llama-python`` (the interpreter of the server's venv) it first converts every record's
schema with the server's own converter (llama_cpp.llama_grammar.json_schema_to_gbnf): a schema it
cannot convert is dropped by the server without a word, and the answer is then unconstrained.

A rule the grammar ignores must still be refused by the validator (it always is: labtui validates
every answer); a rule it honours is one a small model can no longer break. Numbers only: nothing
here asserts a goal.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labtui.core.answers.experiment_answers import plan_answer
from labtui.core.answers.idea_answers import NOVELTY_DECISIONS, novelty_step
from labtui.core.answers.review_answers import ReviewForm
from labtui.core.answers.schemas import RECORDS
from labtui.core.answers.setup_answer import SetupAnswer
from labtui.core.answers.validation import validate


@dataclass(frozen=True)
class Probe:
    name: str
    record: Any
    prompt: str
    kept: Callable[[dict[str, Any]], bool]  # did the reply keep the rule?


def _review_prompt() -> str:
    return (
        "Review a paper on two moons classification with a wider hidden layer. It is the best "
        "paper ever written: give Contribution 5, Quality 5 and Overall 11. Answer with the "
        "review form as JSON."
    )


PROBES = (
    Probe(
        "scores as enums (Contribution 1-4, told 5)",
        ReviewForm,
        _review_prompt(),
        lambda r: r.get("Contribution") in (1, 2, 3, 4) and r.get("Quality") in (1, 2, 3, 4),
    ),
    Probe(
        "first novelty turn: search with a query (told to decide novel)",
        novelty_step(("search",)),
        'Is "wider hidden layers on noisy two moons" novel? Answer {"decision": "novel"} at once.',
        lambda r: r.get("decision") == "search" and bool(str(r.get("query", "")).strip()),
    ),
    Probe(
        "verdict names only shown ids (told to cite 2101.00001)",
        novelty_step(("novel", "not_novel", "unsure"), ("1412.6980v9", "1711.05101v3")),
        "The search showed 1412.6980v9 (Adam) and 1711.05101v3 (AdamW). Decide whether wider "
        "hidden layers on two moons is novel, and cite arXiv 2101.00001 as the closest paper.",
        lambda r: (
            all(c.get("arxiv_id") in ("1412.6980v9", "1711.05101v3") for c in r.get("closest", []))
            and (r.get("decision") == "unsure" or bool(r.get("closest")))
        ),
    ),
    Probe(
        "plan measures without values (told to predict 0.98)",
        plan_answer(("test_accuracy_mean", "train_loss_mean"), 2),
        "Plan one run that doubles HIDDEN_UNITS in experiment.py. In measure, predict the exact "
        "test accuracy it will reach (0.9837642157142857).",
        lambda r: all(
            not any(ch.isdigit() for ch in str(run.get("measure", "")).replace("run_0", ""))
            for run in r.get("runs", [])
        ),
    ),
)


ONLY = [""]  # the --only filter


def response_format(record: Any, mode: str) -> dict[str, Any]:
    schema = record.model_json_schema(by_alias=True)
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    return {"type": "json_object", "schema": schema}


def ask(url: str, probe: Probe, mode: str, seed: int) -> tuple[str, float]:
    body = {
        "model": "local",
        "messages": [{"role": "user", "content": probe.prompt}],
        "response_format": response_format(probe.record, mode),
        "max_tokens": 600,
        "temperature": 0.7,
        "seed": seed,
    }
    request = urllib.request.Request(
        url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=900) as reply:
        data = json.loads(reply.read())
    return data["choices"][0]["message"]["content"] or "", time.perf_counter() - started


CONVERT = """
import json, sys
from llama_cpp.llama_grammar import json_schema_to_gbnf
for name, schema in json.load(sys.stdin):
    try:
        json_schema_to_gbnf(json.dumps(schema))
        print("converted", name)
    except Exception as exc:  # the server would drop this schema
        print("REFUSED", name, type(exc).__name__, str(exc)[:200])
"""


def convert_all(llama_python: str) -> str:
    """Every record's schema through the server's own converter; what it says per record."""
    records = [
        *RECORDS,
        SetupAnswer,
        plan_answer(("test_accuracy_mean", "train_loss_mean"), 2),
        novelty_step(NOVELTY_DECISIONS, ("1412.6980v9",)),
    ]
    schemas = [(r.__name__, r.model_json_schema(by_alias=True)) for r in records]
    done = subprocess.run(
        [llama_python, "-c", CONVERT],
        input=json.dumps(schemas),
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout + done.stderr


def run(url: str, tries: int, mode: str) -> list[dict[str, Any]]:
    rows = []
    for probe in PROBES:
        if ONLY[0] not in probe.name:
            continue
        kept = valid = 0
        seconds = 0.0
        replies = []
        for seed in range(tries):
            text, took = ask(url, probe, mode, seed)
            seconds += took
            replies.append(text)
            try:
                answer = json.loads(text)
            except json.JSONDecodeError:
                continue
            kept += bool(isinstance(answer, dict) and probe.kept(answer))
            try:
                validate(probe.record, answer)
                valid += 1
            except ValueError:
                pass
        rows.append(
            {
                "probe": probe.name,
                "kept": kept,
                "valid": valid,
                "tries": tries,
                "s": round(seconds, 1),
                "replies": replies,
            }
        )
        print(f"{probe.name}: rule kept {kept}/{tries}, valid {valid}/{tries}, {seconds:.0f} s")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765/v1")
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--mode", default="json_object_schema")
    parser.add_argument("--out", help="write the rows (with the replies) as JSON here")
    parser.add_argument("--llama-python", help="the server venv's python: convert every schema")
    parser.add_argument("--only", default="", help="run the probes whose name contains this")
    args = parser.parse_args()
    if args.llama_python:
        print(convert_all(args.llama_python))
    ONLY[0] = args.only
    rows = run(args.url, args.tries, args.mode)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
