"""Turn a real-model bench's exchanges into the replay fixtures of tests/recorded/real_model/ (not
run by pytest).

    .venv/bin/python tests/bench/make_fixtures.py OUT/moons/exchanges.jsonl --name qwen15_moons \
        [--stages novelty,plan,writeup,review] [--keep-prompts review] [--cut 1500]
    .venv/bin/python tests/bench/make_fixtures.py \
        tests/recorded/real_model/raw/b8/moons/exchanges.jsonl:31 --name qwen15_moons_html

``tests/bench/real_model.py`` writes one JSON line per model call (the request, the reply as
streamed, timings, the stage). This script writes one fixture per stage,
``tests/recorded/real_model/<name>_<stage>.jsonl``, in the order the calls happened, with each
request message cut to ``--cut`` characters (the cut marked) unless its stage is in
``--keep-prompts`` (a replay that reads the prompt, such as a review of the paper it holds) or it
is a fixture's first exchange and ``--keep-first-prompt`` is given (the later ones repeat that prompt).
Each source may name the lines it gives (``FILE:48-50``, ``FILE:9,10``; 1-based), and several
sources are read in the order given. The replies are never changed: a recorded reply is the
model's own words. tests/recorded/real_model/README.md has the command that made each fixture
from the raw exchanges kept beside it, and tests/test_recordings.py runs them again.
"""

from __future__ import annotations

import argparse
import json
import re
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


def line_numbers(spec: str) -> set[int]:
    """``"9,12-14"`` as {9, 12, 13, 14}."""
    numbers: set[int] = set()
    for part in filter(None, spec.split(",")):
        first, _, last = part.partition("-")
        numbers.update(range(int(first), int(last or first) + 1))
    return numbers


def read_exchanges(source: str) -> list[dict[str, Any]]:
    """The exchanges of ``FILE`` or ``FILE:LINES`` (only those lines), in file order."""
    named = re.fullmatch(r"(.+):([\d,-]+)", source)
    path, spec = named.groups() if named else (source, "")
    wanted = line_numbers(spec) if spec else None
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [
        json.loads(line)
        for number, line in enumerate(lines, start=1)
        if line and (wanted is None or number in wanted)
    ]


def by_stage(exchanges: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    stages: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for exchange in exchanges:
        stages[exchange.get("stage") or "(project)"].append(exchange)
    return stages


def write_fixtures(
    sources: list[str],
    name: str,
    stages: set[str] | None,
    keep_prompts: set[str],
    limit: int,
    *,
    keep_first_prompt: bool = False,
    out: Path = RECORDED,
) -> list[Path]:
    exchanges = [exchange for source in sources for exchange in read_exchanges(source)]
    written = []
    for stage, items in by_stage(exchanges).items():
        if stages is not None and stage not in stages:
            continue
        target = out / f"{name}_{stage.replace(' ', '_')}.jsonl"
        lines = []
        for index, exchange in enumerate(items):
            request = exchange.get("request") or {}
            whole = stage in keep_prompts or (keep_first_prompt and index == 0)
            if not whole:
                request = cut_messages(request, limit)
            lines.append(json.dumps({**exchange, "request": request}, ensure_ascii=False))
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(target)
        print(f"{target}: {len(items)} exchange(s)")
    return written


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "exchanges", nargs="+", help="a bench's exchanges.jsonl, or FILE:LINES (e.g. FILE:48-50)"
    )
    parser.add_argument("--name", required=True, help="the fixtures' prefix: <model>_<template>")
    parser.add_argument("--stages", default="", help="comma-separated; empty: every stage")
    parser.add_argument("--keep-prompts", default="", help="stages whose prompts stay whole")
    parser.add_argument(
        "--keep-first-prompt",
        action="store_true",
        help="each fixture's first prompt stays whole (the later ones repeat it)",
    )
    parser.add_argument("--cut", type=int, default=1500, help="characters kept per message")
    parser.add_argument("--out", type=Path, default=RECORDED, help="where the fixtures go")
    return parser


def main(argv: list[str] | None = None) -> list[Path]:
    args = argument_parser().parse_args(argv)
    stages = set(filter(None, args.stages.split(","))) or None
    return write_fixtures(
        args.exchanges,
        args.name,
        stages,
        set(filter(None, args.keep_prompts.split(","))),
        args.cut,
        keep_first_prompt=args.keep_first_prompt,
        out=args.out,
    )


if __name__ == "__main__":
    main()
