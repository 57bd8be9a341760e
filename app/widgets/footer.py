"""The key footer: Textual's Footer, without the leak of its keys.

Each FooterKey the footer composes binds its `compact` to the footer's (`data_bind`), which files a
watcher on the footer itself; Textual prunes that list of watchers only when `compact` changes,
which it never does here. The footer recomposes on every change of the screen's bindings (a decision
waiting, a dialog opened or closed, a state change), so a long session kept every key it ever drew,
with its caches: the ten-minute soak grew by hundreds of MiB (Textual issue #6666). After each
recompose the watchers of keys that have been removed are dropped.

In a narrow terminal the keys that do not fit are cut off on the right, Quit (the last letter) first:
there Quit is put first and the palette's key (ctrl+p, also in the help) left out, so the way out stays.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

# Below this many columns a screen's keys do not all fit on one line (the start screen's need 55).
NARROW_COLUMNS = 60


class KeyFooter(Footer):
    _narrow: bool | None = None

    def compose(self) -> ComposeResult:
        keys: list[Widget] = list(super().compose())
        self._narrow = self.app.size.width < NARROW_COLUMNS
        if self._narrow:
            keys = [k for k in keys if not k.has_class("-command-palette")]
            quits = [k for k in keys if isinstance(k, FooterKey) and k.action.rsplit(".", 1)[-1] == "quit"]
            keys = quits + [k for k in keys if k not in quits]
        yield from keys

    def on_resize(self, event: events.Resize) -> None:
        if self._narrow is not None and (self.app.size.width < NARROW_COLUMNS) != self._narrow:
            self.call_later(self.recompose)

    async def recompose(self) -> None:
        await super().recompose()
        watchers = getattr(self, "__watchers", {})
        for entries in watchers.values():
            entries[:] = [(node, callback) for node, callback in entries if not node._closing and not node._closed]
