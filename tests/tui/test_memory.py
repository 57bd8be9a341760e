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
# Helps opened and closed: each redraws the footer, and a footer that kept its keys keeps 14 a time
# (with app/widgets/footer.py's pruning taken out: 168 after 12), far beyond the margin of 4.
HELPS = 12


def alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, SyntaxAwareDocument))


async def demo_screen(app, pilot) -> RunScreen:
    """The run screen showing the demo session's events (no session runs)."""
    screen = RunScreen(SessionRequest(SessionOptions("vector_add", "ollama:loop-model")), autostart=False)
    await app.push_screen(screen)
    screen.post_message(SessionOpened(7, "vector_add", "ollama:loop-model", None, False))
    for event in demo_events():
        screen.post_message(EngineEvent(event))
    await pilot.pause()
    return screen


async def test_the_kernel_pane_lets_go_of_what_it_showed(tmp_path, refused_url):
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await demo_screen(app, pilot)
        before = alive()
        for i in range(SHOWN):  # the person goes back and forth between two kernels
            screen.view.set_focus("r1-2" if i % 2 else "r1-fix1-1", by_person=True)
            screen.query_one("#kernel-pane").show()
        await pilot.pause()
        assert "vadd_wrong" in screen.query_one("#kernel-source").text  # the last shown: r1-2
        assert alive() <= before + 2, f"{alive() - before} documents kept after showing {SHOWN} kernels"


async def test_following_a_long_session_folds_the_old_rounds(tmp_path, refused_url):
    from textual.widgets import Tree

    from cuda_llm.app.widgets.candidates import ROUNDS_OPEN
    from cuda_llm.engine.core.settings import LoopSettings
    from cuda_llm.engine.fsr import events as ev
    from cuda_llm.engine.gpu.protocol import Timing
    from cuda_llm.engine.judge.judgement import Judgement

    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = RunScreen(SessionRequest(SessionOptions("vector_add", "ollama:m")), autostart=False)
        await app.push_screen(screen)
        screen.post_message(
            EngineEvent(
                ev.SessionStarted(
                    "1", "vector_add", "ollama:m", "compile-only (sm_90)", LoopSettings(), compile_only=True
                )
            )
        )
        for r in range(1, 41):
            screen.post_message(EngineEvent(ev.RoundStarted("1", r, 0, (), 2)))
            for slot in range(2):
                screen.post_message(EngineEvent(ev.RequestStarted("1", f"r{r}-{slot + 1}", r, 0, slot)))
            if r == 5:  # round 5 finds the best: its round stays open, so its ★ stays in sight
                timing = Timing("r5-1", 40.0, 39.6, 40.4, 39.2, 50, 0, "events", 1, 1980.0)
                best = Judgement("r5-1", "correct", "40 us", timing=timing)
                screen.post_message(EngineEvent(ev.CandidateJudged("1", "validate", best)))
                screen.post_message(EngineEvent(ev.BestImproved("1", 5, best, "baseline", 100.0)))
        await pilot.pause()
        tree = screen.query_one("#candidates", Tree)
        rounds = [n for n in tree.root.children if str(n.label).startswith("round")]
        expected = [r == 5 for r in range(1, 41 - ROUNDS_OPEN)] + [True] * ROUNDS_OPEN
        assert [n.is_expanded for n in rounds] == expected
        assert tree.last_line < 40 + 2 * (ROUNDS_OPEN + 1) + 2  # a line a round, and the open ones' candidates


async def test_the_footer_lets_go_of_the_keys_it_drew(tmp_path, refused_url):
    """The footer redraws its keys on every change of the bindings (here: the help opened and
    closed); Textual's own footer kept every key it had drawn (issue #6666)."""
    from textual.widgets._footer import FooterKey

    def keys_alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, FooterKey))

    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await demo_screen(app, pilot)
        before = keys_alive()
        for _ in range(HELPS):
            await pilot.press("question_mark")
            await pilot.pause()
            await pilot.press("escape")
            await pilot.pause()
        await pilot.pause(0.2)
        assert app.screen is screen
        assert keys_alive() <= before + 4, f"{keys_alive() - before} footer keys kept after {HELPS} helps"
