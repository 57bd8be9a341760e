"""How the run screen's panes are arranged for the terminal's size.

The panes are mounted once and never rebuilt, so nothing that writes to one (the telemetry timer,
a streaming reply) can find it missing. Three arrangements:

- wide (140x40 and above): every pane, in the grid their `Cell`s describe (app.tcss draws the grid);
- split (120x30 and above): a row of tabs naming them, and two panes side by side: the focused one
  on the left and, on the right, the pane registered `beside` (the kernel, what the others speak of);
  when that one has the focus, the pane focused before it stays on the left;
- narrow: the tabs, and one pane filling the body, without its border (its tab names it).

A change only sets a few inline styles: inline styles re-lay out what they touch, where a CSS class
on the screen would restyle every widget on it (0.3-0.6 s of each resize at 250x70 on 2 cores).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.geometry import Size
from textual.widget import Widget

from cuda_llm.app.panes.registry import grid_size
from cuda_llm.app.panes.spec import AnyPane

WIDE = Size(140, 40)  # at least this many columns and rows: every pane, side by side
SPLIT = Size(120, 30)  # at least this: two panes side by side (each still ~60 columns)
BORDER_EDGES = ("border_top", "border_right", "border_bottom", "border_left")
BESIDE_WIDTH = "50%"  # the right-hand pane of the split layout


def layout_for(size: Size) -> str:
    if size.width >= WIDE.width and size.height >= WIDE.height:
        return "wide"
    if size.width >= SPLIT.width and size.height >= SPLIT.height:
        return "split"
    return "narrow"


class PaneLayout:
    """Which panes show, for the mode and the active pane; `apply` sets it on the widgets."""

    def __init__(self, panes: Sequence[AnyPane]) -> None:
        self.panes = tuple(panes)
        self.order = [p.id for p in self.panes]
        self.beside = next((p.id for p in self.panes if p.beside), None)
        self.mode = "narrow"
        self.active = self.order[0]
        # The left pane of the split layout: the last active pane other than the one beside it.
        self.left = next((p for p in self.order if p != self.beside), self.active)

    def activate(self, pane: str) -> bool:
        """Make `pane` the active one; whether the panes shown changed."""
        before = self.shown()
        self.active = pane
        if pane != self.beside:
            self.left = pane
        return self.shown() != before

    def step(self, pane: str, step: int) -> str:
        """The pane `step` places after `pane` in the keys' order (Tab, Shift+Tab)."""
        return self.order[(self.order.index(pane) + step) % len(self.order)]

    def shown(self) -> set[str]:
        if self.mode == "wide":
            return set(self.order)
        if self.mode == "split" and self.beside is not None:
            return {self.left, self.beside}
        return {self.active}

    def prepare(self, body: Widget, widgets: Mapping[str, Widget]) -> None:
        """Once, before the first layout: the grid's size and each pane's span, from the registry."""
        columns, rows = grid_size(self.panes)
        body.styles.grid_size_columns = columns
        body.styles.grid_size_rows = rows
        for p in self.panes:
            widgets[p.id].styles.column_span = p.wide.span

    def apply(self, tabs: Widget, body: Widget, widgets: Mapping[str, Widget]) -> None:
        mode = self.mode
        tabs.display = mode != "wide"
        if mode == "wide":
            body.styles.clear_rule("layout")
        else:
            body.styles.layout = "vertical"
        shown = self.shown()
        for pane_id, pane in widgets.items():
            pane.display = pane_id in shown
            # Split: the pane beside docked on the right, whatever its place among the mounted panes.
            if mode == "split" and pane_id == self.beside:
                pane.styles.dock = "right"
                pane.styles.width = BESIDE_WIDTH
            elif pane_id == self.beside:
                pane.styles.clear_rule("dock")
                pane.styles.clear_rule("width")
            for edge in BORDER_EDGES:
                if mode == "narrow":
                    setattr(pane.styles, edge, ("none", "transparent"))
                else:
                    pane.styles.clear_rule(edge)
