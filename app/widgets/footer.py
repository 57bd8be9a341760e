"""The key footer: Textual's Footer, without the leak of its keys.

Each FooterKey the footer composes binds its `compact` to the footer's (`data_bind`), which files a
watcher on the footer itself; Textual prunes that list of watchers only when `compact` changes,
which it never does here. The footer recomposes on every change of the screen's bindings (a decision
waiting, a dialog opened or closed, a state change), so a long session kept every key it ever drew,
with its caches: the ten-minute soak grew by hundreds of MiB (Textual issue #6666). After each
recompose the watchers of keys that have been removed are dropped.
"""

from __future__ import annotations

from textual.widgets import Footer


class KeyFooter(Footer):
    async def recompose(self) -> None:
        await super().recompose()
        watchers = getattr(self, "__watchers", {})
        for entries in watchers.values():
            entries[:] = [(node, callback) for node, callback in entries if not node._closing and not node._closed]
