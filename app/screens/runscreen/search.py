"""`/`: the candidates' filter in their pane, else a search of the focused pane (n / N step
through its matches, Esc ends it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.widgets import Input, Log

from cuda_llm.app.screens.runscreen.following import focus_pane
from cuda_llm.app.widgets.candidates import CandidatesPane
from cuda_llm.app.widgets.search import end_search, find_match, search_target, searching

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen


def open_filter(screen: RunScreen) -> None:
    """`/`: the candidates' filter in their pane (or when no pane can be searched), else a search
    of the focused pane."""
    active = screen.panes[screen.active_pane]
    if not isinstance(active, CandidatesPane) and search_target(active) is not None:
        field = screen.query_one("#pane-search", Input)
        field.display = True
        field.value = screen.search_term
        field.focus()
        return
    for pane_id, pane in screen.panes.items():
        if isinstance(pane, CandidatesPane):
            screen.show_pane(pane_id)
            screen.call_after_refresh(pane.open_filter)
            return


def submitted(screen: RunScreen, event: Input.Submitted) -> None:
    if event.input.id != "pane-search":
        return
    event.stop()
    screen.search_term = event.value.strip()
    event.input.display = False
    focus_pane(screen, screen.active_pane)
    if screen.search_term:
        # Once the field has closed and the pane has its height back: a pane that follows its
        # end scrolls there on a resize, which would take the match out of view again.
        screen.call_after_refresh(step, screen, 1, True)


def key(screen: RunScreen, event: events.Key) -> None:
    field = screen.query_one("#pane-search", Input)
    if event.key == "escape" and field.has_focus:
        event.stop()
        field.display = False
        focus_pane(screen, screen.active_pane)


def step(screen: RunScreen, direction: int, from_top: bool = False) -> None:
    """The next (1) or previous (-1) line of the focused pane holding the search term."""
    target = search_target(screen.panes[screen.active_pane])
    term = screen.search_term
    if not term:
        screen.notify("nothing to search for: / in a pane asks for it", timeout=3)
        return
    if target is None:
        screen.notify("this pane has no text to search: / filters the candidates", timeout=3)
        return
    found = find_match(target, term, direction, from_top)
    if found is None:
        screen.notify(f"{term!r} is not in this pane", severity="warning", timeout=3, markup=False)
        return
    index, count, line = found
    screen.notify(f"{term!r}: match {index} of {count} (line {line + 1})", timeout=2, markup=False)


def end(screen: RunScreen) -> bool:
    """Esc: end a search of the focused pane (its matches unmarked, its end followed again);
    whether there was one to end."""
    target = search_target(screen.panes[screen.active_pane])
    if not (isinstance(target, Log) and searching(target)):
        return False
    end_search(target, screen.view.follow)
    if screen.view.follow:
        target.scroll_end(animate=False)
    return True
