"""Progress of the long steps of setting up the local model, as values a front end draws: the
server's build (minutes), the download (1.1 GB) and the assembly and checksum of the file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """One step's progress. ``total`` None: the step cannot say how far it is (a build); then
    ``done`` counts seconds and ``detail`` says what it is doing."""

    step: str
    """What is under way, in words: "building the model server", "downloading …"."""
    done: float
    total: float | None = None
    unit: str = "B"
    """"B" (bytes) or "s" (seconds)."""
    detail: str = ""

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, self.done / self.total)


ProgressSink = Callable[[Progress], None]


def no_progress(_: Progress) -> None:
    """For callers that show none."""
