"""The kernel pane: the focused candidate's CUDA source (highlighted), its launch plan, a diff
against its parent (the kernel it was written from) and one against the current best."""

from __future__ import annotations

import difflib
import json
import re
from typing import ClassVar, Unpack

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane, Tabs, TextArea

from cuda_llm.app.state import CandidateView, SessionView
from cuda_llm.app.terminal import terminal_safe
from cuda_llm.app.widgets.cuda import load_source, use_cuda
from cuda_llm.app.widgets.options import WidgetOptions
from cuda_llm.app.widgets.text import set_text
from cuda_llm.engine.judge.judgement import Judgement
from cuda_llm.engine.task.plan import LaunchPlan

_CUDA_BLOCK = re.compile(r"```(?:cuda|cu|c\+\+|cpp)?[ \t]*\n(.*?)(?:```|\Z)", re.S)
_JSON_BLOCK = re.compile(r"```json[ \t]*\n(.*?)(?:```|\Z)", re.S)


def source_of(c: CandidateView | None, fallback: Judgement | None = None) -> tuple[str, str]:
    """(source, plan JSON) of a candidate: parsed when judged, else the code blocks of its reply."""
    if c is not None and c.candidate is not None:
        cand = c.candidate
        return cand.source, plan_json(cand.plan)
    if c is not None and c.reply:
        code = _CUDA_BLOCK.search(c.reply)
        plan = _JSON_BLOCK.search(c.reply)
        return (code.group(1).rstrip() if code else ""), (plan.group(1).strip() if plan else "")
    if c is None and fallback is not None and fallback.candidate is not None:
        return fallback.candidate.source, plan_json(fallback.candidate.plan)
    return "", ""


def plan_json(plan: LaunchPlan) -> str:
    return json.dumps(plan.to_json(), indent=2)


def launch_lines(plan: LaunchPlan) -> list[str]:
    """`kernel<<<grid, block, shared>>>(args)`: the plan as a CUDA programmer reads it."""
    out = []
    for la in plan.launches:
        grid, block = ", ".join(la.grid), ", ".join(la.block)
        shared = f", {la.shared_bytes}" if la.shared_bytes not in ("0", "") else ""
        out.append(f"{la.kernel}<<<({grid}), ({block}){shared}>>>({', '.join(a.text for a in la.args)})")
    for s in plan.scratch:
        out.append(f"scratch {s.name}: {s.dtype}[{s.count}] (zero-filled)")
    return out


# The pane's views, in the order `v` steps through them.
VIEWS = ("kernel-source-tab", "kernel-plan-tab", "kernel-parent-tab", "kernel-diff-tab")


class ViewTabs(TabbedContent):
    """The kernel's views. A focus that lands in a view shows it only while that view still holds
    the focus: with `2v` typed in one burst, the focus given to the source by `2` lands after `v`
    has moved it to the plan, and would otherwise bring the source back."""

    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        focused = self.screen.focused
        if focused is not None and event.tab_pane not in focused.ancestors_with_self:
            event.stop()
            event.prevent_default()  # Textual calls each class's handler: TabbedContent's would switch


class KernelPane(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "next_view", "Source/plan/diffs", show=False, id="kernel.view"),
    ]

    def __init__(self, view: SessionView, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.border_title = "2 kernel"
        self._shown: tuple[str, str, str] | None = None
        self._best_shown: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="kernel-title", classes="pane-title")
        with ViewTabs(id="kernel-tabs"):
            with TabPane("source", id="kernel-source-tab"):
                yield TextArea.code_editor("", read_only=True, id="kernel-source", soft_wrap=False)
            with TabPane("plan", id="kernel-plan-tab"):
                yield Static(id="kernel-launches")
                yield TextArea.code_editor("", language=None, read_only=True, id="kernel-plan")
            with TabPane("diff vs parent", id="kernel-parent-tab"), VerticalScroll(id="kernel-parent-scroll"):
                yield Static(id="kernel-parent-diff")
            with TabPane("diff vs best", id="kernel-diff-tab"), VerticalScroll(id="kernel-diff-scroll"):
                yield Static(id="kernel-diff")

    def on_mount(self) -> None:
        source = self.query_one("#kernel-source", TextArea)
        use_cuda(source)
        for area in self.query(TextArea):
            area.tab_behavior = "focus"  # read-only: Tab moves on to the next pane
        # The tabs are switched with `v` (or a click): Tab and the digits move between panes.
        self.query_one("#kernel-tabs", TabbedContent).query_one(Tabs).can_focus = False
        self.apply_theme()
        self.show()

    def focus_target(self) -> Widget | None:
        """The widget of the view shown: the source or plan text, or a diff."""
        active = self.query_one("#kernel-tabs", TabbedContent).active
        targets = {
            "kernel-source-tab": "#kernel-source",
            "kernel-plan-tab": "#kernel-plan",
            "kernel-parent-tab": "#kernel-parent-scroll",
            "kernel-diff-tab": "#kernel-diff-scroll",
        }
        return self.query_one(targets.get(active, "#kernel-source"))

    def toggle_wrap(self) -> bool:
        """Long source lines wrapped (off by default: code reads by its columns)."""
        area = self.query_one("#kernel-source", TextArea)
        area.soft_wrap = not area.soft_wrap
        return area.soft_wrap

    def action_next_view(self) -> None:
        tabs = self.query_one("#kernel-tabs", TabbedContent)
        current = VIEWS.index(tabs.active) if tabs.active in VIEWS else -1
        tabs.active = VIEWS[(current + 1) % len(VIEWS)]
        # Focused at once: a focus still on its way to the view left (the pane's key typed in the
        # same burst, `2v`) would otherwise bring that view back when it lands.
        target = self.focus_target()
        if target is not None and target.focusable:
            self.screen.set_focus(target)
        else:
            self.call_after_refresh(lambda: (target := self.focus_target()) is not None and target.focus())

    def apply_theme(self) -> None:
        from cuda_llm.themes import CODE_THEMES, code_theme_for

        theme = self.app.current_theme
        for area in self.query(TextArea):
            for t in CODE_THEMES:
                area.register_theme(t)
            area.theme = code_theme_for(theme.name, theme.dark)
        self._shown = None
        if self.is_mounted:
            self.show()

    def show(self) -> None:
        view = self.view
        c = view.focused()
        best = view.best_source()
        source, plan = source_of(c, best)
        label = c.label if c else (best.label if best else "")
        best_label = best.label if best else ""
        title = self._title(c, label, best_label)
        set_text(self.query_one("#kernel-title", Static), title)
        if self._shown == (label, source, plan) and best_label == self._best_shown:
            return
        self._shown, self._best_shown = (label, source, plan), best_label
        area = self.query_one("#kernel-source", TextArea)
        shown_source = terminal_safe(source)
        if area.text != shown_source:
            load_source(area, shown_source)
        self.query_one("#kernel-plan", TextArea).load_text(terminal_safe(plan))
        launches = ""
        if c is not None and c.candidate is not None:
            launches = "\n".join(launch_lines(c.candidate.plan))
        elif c is None and best is not None and best.candidate is not None:
            launches = "\n".join(launch_lines(best.candidate.plan))
        set_text(self.query_one("#kernel-launches", Static), launches)
        best_src = best.candidate.source if best is not None and best.candidate is not None else ""
        set_text(self.query_one("#kernel-diff", Static), self._diff(best_label, best_src, label, source))
        parent_label = view.parent_of(label) if c is not None else None
        parent = view.judgement_of(parent_label)
        parent_src = parent.candidate.source if parent is not None and parent.candidate is not None else ""
        set_text(
            self.query_one("#kernel-parent-diff", Static),
            self._diff(parent_label or "", parent_src, label, source, "parent")
            if parent_src
            else Text(f"{label or 'this kernel'} has no parent on record"),
        )

    def _title(self, c: CandidateView | None, label: str, best_label: str) -> str:
        if c is None:
            return f"{label} (the current best)" if label else "no kernel yet"
        state = self.view.word(c.state)
        timing = f", {c.median_us:.1f} us" if c.median_us is not None else ""
        best = " ★ best" if label == best_label else ""
        return f"{label}: {state}{timing}{best}"

    def _diff(self, best_label: str, best_src: str, label: str, source: str, what: str = "best") -> Text:
        if not source:
            return Text("no source yet")
        if not best_src or label == best_label:
            return Text(f"{label} is the current {what}: nothing to compare")
        colors = self.app.theme_variables
        styles = {
            "+": colors.get("status-correct", "green"),
            "-": colors.get("status-wrong", "red"),
            "@": colors.get("status-compiled", "cyan"),
        }
        out = Text()
        diff = difflib.unified_diff(
            best_src.splitlines(), source.splitlines(), f"{what} {best_label}", label, lineterm="", n=2
        )
        any_line = False
        for line in diff:
            any_line = True
            style = styles.get(line[:1], "") if not line.startswith(("+++", "---")) else "bold"
            out.append(terminal_safe(line) + "\n", style=style)
        return out if any_line else Text(f"{label} has the same source as the {what} ({best_label})")

    def jump_to(self, line: int, column: int) -> None:
        """Show source line `line` (1-based) with the cursor on `column`."""
        self.query_one("#kernel-tabs", TabbedContent).active = "kernel-source-tab"
        area = self.query_one("#kernel-source", TextArea)
        row = max(0, min(line - 1, area.document.line_count - 1))
        col = max(0, column - 1)
        area.move_cursor((row, col))
        area.focus()
        # Scrolled once the pane is laid out: below 140x40 it was hidden until now, and a cursor
        # brought into view by a pane of no width scrolled the line's first columns away.
        self.call_after_refresh(self._show_line, area, row, col)

    @staticmethod
    def _show_line(area: TextArea, row: int, col: int) -> None:
        """The line in the middle of the pane, from its first column unless the cursor lies beyond
        the pane's width."""
        width, height = area.scrollable_content_region.size
        gutter = area.gutter_width
        x = 0 if col + gutter < width - 1 else col + gutter - width // 2
        area.scroll_to(x=x, y=max(0, row - height // 2), animate=False, immediate=True)
