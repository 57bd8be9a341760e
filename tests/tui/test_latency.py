"""The latency pane's yardsticks: the baseline and the vendor library, a line each (in the figures
and on the plot), and when the library has no figure, why not."""

from __future__ import annotations

from fakes.fake_gpu import FakeGpu

from cuda_llm.app.screens.start import StartScreen
from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.latency import figures_text
from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.judge.judgement import LibraryResult
from tui.helpers import by_request, make_app, screen_text, streamed, wait_for


async def test_the_library_is_a_line_beside_the_baseline(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    gpu = FakeGpu(library_us=35.0)
    app = make_app(tmp_path, llm_server.url, gpu, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: app.screen.view.awaiting is not None, "the decision")
        lines = screen_text(app, "#latency-figures").splitlines()
        assert lines[0].startswith("best: the baseline, 100.0 us")
        assert lines[-1] == "library CuPy elementwise add: 35.0 us · the best is 0.35x its speed", lines
        await pilot.press("a")
        await wait_for(pilot, lambda: app.screen.view.state == "finished", "the end")
        lines = screen_text(app, "#latency-figures").splitlines()
        assert lines[0].startswith("best r1-1: 40.0 us · 2.50x the baseline"), lines
        assert lines[1:] == ["baseline 100.0 us", "library CuPy elementwise add: 35.0 us · the best is 0.88x its speed"]
        assert "┄ library" in screen_text(app, "#latency-legend")
        assert "vendor library: CuPy elementwise add 35.0 us on this GPU" in app.screen.view.log


async def test_without_a_library_figure_the_pane_says_why(tmp_path, llm_server):
    llm_server.default = by_request({}, default=streamed("vadd_us40"))
    app = make_app(tmp_path, llm_server.url, task="vector_add", model="ollama:loop-model", candidates=1, rounds=1)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")
        await pilot.press("s")
        await wait_for(pilot, lambda: app.screen.view.awaiting is not None, "the decision")
        last = screen_text(app, "#latency-figures").splitlines()[-1]
        assert last.startswith("library (CuPy elementwise add): no figure: "), last  # the fake GPU runs none
        assert "library" not in screen_text(app, "#latency-legend")  # no line for it on the plot
        await pilot.press("s")
        await wait_for(pilot, lambda: not app.screen.view.running, "the stop")


def test_why_there_is_no_library_line():
    view = SessionView()
    started = ev.SessionStarted("1", "conv1d", "ollama:m", "Fake H100 (sm_90)", LoopSettings())
    view.apply(started)
    view.apply(ev.LibraryTimed("1", LibraryResult(None, note="task 'conv1d' has no vendor-library reference")))
    assert figures_text(view).splitlines()[-1] == "library: no figure: task 'conv1d' has no vendor-library reference"
    compile_only = SessionView()
    compile_only.apply(
        ev.SessionStarted("1", "conv1d", "ollama:m", "compile-only (sm_90)", LoopSettings(), compile_only=True)
    )
    assert figures_text(compile_only).splitlines()[-1] == "library: not timed (compile-only: no GPU to time it on)"
