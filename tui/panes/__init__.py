"""The four live panes of the main screen, one module each, and the logs pane's widgets."""

from .base import Pane, PaneScreen, route
from .dialogue import DialoguePane
from .diff import DiffPane
from .latex import LatexPane
from .logs import LogsPane
from .run_results import flatten_means

__all__ = [
    "DialoguePane",
    "DiffPane",
    "LatexPane",
    "LogsPane",
    "Pane",
    "PaneScreen",
    "flatten_means",
    "route",
]
