"""The status line: the session's state in words, what the person can do now, and the last error."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.text import set_text


def status_text(view: SessionView, auto_accept: bool, manual_waiting: list[str]) -> tuple[str, str]:
    """(text, state class) for the status line."""
    best = view.best_source()
    best_part = ""
    if best is not None and best.timing is not None:
        speed = f" ({best.figures.speedup:.2f}x)" if best.figures and best.figures.speedup else ""
        best_part = f" · best {best.label} {best.timing.median_us:.1f} us{speed}"
    elif best is not None:
        best_part = f" · best {best.label}"
    auto = " · auto-accept on" if auto_accept else ""
    state = view.state
    if state == "opening":
        return "opening the session: compiling the baseline, starting the GPU worker…", "opening"
    if state == "awaiting" and view.awaiting is not None:
        j = view.awaiting.judgement
        faster = ""
        if view.awaiting.best_median_us and j.timing is not None and j.timing.median_us:
            faster = f" is {view.awaiting.best_median_us / j.timing.median_us:.2f}x faster than the best"
        return f"◆ {j.label}{faster}: F2 accept · F3 reject (with a reason) · F4 edit it{auto}", "awaiting"
    if state == "paused":
        return f"‖ paused: {view.state_reason} · F5 resumes{best_part}", "paused"
    if state in ("finished", "stopped"):
        return f"■ {state}: {view.state_reason}{best_part} · Esc: back to the start screen", "ended"
    if state == "failed":
        return f"✗ failed: {view.error} · Esc: back to the start screen", "failed"
    streaming = sum(1 for c in view.candidates.values() if c.state in ("waiting", "streaming"))
    judging = sum(1 for c in view.candidates.values() if c.state in ("compiling", "validating", "profiling"))
    what = f"round {view.round}" + (f", repair {view.attempt}" if view.attempt else "")
    busy = []
    if manual_waiting:
        busy.append(f"{', '.join(manual_waiting)} waiting for your kernel: F4 writes it")
    elif streaming:
        busy.append(f"{streaming} streaming")
    if judging:
        busy.append(f"{judging} being judged")
    return f"● running {what}" + "".join(f" · {b}" for b in busy) + best_part + auto, "running"


class StatusLine(Static):
    def show(self, view: SessionView, auto_accept: bool, manual_waiting: list[str]) -> None:
        text, state = status_text(view, auto_accept, manual_waiting)
        for cls in ("opening", "awaiting", "paused", "ended", "failed", "running"):
            self.set_class(cls == state, f"-{cls}")
        out = Text(text)
        if view.error and state != "failed":
            out.append(f"\n✗ {view.error}", style="bold")
        set_text(self, out)
