"""Turn a real-model bench's exchanges into the replay fixtures of tests/recorded/real_model/ (not
run by pytest).

    .venv/bin/python tests/bench/make_fixtures.py OUT/moons/exchanges.jsonl --name qwen15_moons \
        [--stages novelty,plan,writeup,review] [--keep-prompts review] [--cut 1500]

``tests/bench/real_model.py`` writes one JSON line per model call (the request, the reply as
streamed, timings, the stage). This script writes one fixture per stage,
``tests/recorded/real_model/<name>_<stage>.jsonl``, in the order the calls happened, with each
request message cut to ``--cut`` characters (the cut marked) unless its stage is in
``--keep-prompts`` (a replay that reads the prompt, such as a review of the paper it holds). The
replies are never changed: a recorded reply is the model's own words.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "real_model"


def cut_messages(request: dict[str, Any], limit: int) -> dict[str, Any]:
    """The request with each message's text cut to ``limit`` characters, the cut said."""
    messages = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str) and len(content) > limit:
            cut = len(content) - limit
            content = f"{content[:limit]}\n[… {cut} characters cut for the fixture]"
        messages.append({**message, "content": content})
    return {**request, "messages": messages}


def by_stage(exchanges: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    stages: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for exchange in exchanges:
        stages[exchange.get("stage") or "(project)"].append(exchange)
    return stages


def write_fixtures(
    source: Path, name: str, stages: set[str] | None, keep_prompts: set[str], limit: int
) -> list[Path]:
    exchanges = [
        json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line
    ]
    written = []
    for stage, items in by_stage(exchanges).items():
        if stages is not None and stage not in stages:
            continue
        target = RECORDED / f"{name}_{stage.replace(' ', '_')}.jsonl"
        lines = []
        for exchange in items:
            request = exchange.get("request") or {}
            if stage not in keep_prompts:
                request = cut_messages(request, limit)
            lines.append(json.dumps({**exchange, "request": request}, ensure_ascii=False))
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(target)
        print(f"{target}: {len(items)} exchange(s)")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("exchanges", type=Path, help="a bench's exchanges.jsonl")
    parser.add_argument("--name", required=True, help="the fixtures' prefix: <model>_<template>")
    parser.add_argument("--stages", default="", help="comma-separated; empty: every stage")
    parser.add_argument("--keep-prompts", default="", help="stages whose prompts stay whole")
    parser.add_argument("--cut", type=int, default=1500, help="characters kept per message")
    args = parser.parse_args()
    stages = set(filter(None, args.stages.split(","))) or None
    write_fixtures(
        args.exchanges, args.name, stages, set(filter(None, args.keep_prompts.split(","))), args.cut
    )


if __name__ == "__main__":
    main()
