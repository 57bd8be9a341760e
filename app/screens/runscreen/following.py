"""Which candidate the panes show: the latest while following (the view's `follow`), else the one
the person picked in the tree or the table; and the pane the cursor is in, as the active pane."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widget import Widget

from cuda_llm.app.screens.table import CandidateTableScreen
from cuda_llm.app.state import PROMPT, STATUS, TREE

if TYPE_CHECKING:
    from cuda_llm.app.screens.run import RunScreen


def follow(screen: RunScreen) -> None:
    view = screen.view
    view.follow = True
    latest = next(reversed(view.candidates), None)
    screen.redraw(view.set_focus(latest) | {TREE, STATUS, PROMPT})


def unfollow(screen: RunScreen) -> None:
    screen.view.follow = False
    screen.redraw({TREE, STATUS, PROMPT})


def choose(screen: RunScreen, label: str | None) -> None:
    """The person picked a candidate (None: the tree's root, follow again)."""
    screen.redraw(screen.view.set_focus(label, by_person=True) | {TREE, STATUS})


def table(screen: RunScreen) -> None:
    def chosen(label: str | None) -> None:
        if label is not None:
            choose(screen, label)

    screen.app.push_screen(CandidateTableScreen(screen.view), chosen)


def pane_of(screen: RunScreen, widget: Widget | None) -> str | None:
    """The pane a widget is in (the focus's, a click's)."""
    while widget is not None:
        if widget.id in screen.panes and widget.parent is not None and widget.parent.id == "run-body":
            return widget.id
        widget = widget.parent  # type: ignore[assignment]  # panes' parents are widgets
    return None


def focus_pane(screen: RunScreen, pane: str, settled: bool = False) -> None:
    """Focus the pane's main widget (a pane without one: the first focusable widget in it,
    once the layout has been refreshed and it is in the focus chain)."""
    target = screen.panes[pane]
    focus = getattr(target, "focus_target", None)
    widget = focus() if callable(focus) else None
    if widget is None and not settled:
        screen.call_after_refresh(focus_pane, screen, pane, True)
        return
    if widget is None:
        widget = next((w for w in screen.focus_chain if target in w.ancestors_with_self), None)
    if widget is not None and widget is not screen.focused:
        # At once, not as widget.focus() does on the next idle: a key typed in the same burst
        # as the digit (`2v`) is handled before that, and went to the pane left behind.
        if widget.focusable:
            screen.set_focus(widget)
        else:
            widget.focus()


def motion(screen: RunScreen, step: int) -> None:
    """j / k: the focused widget's cursor down or up (the tree, a list, a table, the kernel),
    else its text scrolled by a line (the prompt, the log)."""
    widget = screen.focused
    if widget is None:
        return
    names = ("action_cursor_down", "action_scroll_down") if step > 0 else ("action_cursor_up", "action_scroll_up")
    for name in names:
        action = getattr(widget, name, None)
        if callable(action):
            action()
            return


def wrap(screen: RunScreen) -> None:
    toggle = getattr(screen.panes[screen.active_pane], "toggle_wrap", None)
    if toggle is None:
        screen.notify("this pane has nothing to wrap", timeout=2)
        return
    screen.notify(f"wrap {'on' if toggle() else 'off'}", timeout=2)


def maximize(screen: RunScreen) -> None:
    if screen.maximized is not None:
        screen.minimize()
        return
    screen.maximized = screen.panes[screen.active_pane]  # any pane, whether Textual would offer it or not
    focus_pane(screen, screen.active_pane)
