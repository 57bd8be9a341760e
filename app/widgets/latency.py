"""The latency pane: every timed candidate's median by round, the best-so-far line, the baseline and
the roofline floor, with the best's speedup and roofline share."""

from __future__ import annotations

from typing import ClassVar, Unpack

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static
from textual_plot import HiResMode, PlotWidget

from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.options import WidgetOptions
from cuda_llm.app.widgets.text import set_text
from cuda_llm.engine.judge.judgement import BASELINE_LABEL
from cuda_llm.engine.judge.metrics import PHYSICAL_NAME, ROOFLINE_NAME, speedup_text


def figures_text(view: SessionView) -> str:
    """The best, then the two yardsticks, a line each: the baseline and the vendor library."""
    best = view.best_source()
    base = view.baseline_us
    if view.compile_only:
        n = sum(1 for c in view.candidates.values() if c.state == "compiled")
        failed = sum(1 for c in view.candidates.values() if c.judgement is not None and c.judgement.failed)
        return (
            f"{view.device or 'compile-only'}: nothing is timed without a GPU. "
            f"{n} compiled, {failed} failed so far (round {view.round})\n" + library_text(view, None)
        )
    if best is None or best.timing is None:
        lines = ["no timings yet"]
        if base is not None:
            lines.append(f"baseline {base:.1f} us")
        return "\n".join([*lines, library_text(view, None)])
    fig = best.figures
    is_base = best.label == BASELINE_LABEL
    parts = [
        f"best: {fig.baseline_name if fig else 'the baseline'}, {best.timing.median_us:.1f} us"
        if is_base
        else f"best {best.label}: {best.timing.median_us:.1f} us"
    ]
    if fig is not None:
        if (speed := speedup_text(fig)) is not None and not is_base:
            parts.append(speed)
        if fig.floor_us:
            parts.append(
                f"{fig.roofline_pct:.0f}% of {ROOFLINE_NAME} ({fig.bound}-bound, floor {fig.floor_us:.1f} us), "
                f"{fig.physical_pct:.0f}% of {PHYSICAL_NAME}"
            )
        parts.append(f"{fig.gbps:.0f} GB/s")
        if fig.suspect:
            parts.append("SUSPECT: faster than the physical limit")
    lines = [" · ".join(parts)]
    if best.counters is not None and best.counters.ok:  # why there are none is the validation pane's
        lines.append(best.counters.line())
    if base is not None and not is_base:
        lines.append(f"baseline {base:.1f} us")
    lines.append(library_text(view, best.timing.median_us))
    return "\n".join(lines)


def library_text(view: SessionView, best_us: float | None) -> str:
    """The vendor library's line, like the baseline's; when there is no figure, why not."""
    lib = view.library
    if lib is None:
        if view.compile_only:
            return "library: not timed (compile-only: no GPU to time it on)"
        if view.state == "opening" or view.baseline is None:
            return "library: timed with the baseline when the session starts"
        return "library: no figure (this session did not time it)"
    if lib.timing is None:
        what = f"library ({lib.name})" if lib.name else "library"
        return f"{what}: no figure: {lib.note or 'not timed'}"
    ratio = lib.of_library(best_us) if best_us else None
    versus = f" · the best is {ratio:.2f}x its speed" if ratio else ""
    return f"library {lib.name}: {lib.timing.median_us:.1f} us{versus}"


class LatencyPlot(PlotWidget, inherit_bindings=False):
    """The plot, with its zoom and pan keys out of the footer, and `0` (not `r`: that rejects)
    resetting the scales."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("plus", "zoom_in", "Zoom in", show=False),
        Binding("minus", "zoom_out", "Zoom out", show=False),
        Binding("left", "pan_left", "Pan left", show=False),
        Binding("right", "pan_right", "Pan right", show=False),
        Binding("up", "pan_up", "Pan up", show=False),
        Binding("down", "pan_down", "Pan down", show=False),
        Binding("0", "reset_scales", "Reset the plot", show=False),
    ]


class LatencyPane(Vertical, can_focus=True):
    def __init__(self, view: SessionView, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.border_title = "5 latency"
        self._drawn: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="latency-figures", classes="pane-title")
        yield Static(id="latency-legend")
        yield LatencyPlot(id="latency-plot", allow_pan_and_zoom=True)

    def on_mount(self) -> None:
        plot = self.query_one(PlotWidget)
        plot.margin_left = 7
        plot.margin_bottom = 2
        plot.margin_top = 0
        plot.set_xlabel("round")
        self.show()

    def focus_target(self) -> Widget:
        plot = self.query_one(LatencyPlot)
        return plot if plot.display else self

    def apply_theme(self) -> None:
        self._drawn = None
        self.show()

    def show(self) -> None:
        view = self.view
        set_text(self.query_one("#latency-figures", Static), figures_text(view))
        colors = self.app.theme_variables
        c_cand = colors.get("plot-candidate", "white")
        c_best = colors.get("plot-best", "green")
        c_base = colors.get("plot-baseline", "yellow")
        c_floor = colors.get("plot-floor", "cyan")
        c_library = colors.get("plot-library", colors.get("plot-floor", "magenta"))
        legend = Text()
        for mark, name, color in (("•", "candidates", c_cand), ("━", "best so far", c_best)):
            legend.append(f"{mark} {name}  ", style=color)
        legend.append("━ baseline  ", style=c_base)
        if view.library is not None and view.library.timing is not None:
            legend.append("┄ library  ", style=c_library)
        legend.append("━ roofline floor", style=c_floor)
        set_text(self.query_one("#latency-legend", Static), legend)
        # Without a GPU nothing is timed: an empty plot would only look broken.
        self.query_one(PlotWidget).display = not view.compile_only
        self.query_one("#latency-legend", Static).display = not view.compile_only
        library_us = view.library.median_us if view.library is not None else None
        key = (
            tuple(view.latency),
            tuple(view.best_by_round),
            view.baseline_us,
            view.floor_us,
            library_us,
            c_cand,
            c_best,
        )
        if key == self._drawn:
            return
        self._drawn = key
        plot = self.query_one(PlotWidget)
        plot.clear()
        base, floor = view.baseline_us, view.floor_us
        last = max([p.round for p in view.latency] + [r for r, _ in view.best_by_round] + [1])
        xs = [0.0, float(last)]
        if base is not None:
            plot.plot(xs, [base, base], line_style=c_base, hires_mode=HiResMode.BRAILLE, label="baseline")
        if floor is not None:
            plot.plot(xs, [floor, floor], line_style=c_floor, hires_mode=HiResMode.BRAILLE, label="roofline floor")
        if library_us is not None:
            plot.plot(xs, [library_us, library_us], line_style=c_library, hires_mode=HiResMode.BRAILLE, label="library")
        if view.best_by_round or base is not None:
            steps_x: list[float] = []
            steps_y: list[float] = []
            current = base
            points = sorted(view.best_by_round)
            if current is not None:
                steps_x.append(0.0)
                steps_y.append(current)
            for r, us in points:
                if current is not None:
                    steps_x.append(float(r))
                    steps_y.append(current)
                steps_x.append(float(r))
                steps_y.append(us)
                current = us
            if len(steps_x) > 1:
                plot.plot(steps_x, steps_y, line_style=c_best, hires_mode=HiResMode.BRAILLE, label="best")
        ys = [p.median_us for p in view.latency] + [us for _, us in view.best_by_round]
        ys += [y for y in (base, floor, library_us) if y is not None]
        # Fixed limits with a margin: points on the plot's edge are clipped, and 0 keeps the floor
        # line in view next to the baseline.
        plot.set_xlimits(-0.3, last + 0.3)
        plot.set_xticks(list(range(0, last + 1)))
        plot.set_ylimits(0.0, max(ys) * 1.15 if ys else 1.0)
        if view.latency:
            plot.scatter(
                [float(p.round) for p in view.latency],
                [p.median_us for p in view.latency],
                marker="•",
                marker_style=c_cand,
                label="candidates",
            )
