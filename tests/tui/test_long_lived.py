"""Once the run screen is drawn, what exists then is moved out of the garbage collector's full
collections (app/long_lived.py): in bench/relayout.py every relayout over 250 ms on the 2-core machine
held a full collection of 170-225 ms before. And once the screen is gone they are given back to the
collector. Counted, not timed."""

from __future__ import annotations

import gc

from cuda_llm.app.options import SessionRequest
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.engine.fsr.session import SessionOptions
from tui.helpers import make_app, wait_for


async def test_the_run_screen_freezes_what_exists_once_it_is_drawn(tmp_path, refused_url):
    gc.unfreeze()  # whatever an earlier test froze
    app = make_app(tmp_path, refused_url)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert gc.get_freeze_count() == 0  # the start screen alone freezes nothing
            screen = RunScreen(SessionRequest(SessionOptions("vector_add", "manual")), autostart=False)
            await app.push_screen(screen)
            await wait_for(pilot, lambda: gc.get_freeze_count() > 0, "the run screen's objects frozen")
            widgets = len(list(screen.walk_children(with_self=True)))
            assert gc.get_freeze_count() > 100 * widgets, (gc.get_freeze_count(), widgets)
            # Leaving the screen gives what it froze back to the collector: the reference cycles of a
            # closed screen's widgets can be collected again.
            app.pop_screen()
            await wait_for(pilot, lambda: gc.get_freeze_count() == 0, "the frozen objects given back")
    finally:
        gc.unfreeze()
