"""The run screen's panes come from their registry (app/panes/registry.py): a pane registered there
is composed, bound to its key, named in the tabs and the help, and redrawn after the engine events
that change what it shows; and between 120x30 and 140x40 two panes show side by side."""

from __future__ import annotations

import pytest
from textual.geometry import Size
from textual.widgets import Static

from cuda_llm.app.keys import binding_ids, key_of
from cuda_llm.app.messages import EngineEvent, SessionOpened
from cuda_llm.app.options import SessionRequest
from cuda_llm.app.panes import registry
from cuda_llm.app.panes.layout import layout_for
from cuda_llm.app.panes.registry import PaneError, check
from cuda_llm.app.panes.spec import Cell, Pane
from cuda_llm.app.screens.run import RunScreen
from cuda_llm.app.state import LATENCY, SessionView
from cuda_llm.engine.fsr.session import SessionOptions
from tui.demo import demo_events
from tui.helpers import make_app, wait_for


class TimedCount(Static):
    """A pane of the test's own: how many candidates have a latency, as the view says."""

    def __init__(self, view: SessionView, *, id: str, classes: str) -> None:
        super().__init__(id=id, classes=classes)
        self.view = view
        self.redraws = 0

    def show(self) -> None:
        self.redraws += 1
        timed = [c for c in self.view.candidates.values() if c.judgement is not None and c.judgement.timing]
        self.update(f"{len(timed)} timed")


FAKE = Pane(
    id="timed-pane",
    title="Timed",
    key="8",
    shows=frozenset({LATENCY}),
    widget=TimedCount,
    redraw=TimedCount.show,
    wide=Cell(row=2, column=0, span=7),
)


def run_screen() -> RunScreen:
    return RunScreen(SessionRequest(SessionOptions("vector_add", "ollama:loop-model")), autostart=False)


async def test_a_registered_pane_is_composed_bound_and_redrawn(tmp_path, refused_url, monkeypatch):
    monkeypatch.setitem(registry.PANES, FAKE.id, FAKE)
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = run_screen()
        await app.push_screen(screen)
        await pilot.pause()
        pane = screen.query_one("#timed-pane", TimedCount)  # composed
        assert screen.panes["timed-pane"] is pane and not pane.display  # narrow: the first pane shows
        assert str(screen.query_one("#tab-timed-pane").label) == "8 Timed"
        assert key_of(screen, "pane('timed-pane')") == "8" and "run.pane8" in binding_ids([RunScreen])
        await pilot.press("8")  # bound to its key
        await wait_for(pilot, lambda: screen.active_pane == "timed-pane" and pane.display, "the pane on 8")
        before = pane.redraws
        screen.post_message(SessionOpened(7, "vector_add", "ollama:loop-model", None, False))
        for event in demo_events():
            screen.post_message(EngineEvent(event))
        await wait_for(pilot, lambda: screen.view.awaiting is not None, "the demo's events folded")
        await pilot.pause()
        assert pane.redraws > before  # redrawn on the events that change the latencies
        timed = sum(1 for c in screen.view.candidates.values() if c.judgement is not None and c.judgement.timing)
        assert timed > 0 and str(pane.render()) == f"{timed} timed"
        await pilot.press("tab")  # in the keys' order: after the last registered pane, the first
        await wait_for(pilot, lambda: screen.active_pane == "prompt-pane", "Tab round to the first pane")
        # The wide layout gives it the third row its cell asks for.
        await pilot.resize_terminal(200, 60)
        await wait_for(pilot, lambda: screen.layout_mode == "wide", "the wide layout")
        await pilot.pause()
        kernel = screen.panes["kernel-pane"]
        assert pane.display and pane.region.y > kernel.region.bottom and pane.region.width > 150, pane.region


def test_a_registration_that_cannot_work_is_refused():
    found = list(registry.PANES.values())
    check(found)
    with pytest.raises(PaneError, match="key 2"):
        check([*found, Pane(**{**FAKE.__dict__, "key": "2"})])
    with pytest.raises(PaneError, match="shows nothing"):
        check([*found, Pane(**{**FAKE.__dict__, "shows": frozenset()})])
    with pytest.raises(PaneError, match="row 2 of the wide grid spans 3"):
        check([*found, Pane(**{**FAKE.__dict__, "wide": Cell(row=2, column=0, span=3)})])
    with pytest.raises(PaneError, match="leave a row empty"):
        check([*found, Pane(**{**FAKE.__dict__, "wide": Cell(row=3, column=0, span=7)})])
    with pytest.raises(PaneError, match="more than one"):
        check([*found, Pane(**{**FAKE.__dict__, "beside": True})])


def test_the_layout_for_each_size():
    assert layout_for(Size(80, 24)) == "narrow"
    assert layout_for(Size(120, 30)) == layout_for(Size(139, 60)) == "split"
    assert layout_for(Size(200, 29)) == layout_for(Size(119, 60)) == "narrow"
    assert layout_for(Size(140, 40)) == "wide"


async def test_two_panes_side_by_side_at_120_columns(tmp_path, refused_url):
    """At 120x40: the focused pane on the left, the kernel on the right; focusing the kernel keeps
    the pane focused before it on the left."""
    app = make_app(tmp_path, refused_url)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = run_screen()
        await app.push_screen(screen)
        await pilot.pause()
        assert screen.layout_mode == "split" and screen.query_one("#pane-tabs").display

        def shown() -> list[str]:
            visible = [(p.region.x, pane_id) for pane_id, p in screen.panes.items() if p.display and p.region.width]
            return [pane_id for _x, pane_id in sorted(visible)]

        for key, left in (("1", "prompt-pane"), ("4", "validation-pane"), ("2", "validation-pane"), ("7", "event-log")):
            await pilot.press(key)
            await wait_for(pilot, lambda left=left: shown() == [left, "kernel-pane"], f"{left} beside the kernel")
            a, b = screen.panes[left].region, screen.panes["kernel-pane"].region
            assert a.width >= 55 and b.width >= 55 and a.y == b.y and a.right <= b.x, (a, b)
            focused = screen.focused
            assert focused is not None and screen.panes[screen.active_pane] in focused.ancestors_with_self
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: shown() == ["event-log"], "one pane at 80 columns")
