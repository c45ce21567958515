"""The rules of a tree search (core/search/tree.py): which action a step takes and from which
node, chosen by rules and a seeded coin, never by a model; which finalist wins; and the tree as
an indented list.

- **draft** a new root from the project's code, until ``[tree] drafts`` roots exist (and again
  when no node works and no buggy one may be debugged);
- **debug** a buggy leaf (a node whose run failed, with code, and no child yet), with probability
  ``debug_prob``, while its line has had fewer than ``max_debug_depth`` debug steps;
- **improve** the best working node, by the metric.

The coin is seeded by ``[tree] seed`` and the step's number, so a resumed tree chooses as the
uninterrupted one would.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .ledger import BUGGY, OK, Step
from .target import Target

if TYPE_CHECKING:
    from ..settings.sections import TreeSection

DRAFT, DEBUG, IMPROVE = "draft", "debug", "improve"


@dataclass(frozen=True)
class Choice:
    """What a step does: its action, the node it starts from (None: a draft), its number, and
    the nodes recorded when it was chosen (what its prompt shows: the main thread records more
    meanwhile)."""

    action: str
    parent: Step | None
    number: int
    seen: tuple[Step, ...] = ()

    @property
    def depth(self) -> int:
        return self.parent.depth + 1 if self.action == DEBUG and self.parent else 0


def choose(
    nodes: list[Step], growing: list[Choice], section: TreeSection, target: Target
) -> tuple[str, Step | None]:
    """The next action by the rules of the module's note; ``growing``: the steps under way."""
    drafts = sum(1 for n in nodes if n.action == DRAFT) + sum(
        1 for c in growing if c.action == DRAFT
    )
    if drafts < section.drafts:
        return DRAFT, None
    parents = {n.parent for n in nodes} | {c.parent.step for c in growing if c.parent}
    leaves = [
        n
        for n in nodes
        if n.status == BUGGY
        and n.commit  # a node with no code (no usable proposal) has nothing to debug
        and n.step not in parents
        and n.depth < section.max_debug_depth
    ]
    coin = random.Random(f"{section.seed}:{len(nodes) + len(growing)}")
    if leaves and coin.random() < section.debug_prob:
        return DEBUG, coin.choice(leaves)
    working = [n for n in nodes if n.status == OK and n.value is not None]
    if working:
        best = target.best_of([n.value for n in working if n.value is not None])
        return IMPROVE, next(n for n in working if n.value == best)
    if leaves:
        return DEBUG, coin.choice(leaves)
    return DRAFT, None


def best_finalist(
    finalists: list[Step], seeds: dict[str, list[float]], target: Target
) -> Step | None:
    """The finalist with the best mean over its seed runs (its single run without seeds)."""

    def score(node: Step) -> float:
        values = seeds.get(str(node.step)) or [node.value or 0.0]
        return target.gain(statistics.fmean(values), 0.0)

    return max(finalists, key=score, default=None)


def said(choice: Choice) -> str:
    if choice.parent is None:
        return "a new draft from the project's code"
    return f"{'a fix' if choice.action == DEBUG else 'an improvement'} of node {choice.parent.step}"


def tree_markdown(nodes: list[Step], target: Target) -> str:
    """The tree as an indented list: each node with its action, status and metric."""
    children: dict[int, list[Step]] = {}
    for node in nodes:
        children.setdefault(node.parent, []).append(node)
    lines: list[str] = []

    def walk(parent: int, depth: int) -> None:
        for node in children.get(parent, []):
            value = f"{node.value:.6g}" if node.value is not None else "no result"
            lines.append(
                f"{'  ' * depth}- node {node.step} ({node.action}, {node.status}): {target.name} "
                f"{value} — {node.description}"
            )
            walk(node.step, depth + 1)

    walk(0, 0)
    return "\n".join(lines) or "(no node yet)"
