"""The tree search ([experiment] strategy = "tree", The AI Scientist v2 after AIDE): best-first
search over variants of the experiment's code, each node a commit.

Every step drafts a new root, debugs a buggy leaf or improves the best node, chosen by rules and
a seeded coin, never by a model (core/search/tree_rules.py). A node is a proposal asked of the model and
aider's edit, run once under the budget: it is **ok** (it reported the metric) or **buggy** (its
error kept for the debug step). Node n lives on the branch ``labtui/tree/<idea>/node-<n>``: its
code commit, and for an ok node its run folder ``run_<n>``. ``workers`` nodes grow at once, each
in a worktree of its own; every run leases its GPUs from the pool. The main thread alone
chooses, records (the ledger, core/search/ledger.py) and asks checkpoints, so the ledger is
written in one order.

At the end the ``finalists`` best nodes by the metric are run with fresh seeds; the best mean
wins, and its branch (with the run folders of its ancestors: the path to it) is merged into the
project, where the paper is written from it.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from ..errors import UnusableAnswer
from ..runs.setting_changes import settings_table
from ..settings.contract import code_text
from ..stage_context import StageContext
from ..workspace.notebook import start_notebook
from ..workspace.project import Project
from ..workspace.run_folder import run_name
from .frame import SearchFrame, SearchOutcome
from .ledger import BUGGY, OK, Final, Noise, SearchLedger, Step
from .search_settings import search_settings
from .seeds import measure_noise, seed_values
from .shared import (
    checkpoint_due,
    hours_used,
    idle_in_a_row,
    ledger_lines,
    make_change,
    plan_directions,
    propose,
    result_step,
    step_clock,
    unproposed,
)
from .target import Target, find_target
from .tree_rules import DRAFT, IMPROVE, Choice, best_finalist, choose, said, tree_markdown
from .worktrees import (
    diff_between,
    drop_run_folder,
    keep_results,
    keep_unrecorded_nodes,
    open_worker,
    switch_checkout,
)

if TYPE_CHECKING:
    from ..answers.experiment_answers import Proposal
    from ..coding.coder import CodeEditor
    from ..source.setting_edit import Editable
    from ..workspace.ideas import Idea

STRATEGY = "tree"
WAIT_S = 0.5  # how often the main thread looks up from waiting on workers (an interrupt)


def run_tree(ctx: StageContext, idea: Idea, baseline: dict[str, Any]) -> SearchOutcome:
    """The tree search for ``idea``, from its ledger's nodes (or the start) to its end."""
    section = ctx.config.tree
    root = ctx.project.root
    target = find_target(section, STRATEGY, baseline, root)
    ledger = SearchLedger(root, STRATEGY, idea.name, target.key)
    known_noise = ledger.noise()
    start = known_noise.commit if known_noise is not None else ctx.project.head()
    tree = Tree(ctx, idea, target, ledger, start)
    keep_unrecorded_nodes(ctx, tree.prefix, {n.step for n in tree.nodes}, f"tree-{idea.name}")
    start_notebook(root, idea.title, idea.experiment, baseline)
    tree.frame.noise = measure_noise(
        tree.workers[0].work, tree.workers[0].checkout, target, ledger, section, start
    )
    tree.frame.announce(section, f"{tree.prefix}/node-<n>")
    return tree.finish(tree.grow())


class Worker:
    """One worktree and the context and coder that work in it."""

    def __init__(
        self, ctx: StageContext, number: int, idea: str, start: str, stop: threading.Event
    ) -> None:
        self.checkout: Project = open_worker(ctx.project, f"tree-{idea}-w{number}", start)
        self.work = ctx.in_checkout(self.checkout, stop, pauses=False)
        self.coder: CodeEditor | None = None


class Tree:
    """One tree search: its nodes, its workers and the main thread's bookkeeping."""

    def __init__(
        self, ctx: StageContext, idea: Idea, target: Target, ledger: SearchLedger, start: str
    ) -> None:
        self.ctx, self.idea, self.target, self.ledger, self.start = ctx, idea, target, ledger, start
        self.frame = SearchFrame(ctx, STRATEGY, idea, target, ledger, start)
        self.section = ctx.config.tree
        self.prefix = f"labtui/tree/{idea.name}"
        self.nodes = ledger.steps()
        self.stop = threading.Event()
        self.workers = [
            Worker(ctx, n, idea.name, start, self.stop) for n in range(1, self.section.workers + 1)
        ]

    @property
    def noise(self) -> Noise:
        return self.frame.noise

    # -- growing --------------------------------------------------------------------------------

    def limit_reached(self, growing: int) -> str:
        if stalled := idle_in_a_row(self.nodes):
            return stalled
        if len(self.nodes) + growing >= self.section.max_nodes:
            return f"{self.section.max_nodes} nodes grown"
        used = hours_used(self.noise.wall_s, self.nodes)
        if self.section.max_hours and used >= self.section.max_hours:
            return f"{self.section.max_hours:g} hours used"
        return ""

    def grow(self) -> str:
        """Nodes until a limit or the researcher ends the search; why it ended."""
        free = list(self.workers)
        growing: dict[Future[Step], tuple[Worker, Choice]] = {}
        ended = ""
        with ThreadPoolExecutor(len(self.workers), thread_name_prefix="labtui-tree") as pool:
            try:
                while True:
                    while free and not ended and not self.limit_reached(len(growing)):
                        self.ctx.check_stop()
                        self.ctx.services.ledger.check()
                        choice = self._next_choice([c for _, c in growing.values()])
                        worker = free.pop(0)
                        growing[pool.submit(self._grow_node, worker, choice)] = (worker, choice)
                    if not growing:
                        return ended or self.limit_reached(0)
                    done, _ = wait(growing, timeout=WAIT_S, return_when=FIRST_COMPLETED)
                    self.ctx.check_stop()
                    for future in done:
                        worker, _ = growing.pop(future)
                        self._record(future.result())
                        free.append(worker)
                        if (
                            not ended
                            and checkpoint_due(self.section, len(self.nodes))
                            and not self.go_on()
                        ):
                            ended = "stopped at a checkpoint by the researcher"
            except BaseException:
                self.stop.set()  # the workers end their runs; the pool waits for them
                raise

    def _next_choice(self, growing: list[Choice]) -> Choice:
        action, parent = choose(self.nodes, growing, self.section, self.target)
        taken = {n.step for n in self.nodes} | {c.number for c in growing}
        number = next(n for n in range(1, len(taken) + 2) if n not in taken)  # a cut node's too
        return Choice(action, parent, number, tuple(self.nodes))

    def _grow_node(self, worker: Worker, choice: Choice) -> Step:
        """One node, in ``worker``'s thread and worktree: proposed, made, run, written to the
        ledger's folder (the main thread commits it)."""
        parent = choice.parent
        if choice.action == DRAFT or parent is None:
            base = self.start
        elif choice.action == IMPROVE:
            base = parent.tip
        else:
            base = parent.commit or parent.base_commit
        with step_clock(self.ctx) as clock:
            switch_checkout(worker.checkout, f"{self.prefix}/node-{choice.number}", base)
            try:
                # an improvement may be settings of the node's code (labtui sets them); a draft
                # or a fix is code
                improving = choice.action == IMPROVE and parent is not None
                settings = search_settings(worker.work, self.section) if improving else []
                prompt = self._proposal_prompt(worker.work, choice, settings)
                proposal = propose(
                    worker.work,
                    prompt,
                    list(choice.seen),
                    settings,
                    code_changes=self.section.code_changes or not improving,
                )
            except UnusableAnswer as exc:
                node, diff = unproposed(choice.number, base, exc, BUGGY), ""
            else:
                node, diff = self._make(worker, choice, base, proposal)
            node.action, node.depth = choice.action, choice.depth
            node.parent = parent.step if parent is not None else 0
            clock.stamp(node)
            self.ledger.write_step(node, diff=diff, run_dir=worker.checkout.root / node.run_id)
            if node.status == BUGGY:
                drop_run_folder(worker.checkout, node.run_id)
        return node

    def _make(
        self, worker: Worker, choice: Choice, base: str, proposal: Proposal
    ) -> tuple[Step, str]:
        """The proposal made by aider and run once: an ok node with its results committed on
        its branch, or a buggy one; and its diff."""
        work, checkout, section, target = worker.work, worker.checkout, self.section, self.target
        run_id = run_name(choice.number)
        if worker.coder is None:
            worker.coder = work.code_editor()
        attempted = make_change(
            work,
            worker.coder,
            choice.number,
            proposal.change,
            f"node {choice.number} of the tree: {said(choice)}",
            section=section,
            target=target,
            attempts=1,
            earlier=list(choice.seen),
            settings=proposal.chosen_settings,
        )
        node = result_step(
            work,
            checkout,
            choice.number,
            attempted,
            base=base,
            description=proposal.description,
            change=proposal.what_changes,
        )
        diff = diff_between(checkout, base, "HEAD")
        if attempted.ok:
            node.status, node.value = OK, target.value(attempted.ran().result.means)
            message = f"experiments: {run_id} results (node {choice.number}, {choice.action})"
            node.tip = keep_results(work, node, message)
        else:
            node.status = BUGGY
        return node, diff

    def _record(self, node: Step) -> None:
        """A grown node into the ledger's table, committed, and told (main thread only)."""
        values = [n.value for n in self.nodes if n.status == OK and n.value is not None]
        best_before = self.target.best_of(values) if values else None
        node.best_before = best_before
        node.new_best = node.value is not None and (
            best_before is None or self.target.gain(node.value, best_before) > 0
        )
        # a new list, not a change of the old one: workers may be reading it
        self.nodes = sorted([*self.nodes, node], key=lambda n: n.step)
        self.ledger.update_step(node)  # best_before and new_best, now known
        self.ledger.write_tsv(self.noise.values[0], self.start)
        self.ctx.commit(
            f"experiments: tree node {node.step} ({node.action}) {node.status}: {node.description}",
            [self.ledger.relative],
        )
        known = [*values, node.value] if node.value is not None else values
        self.frame.tell(node, self.target.best_of(known) if known else None)

    def _proposal_prompt(self, work: StageContext, choice: Choice, settings: list[Editable]) -> str:
        parent, section = choice.parent, self.section
        shared = {
            "title": self.idea.title,
            "budget_s": f"{section.run_budget_s:g}",
            "metric": self.target.key,
            "code": code_text(work.project.root, work.config.experiment),
            "notes": work.notes_block(),
        }
        if choice.action == DRAFT or parent is None:
            return work.prompt(
                "tree_draft",
                experiment=self.idea.experiment,
                direction=self.target.direction,
                directions=plan_directions(self.ctx, "a draft may take one of them"),
                ledger=ledger_lines(list(choice.seen), self.target),
                **shared,
            )
        if choice.action == IMPROVE:
            return work.prompt(
                "tree_improve",
                experiment=self.idea.experiment,
                direction=self.target.direction,
                node=parent.step,
                value=f"{self.target.key} {parent.value:.6g}",
                settings=settings_table(settings),
                ledger=ledger_lines(list(choice.seen), self.target),
                **shared,
            )
        return work.prompt(
            "tree_debug",
            node=parent.step,
            problem=parent.problem,
            stderr=parent.stderr_tail,
            **shared,
        )

    def go_on(self) -> bool:
        """The checkpoint every ``checkpoint_every`` nodes (workers go on meanwhile): approve
        goes on, a note reaches the next proposals, skip ends the search, abort stops."""
        return self.frame.go_on(
            f"{len(self.nodes)} node(s)", tree_markdown(self.nodes, self.target)
        )

    # -- the end --------------------------------------------------------------------------------

    def finish(self, reason: str) -> SearchOutcome:
        """The finalists run with fresh seeds, the best of them merged into the project."""
        ctx, target, ledger = self.ctx, self.target, self.ledger
        working = sorted(
            (n for n in self.nodes if n.status == OK and n.value is not None),
            key=lambda n: target.gain(n.value or 0.0, 0.0),
            reverse=True,
        )
        finalists = working[: self.section.finalists]
        seeds: dict[str, list[float]] = {}
        worker = self.workers[0]
        for node in finalists if self.section.seeds else []:
            switch_checkout(worker.checkout, f"{self.prefix}/node-{node.step}", node.tip)
            seeds[str(node.step)] = seed_values(
                worker.work, worker.checkout, target, ledger, self.section, node.step
            )
        best = best_finalist(finalists, seeds, target)
        if (
            best is not None
            and self.noise.values
            and target.gain(best.value or 0.0, self.noise.values[0]) <= self.noise.threshold
        ):
            ctx.say(
                f"the best node, {best.step}, does not beat the baseline by more than the noise; "
                "it is still the result the paper is written from"
            )
        final = Final(
            best.step if best else 0,
            best.value if best and best.value is not None else self.noise.values[0],
            best.tip if best else self.start,
            seeds,
            reason,
        )
        if best is not None:  # the worktree with the best code and the path's runs
            switch_checkout(worker.checkout, f"{self.prefix}/node-{best.step}", best.tip)
        return self.frame.conclude(
            self.nodes,
            final,
            self.path_to(best) if best else [],
            worker.checkout,
            made_from,
            more=f"\n\n{tree_markdown(self.nodes, target)}",
        )

    def path_to(self, node: Step) -> list[int]:
        """The working nodes from a root down to ``node``: whose run folders its branch has."""
        by_number = {n.step: n for n in self.nodes}
        path: list[int] = []
        current: Step | None = node
        while current is not None:
            if current.status == OK:
                path.append(current.step)
            current = by_number.get(current.parent)
        return path[::-1]


def made_from(node: Step) -> str:
    """What a node was made from, for the notebook."""
    return f"a {node.action} of " + (f"node {node.parent}" if node.parent else "the project's code")
