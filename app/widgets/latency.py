"""The latency pane: every timed candidate's median by round, the best-so-far line, the baseline and
the roofline floor, with the best's speedup and roofline share."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual_plot import HiResMode, PlotWidget

from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.text import set_text


def figures_text(view: SessionView) -> str:
    best = view.best_source()
    base = view.baseline_us
    if view.compile_only:
        n = sum(1 for c in view.candidates.values() if c.state == "compiled")
        failed = sum(1 for c in view.candidates.values() if c.judgement is not None and c.judgement.failed)
        return (
            f"{view.device or 'compile-only'}: nothing is timed without a GPU. "
            f"{n} compiled, {failed} failed so far (round {view.round})"
        )
    if best is None or best.timing is None:
        return "no timings yet" + (f" (baseline {base:.1f} us)" if base else "")
    fig = best.figures
    is_base = best.label == "baseline"
    parts = [
        f"best: the baseline, {best.timing.median_us:.1f} us"
        if is_base
        else f"best {best.label}: {best.timing.median_us:.1f} us"
    ]
    if fig is not None:
        if fig.speedup is not None and not is_base:
            parts.append(f"{fig.speedup:.2f}x the baseline")
        if fig.floor_us:
            parts.append(f"{fig.roofline_pct:.0f}% of the roofline ({fig.bound}-bound, floor {fig.floor_us:.1f} us)")
        parts.append(f"{fig.gbps:.0f} GB/s")
        if fig.suspect:
            parts.append("SUSPECT: faster than the roofline")
    if base is not None and not is_base:
        parts.append(f"baseline {base:.1f} us")
    return " · ".join(parts)


class LatencyPane(Vertical):
    def __init__(self, view: SessionView, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.border_title = "latency"
        self._drawn: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="latency-figures", classes="pane-title")
        yield Static(id="latency-legend")
        yield PlotWidget(id="latency-plot", allow_pan_and_zoom=True)

    def on_mount(self) -> None:
        plot = self.query_one(PlotWidget)
        plot.margin_left = 7
        plot.margin_bottom = 2
        plot.margin_top = 0
        plot.set_xlabel("round")
        self.show()

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
        legend = Text()
        for mark, name, color in (("•", "candidates", c_cand), ("━", "best so far", c_best)):
            legend.append(f"{mark} {name}  ", style=color)
        legend.append("━ baseline  ", style=c_base)
        legend.append("━ roofline floor", style=c_floor)
        set_text(self.query_one("#latency-legend", Static), legend)
        # Without a GPU nothing is timed: an empty plot would only look broken.
        self.query_one(PlotWidget).display = not view.compile_only
        self.query_one("#latency-legend", Static).display = not view.compile_only
        key = (
            tuple(view.latency),
            tuple(view.best_by_round),
            view.baseline_us,
            view.floor_us,
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
        ys += [y for y in (base, floor) if y is not None]
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
