"""Keep the garbage collector's full collections out of the screen's frames.

A full (generation 2) collection walks every object Python tracks: Textual's widget tree, its styles,
the session's records, some hundreds of thousands of objects once the run screen is up. On the 2-core
machine with two busy processes beside the app each one took 170-225 ms, and landed inside a redraw:
every relayout over 250 ms in `bench/relayout.py` held one. Once a screen is drawn, what exists then
lives as long as the screen, so it is moved to the permanent generation (`gc.freeze`) and later full
collections walk only what was made since: 33-82 ms in the same bench. A frozen object is still freed
when its last reference goes, but a reference cycle among frozen objects (a widget tree is full of
them) is never collected: so when the screen goes, the permanent generation is given back to the
collector (`gc.unfreeze`), and a day of sessions does not keep every closed screen.
"""

from __future__ import annotations

import gc


def freeze_long_lived() -> None:
    """Move every object the collector tracks now into the permanent generation."""
    gc.freeze()


def thaw_long_lived() -> None:
    """Give every frozen object back to the collector (the screen that froze them is going)."""
    gc.unfreeze()
