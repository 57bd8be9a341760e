"""The run screen's panes: the one list of them. A new pane is a module of this package that
declares its `Pane` (app/panes/spec.py) and its line here; docs/architecture.md shows one added.

The run screen composes, binds, lays out, names and redraws exactly what `panes()` returns, in this
order: their keys' order, Tab's order and the tabs' order. tests/test_layers.py fails on a second
list of panes anywhere in app/.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from textual.binding import Binding
from textual.widget import Widget

from cuda_llm.app.panes import candidates, compiler, kernel, latency, log, prompt, validation
from cuda_llm.app.panes.spec import AnyPane

PANES: dict[str, AnyPane] = {
    p.id: p for p in (prompt.PANE, kernel.PANE, compiler.PANE, validation.PANE, latency.PANE, candidates.PANE, log.PANE)
}


class PaneError(ValueError):
    """A registration that cannot work (two panes on one key, a grid row with a gap...): a
    programming error, raised when the run screen is built, never a blank pane found later."""


def panes() -> tuple[AnyPane, ...]:
    """The registered panes, checked (once for each run screen built)."""
    found = tuple(PANES.values())
    check(found)
    return found


def keys() -> list[Binding]:
    """The panes' bindings as registered now, unchecked: app/keys.py asks on every status line."""
    return pane_bindings(PANES.values())


def check(found: Iterable[AnyPane]) -> None:
    found = tuple(found)
    if not found:
        raise PaneError("no pane is registered")
    for what, values in (("id", [p.id for p in found]), ("key", [p.key for p in found])):
        doubled = sorted({v for v in values if values.count(v) > 1})
        if doubled:
            raise PaneError(f"two panes have the {what} {', '.join(doubled)}")
    for p in found:
        if not p.shows:
            raise PaneError(f"{p.id} shows nothing: name the SessionView flags after which it redraws")
    if sum(p.beside for p in found) > 1:
        raise PaneError("more than one pane is to be shown beside the focused one")
    rows: dict[int, list[AnyPane]] = {}
    for p in found:
        rows.setdefault(p.wide.row, []).append(p)
    if sorted(rows) != list(range(len(rows))):
        raise PaneError(f"the wide grid's rows {sorted(rows)} leave a row empty")
    width = grid_size(found)[0]
    for row, members in rows.items():
        at = 0
        for p in sorted(members, key=lambda p: p.wide.column):
            if p.wide.column != at or p.wide.span < 1:
                raise PaneError(f"row {row} of the wide grid has a gap or an overlap at {p.id}")
            at += p.wide.span
        if at != width:
            raise PaneError(f"row {row} of the wide grid spans {at} columns of {width}")


def grid_size(found: Iterable[AnyPane]) -> tuple[int, int]:
    """(columns, rows) of the wide layout's grid."""
    found = tuple(found)
    return max(p.wide.column + p.wide.span for p in found), max(p.wide.row for p in found) + 1


def in_grid_order(found: Iterable[AnyPane]) -> list[AnyPane]:
    """The panes in the order the grid places them (row by row, left to right): the order they are mounted."""
    return sorted(found, key=lambda p: (p.wide.row, p.wide.column))


def pane_bindings(found: Iterable[AnyPane]) -> list[Binding]:
    """One binding for each pane: its key shows and focuses it. The ids go by position (run.pane1
    ...), as the config's [keys] table has always named them."""
    return [Binding(p.key, f"pane({p.id!r})", p.title, show=False, id=f"run.pane{i}") for i, p in enumerate(found, 1)]


def redraw(found: Iterable[AnyPane], widgets: Mapping[str, Widget], changed: set[str]) -> None:
    """Redraw every pane whose flags `changed` names (what SessionView.apply returned)."""
    for p in found:
        widget = widgets.get(p.id)
        if widget is not None and p.shows & changed:
            p.redraw(widget)


def retheme(found: Iterable[AnyPane], widgets: Mapping[str, Any]) -> None:
    for p in found:
        if p.retheme is not None and p.id in widgets:
            p.retheme(widgets[p.id])
