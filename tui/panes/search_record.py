"""What the logs pane knows of a hill-climb or tree search: built from its events only
(``SearchStarted``, ``SearchStep``, ``SearchEnded``), never from the ledger's files, so that a
journal replayed on attach shows the same as the live run did.

Each event costs a dict insert and a few counters: a replay of a long search stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from labtui.core.events import Event, SearchEnded, SearchStarted, SearchStep

CLIMB, TREE = "climb", "tree"


@dataclass
class SearchRecord:
    """The search the pane shows: how it began, its steps by number, how it ended."""

    started: SearchStarted | None = None
    steps: dict[int, SearchStep] = field(default_factory=dict)
    ended: SearchEnded | None = None
    best: SearchStep | None = None  # the newest step that set a new best
    counts: dict[str, int] = field(default_factory=dict)  # status -> how many
    version: int = 0  # bumped by every change: what the view's cache is keyed on

    @property
    def active(self) -> bool:
        """A search has begun (running, or ended and still the latest)."""
        return self.started is not None

    @property
    def strategy(self) -> str:
        return self.started.strategy if self.started is not None else ""

    @property
    def stage(self) -> str:
        return self.started.stage if self.started is not None else ""

    def apply(self, event: Event) -> bool:
        """Take one search event in; True when it changed what is shown."""
        if isinstance(event, SearchStarted):
            same = self.started is not None and (
                (self.started.strategy, self.started.idea) == (event.strategy, event.idea)
            )
            if not same:  # another search: a resumed one keeps the steps it had
                self.forget()
            self.started, self.ended = event, None
        elif isinstance(event, SearchStep):
            self._add(event)
        elif isinstance(event, SearchEnded):
            self.ended = event
        else:
            return False
        self.version += 1
        return True

    def _add(self, step: SearchStep) -> None:
        earlier = self.steps.get(step.step)
        if earlier is not None:  # the same step told again (a resumed search): replaced
            self.counts[earlier.status] -= 1
        self.steps[step.step] = step
        self.counts[step.status] = self.counts.get(step.status, 0) + 1
        if (step.new_best and earlier is None) or (earlier is not None and earlier is self.best):
            self.best = step

    def forget(self) -> None:
        """Nothing shown: a rewind took the search back, or another search begins."""
        self.started, self.ended, self.best = None, None, None
        self.steps.clear()
        self.counts.clear()
        self.version += 1

    def ordered(self) -> list[SearchStep]:
        """The steps by number."""
        return [self.steps[number] for number in sorted(self.steps)]

    def best_step(self) -> int:
        """The best step's number (0: the baseline): the ended search's, else the newest best."""
        if self.ended is not None:
            return self.ended.best_step
        return self.best.step if self.best is not None else 0

    def best_value(self) -> float | None:
        if self.ended is not None:
            return self.ended.best
        if self.best is not None:
            return self.best.value
        return self.started.baseline if self.started is not None else None
