"""The key bar: the active keys of the screen, always visible, as one line of text.

Textual's Footer rebuilds a widget per key whenever the focus moves (about 30 widgets restyled
on every tab), which was most of what a key press cost while an experiment streamed. This bar
renders the same information as a single Content and only when it changes. Keys are shown, not
clicked: labtui is keyboard-first and every key is also in the help screen and the palette.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-description-foreground;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        padding: 0 1;
    }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._shown: Content | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.call_after_refresh(self._bindings_changed, self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if not self.is_attached or screen is not self.screen:
            return
        content = self.describe(self.active_keys(screen))
        if content != self._shown:
            self._shown = content
            self.update(content, layout=False)  # one fixed line: no relayout per key

    def active_keys(self, screen: Screen[object]) -> list[tuple[Binding, bool]]:
        """Shown bindings, one per action (the first key of each), palette key last."""
        seen: set[tuple[int, str]] = set()
        keys: list[tuple[Binding, bool]] = []
        palette: tuple[Binding, bool] | None = None
        for node, binding, enabled, _tooltip in screen.active_bindings.values():
            if binding.key == self.app.COMMAND_PALETTE_BINDING:
                palette = (binding, enabled)
                continue
            if not binding.show or (id(node), binding.action) in seen:
                continue
            seen.add((id(node), binding.action))
            keys.append((binding, enabled))
        if palette is not None:
            keys.append(palette)
        return keys

    def describe(self, keys: list[tuple[Binding, bool]]) -> Content:
        parts = []
        for binding, enabled in keys:
            key = self.app.get_key_display(binding)
            # The space belongs to the key's span: SVG renderers place bold glyphs loosely.
            part = Content.assemble(
                (f"{key} ", "bold $footer-key-foreground"), binding.description or binding.action
            )
            parts.append(part if enabled else part.stylize("dim"))
        return Content("  ").join(parts)
