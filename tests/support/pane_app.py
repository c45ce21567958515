"""An app holding one pane as the main screen holds it: labtui's stylesheet, on a PaneScreen (so
the pane with the focus is drawn as focused), for tests of a pane alone."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

import labtui.tui
from labtui.tui.panes import PaneScreen


class PaneApp(App[None]):
    CSS_PATH = str(Path(labtui.tui.__file__).with_name("labtui.tcss"))

    def get_default_screen(self) -> PaneScreen:
        return PaneScreen(id="_default")
