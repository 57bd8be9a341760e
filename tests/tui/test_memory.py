"""A long session must not pile up what the panes showed before: the kernel pane's highlighted
documents (each holds its tree-sitter tree and the tree holds it back) are let go."""

from __future__ import annotations

import gc

from textual.document._syntax_aware_document import SyntaxAwareDocument

from cuda_llm.app.messages import EngineEvent, SessionOpened
from cuda_llm.app.options import SessionRequest
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.engine.fsr.session import SessionOptions
from tui.demo import demo_events
from tui.helpers import make_app

SHOWN = 60  # kernels shown one after the other


def alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, SyntaxAwareDocument))


async def test_the_kernel_pane_lets_go_of_what_it_showed(tmp_path, refused_url):
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = RunScreen(SessionRequest(SessionOptions("vector_add", "ollama:loop-model")), autostart=False)
        await app.push_screen(screen)
        screen.post_message(SessionOpened(7, "vector_add", "ollama:loop-model", None, False))
        for event in demo_events():
            screen.post_message(EngineEvent(event))
        await pilot.pause()
        before = alive()
        for i in range(SHOWN):  # the person goes back and forth between two kernels
            screen.view.set_focus("r1-2" if i % 2 else "r1-fix1-1", by_person=True)
            screen.query_one("#kernel-pane").show()
        await pilot.pause()
        assert "vadd_wrong" in screen.query_one("#kernel-source").text  # the last shown: r1-2
        assert alive() <= before + 2, f"{alive() - before} documents kept after showing {SHOWN} kernels"
