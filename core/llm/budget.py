"""The Ledger: tokens and dollars booked per stage, and the hard budget cap.

Every model call (core/llm/client.py, and aider's in core/coding/coder.py) books its usage here; each booking
is a ``CostUpdate`` event, and once the budget is spent :meth:`Ledger.check` refuses the next call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..errors import BudgetExceeded
from ..events import CostUpdate, Event

Emit = Callable[[Event], None]


@dataclass
class _StageTotals:
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


@dataclass
class Meter:
    """What the calls made on one thread booked while it was open (a search's step): tokens and
    seconds spent waiting for the model."""

    tokens: int = 0
    model_s: float = 0.0


class Ledger:
    """Thread-safe token and dollar accounting per stage, and the hard budget cap.

    ``spent_usd`` carries over what earlier sessions of the project spent (from the journal), so
    a resumed run cannot exceed the budget by restarting.
    """

    def __init__(self, budget_usd: float, emit: Emit, spent_usd: float = 0.0) -> None:
        self.budget_usd = float(budget_usd)
        self._emit = emit
        self._carried_usd = float(spent_usd)
        self._stages: dict[str, _StageTotals] = {}
        self._lock = threading.RLock()
        self._meters = threading.local()  # per thread: the Meters open on it

    def record(
        self,
        stage: str,
        model: str,
        tokens_in: int,
        tokens_out: int,
        cost_usd: float,
        *,
        first_token_s: float = 0.0,
        seconds: float = 0.0,
    ) -> None:
        """Book one call and emit a CostUpdate with the call, its stage and the project total.

        ``first_token_s`` and ``seconds``: the call's timing when it was measured (0: not), from
        which the status bar and ``labtui doctor`` show the model's speed."""
        for meter in getattr(self._meters, "open", ()):
            meter.tokens += tokens_in + tokens_out
            meter.model_s += seconds
        with self._lock:
            totals = self._stages.setdefault(stage, _StageTotals())
            totals.tokens_in += tokens_in
            totals.tokens_out += tokens_out
            totals.cost_usd += cost_usd
            # Emitted under the lock so that subscribers see totals in increasing order.
            self._emit(
                CostUpdate(
                    stage=stage,
                    model=model,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    cost_usd=cost_usd,
                    stage_tokens_in=totals.tokens_in,
                    stage_tokens_out=totals.tokens_out,
                    stage_cost_usd=totals.cost_usd,
                    total_cost_usd=self.total_usd,
                    budget_usd=self.budget_usd,
                    first_token_s=first_token_s,
                    seconds=seconds,
                )
            )

    @contextlib.contextmanager
    def meter(self) -> Iterator[Meter]:
        """A Meter of the calls this thread makes until the block ends (calls of other threads,
        a parallel worker's, are not counted)."""
        meter = Meter()
        opened = getattr(self._meters, "open", [])
        self._meters.open = [*opened, meter]
        try:
            yield meter
        finally:
            self._meters.open = opened

    @property
    def total_usd(self) -> float:
        with self._lock:
            return self._carried_usd + sum(t.cost_usd for t in self._stages.values())

    def stage_totals(self, stage: str) -> tuple[int, int, float]:
        """(tokens_in, tokens_out, cost_usd) booked for ``stage`` in this session."""
        with self._lock:
            totals = self._stages.get(stage, _StageTotals())
            return totals.tokens_in, totals.tokens_out, totals.cost_usd

    @property
    def exhausted(self) -> bool:
        """Spent at least the budget. A budget of 0 still lets free (local) models run."""
        total = self.total_usd
        return total > 0 and total >= self.budget_usd

    def check(self) -> None:
        """Raise BudgetExceeded once the cap is reached, so no further call is made."""
        if self.exhausted:
            raise BudgetExceeded(
                f"budget spent: ${self.total_usd:.4f} of ${self.budget_usd:.2f}",
                "raise [budget] usd in labtui.toml to continue",
            )
