"""The status line: the session's state in words (the round out of the session's rounds and the
model's live token rate while it runs), what the person can do now (with the keys as bound now), and
the last error."""

from __future__ import annotations

from collections.abc import Mapping

from textual.widgets import Static

from cuda_llm.app.state import SessionView
from cuda_llm.app.widgets.text import plain, set_text
from cuda_llm.engine.judge.judgement import BASELINE_LABEL
from cuda_llm.engine.judge.metrics import BASELINE_NAME

# How often a running session's line is redrawn for its token rate (engine/fsr/progress.py averages it
# over seconds: a faster redraw would show nothing new).
RATE_REDRAW_S = 1.0

# The keys the status line names, when the screen does not say (the defaults of app/screens/run.py).
DEFAULT_KEYS = {
    "accept": "a",
    "reject": "r",
    "edit": "e",
    "pause": "p",
    "resume": "p",
    "stop": "s",
    "quit": "q",
    "settings": "m",
    "back": "esc",
}


def _activity(view: SessionView, manual_waiting: list[str], keys: Mapping[str, str]) -> list[str]:
    """What the running round is doing, each state counted once, in the words the panes use."""
    cands = list(view.candidates.values())
    retrying = sum(1 for c in cands if c.state == "waiting" and c.retrying)
    waiting = sum(1 for c in cands if c.state == "waiting" and not c.retrying)
    streaming = sum(1 for c in cands if c.state == "streaming")
    judging = sum(1 for c in cands if c.state in ("compiling", "validating", "profiling"))
    busy = []
    if manual_waiting:
        busy.append(f"{', '.join(manual_waiting)} waiting for your kernel: {keys['edit']} writes it")
    else:
        if retrying:
            busy.append(f"{retrying} waiting to retry (see the log)")
        if waiting:
            busy.append(f"{waiting} waiting for the model")
        if streaming:
            busy.append(f"{streaming} streaming")
    if judging:
        busy.append(f"{judging} being judged")
    return busy


def status_text(
    view: SessionView,
    auto_accept: bool,
    manual_waiting: list[str],
    keys: Mapping[str, str] | None = None,
    now: float | None = None,
) -> tuple[str, str]:
    """(text, state class) for the status line; `now` on the monotonic clock (None: now), for the rate."""
    k = {**DEFAULT_KEYS, **(keys or {})}
    best = view.best_source()
    best_part = ""
    if best is not None and best.timing is not None:
        over = best.figures.baseline_name if best.figures else BASELINE_NAME
        # Short: '(2.50x)' over a task's own baseline, '(2.50x eager)' over an imported module's.
        named = "" if over == BASELINE_NAME else f" {over}"
        speed = f" ({best.figures.speedup:.2f}x{named})" if best.figures and best.figures.speedup else ""
        if best.label == BASELINE_LABEL:
            best_part = f" · best: {over}, {best.timing.median_us:.1f} us"
        else:
            best_part = f" · best {best.label} {best.timing.median_us:.1f} us{speed}"
    elif best is not None:
        best_part = " · best: the baseline" if best.label == BASELINE_LABEL else f" · best {best.label}"
    auto = " · auto-accept on" if auto_accept else ""
    state = view.state
    if view.stopping and view.running:
        # Pressed again, the key that asked (stop, or quit) forces it.
        doing, again = ("quitting", k["quit"]) if view.quitting else ("stopping", k["stop"])
        return f"■ {doing}: requests in flight are cancelled, what is recorded stays · {again} again: at once", "paused"

    if state == "opening":
        return "opening the session: compiling the baseline, starting the GPU worker…", "opening"
    if state == "awaiting" and view.awaiting is not None:
        j = view.awaiting.judgement
        faster = ""
        if view.awaiting.best_median_us and j.timing is not None and j.timing.median_us:
            faster = f" is {view.awaiting.best_median_us / j.timing.median_us:.2f}x faster than the best"
        return (
            f"◆ {j.label}{faster}: {k['accept']} accept · {k['reject']} reject (with a reason) · "
            f"{k['edit']} edit it{auto}",
            "awaiting",
        )
    if state == "paused":
        return (
            f"‖ paused: {view.state_reason} · {k['resume']} goes on · {k['settings']} changes the model"
            + best_part
            + auto,
            "paused",
        )
    if state in ("finished", "stopped"):
        nothing_timed = (
            " · compile-only: nothing was timed, so no winner could be chosen and no decision asked"
            if view.compile_only
            else ""
        )
        return f"■ {state}: {view.state_reason}{best_part}{nothing_timed} · {k['back']}: back", "ended"
    if state == "failed":
        return f"✗ failed: {view.error} · {k['back']}: back to the start screen", "failed"
    what = view.progress(now)  # "round 3/10, 41 tok/s": the headless run's lines say the same
    busy = _activity(view, manual_waiting, k)
    return f"● running {what}" + "".join(f" · {b}" for b in busy) + best_part + auto, "running"


class StatusLine(Static):
    _shown_with: tuple[SessionView, bool, list[str], Mapping[str, str] | None] | None = None
    _own: str | None = None  # the markup this line last drew itself

    def on_mount(self) -> None:
        self.set_interval(RATE_REDRAW_S, self._redraw_running)

    def _redraw_running(self) -> None:
        """While the session runs, the token rate changes with no engine event to redraw the line."""
        if self._shown_with is None or self._shown_with[0].state != "running":
            return
        if getattr(self, "_cuda_llm_shown", None) != self._own:
            return  # the screen has written over the line (a pause request): that stands until its next show()
        self.show(*self._shown_with)

    def show(
        self,
        view: SessionView,
        auto_accept: bool,
        manual_waiting: list[str],
        keys: Mapping[str, str] | None = None,
    ) -> None:
        self._shown_with = (view, auto_accept, manual_waiting, keys)
        text, state = status_text(view, auto_accept, manual_waiting, keys)
        for cls in ("opening", "awaiting", "paused", "ended", "failed", "running"):
            self.set_class(cls == state, f"-{cls}")
        out = plain(text)
        # The last error, unless the state's own words already give it (a pause for it).
        said = view.error and (view.error in text or view.error.partition(": ")[2] in text)
        if view.error and state != "failed" and not said:
            out.append_text(plain(f"\n✗ {view.error}", style="bold"))
        set_text(self, out)
        self._own = getattr(self, "_cuda_llm_shown", None)


__all__ = ["StatusLine", "status_text"]
