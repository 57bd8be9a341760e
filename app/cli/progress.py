"""The headless run's view of the loop: one line per event worth a line, plus a live status line
for streaming tokens when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from cuda_llm.app.cli.output import split_message
from cuda_llm.engine.core.status import TIMED
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.progress import TokenRate, progress_text
from cuda_llm.engine.judge.judgement import Judgement, phases_text
from cuda_llm.engine.judge.metrics import PHYSICAL_NAME, share_text, speedups_text


def judgement_line(j: Judgement) -> str:
    """A candidate in one line: a timed one's figures whole, anything else by the short head `eval`'s
    verdict line shows (a reply with no code blocks explains itself in ~400 characters; the whole text
    is in the session's --json report)."""
    if j.status in TIMED:
        return f"{j.label}: {j.message}"
    return f"{j.label}: {split_message(j.message)[0]}"


def counters_line(j: Judgement) -> str:
    """'counters of r2-1: what limits it: ...', or the one line saying why there are none (the session
    then goes on without them)."""
    report = j.counters
    if report is None:
        return f"counters of {j.label}: not read"
    if report.unavailable is not None:
        return f"{report.line()}; the session goes on without them"
    return f"counters of {j.label} ({report.elapsed_s:.1f} s): {report.line()}"


class ProgressPrinter:
    """Subscribes to an EventBus. Lines go to `out`; the live token counter only to a terminal."""

    def __init__(
        self, out: TextIO | None = None, live: bool | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.out = out or sys.stderr
        self.live = self.out.isatty() if live is None else live
        self.clock = clock  # monotonic seconds, for the token rate
        self._tokens: dict[str, int] = {}
        self._status_shown = False
        self._rate = TokenRate()
        self._round = 0
        self._attempt = 0
        self._rounds: int | None = None  # the session's D: from its settings, then as each round began

    def _line(self, text: str) -> None:
        if self._status_shown:
            self.out.write("\r\033[K")
            self._status_shown = False
        self.out.write(text + "\n")
        self.out.flush()

    def _status(self) -> None:
        if not self.live or not self._tokens:
            return
        parts = [f"{label} {n}" for label, n in self._tokens.items()]
        self.out.write(f"\r\033[K  {self.progress()} · streaming: " + "  ".join(parts) + " tokens")
        self.out.flush()
        self._status_shown = True

    def progress(self) -> str:
        """'round 3/10, 41 tok/s': what the TUI's status line says (engine/fsr/progress.py)."""
        rate = self._rate.per_s(self.clock()) if self._tokens else None
        return progress_text(self._round, self._rounds, self._attempt, rate)

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.SessionStarted):
            verb = "resumed" if event.resumed else "started"
            s = event.settings
            self._rounds = s.rounds
            self._line(
                f"session {event.session_id} {verb}: {event.task} with {event.model}{_at(event.server)} "
                f"on {event.device} (N={s.candidates}, D={s.rounds}, R={s.repairs})"
            )
        elif isinstance(event, ev.RoundStarted):
            self._round, self._attempt = event.round, event.attempt
            self._rounds = event.rounds or self._rounds
            what = "asking again" if event.attempt else "asking"  # progress_text names the repair
            self._line(
                f"{progress_text(event.round, self._rounds, event.attempt)}: {what} for {event.candidates} candidates"
            )
        elif isinstance(event, ev.TokensStreamed):
            self._rate.add(self.clock())
            self._tokens[event.label] = self._tokens.get(event.label, 0) + 1
            self._status()
        elif isinstance(event, ev.RequestRetrying):
            self._tokens.pop(event.label, None)
            self._line(f"  {event.label}: {event.message}; retrying in {event.delay_s:.0f} s")
        elif isinstance(event, ev.ReplyReceived):
            self._tokens.pop(event.label, None)
            c = event.completion
            tokens = f"{c.completion_tokens} tokens" if c.completion_tokens else f"{len(c.text)} chars"
            self._line(f"  {event.label}: reply received ({tokens}, {c.elapsed_s:.1f} s)")
        elif isinstance(event, ev.ModelFailed):
            self._tokens.pop(event.label, None)
            self._line(f"  {event.label}: model error: {event.message}")
        elif isinstance(event, ev.CandidateJudged):
            j = event.judgement
            self._line(f"  {judgement_line(j)}")
            for w in j.warnings:
                self._line(f"    note: {w}")
            if phases := j.phases():
                self._line(f"    took: {phases_text(phases)}")
        elif isinstance(event, ev.RoundProfiled):
            t = event.timing
            if t.baseline is not None:
                took = sum(sum(p.values()) for p in t.profile_phases_s)
                spent = f" (timing took {took:.1f} s)" if took else ""
                self._line(f"  timed on {t.device}: baseline {t.baseline.median_us:.1f} us{spent}")
        elif isinstance(event, ev.CountersRead):
            self._line(f"  {counters_line(event.judgement)}")
        elif isinstance(event, ev.AwaitingDecision):
            self._line(f"  waiting for a decision on {event.judgement.label}")
        elif isinstance(event, ev.DecisionMade):
            self._line(f"  {event.label}: {event.decision}" + (f" ({event.reason})" if event.reason else ""))
        elif isinstance(event, ev.BestImproved):
            self._line(f"  new best: {judgement_line(event.judgement)}")
        elif isinstance(event, ev.RoundFinished):
            best = f"{event.best_label}" + (f" {event.best_median_us:.1f} us" if event.best_median_us else "")
            # An event recorded before the text was carried names no baseline: the default's words.
            text = event.best_speedup_text or (speedups_text(event.best_speedup) if event.best_speedup else None)
            speed = f", {text}" if text else ""
            roof = f", {share_text(event.best_roofline_share * 100)}" if event.best_roofline_share else ""
            if event.best_roofline_share and event.best_physical_share:
                roof += f" ({share_text(event.best_physical_share * 100, PHYSICAL_NAME)})"
            self._line(f"round {event.round} done: best {best}{speed}{roof}; {event.tokens_used} tokens so far")
        elif isinstance(event, ev.SessionPaused):
            self._line(f"paused: {event.reason}")
        elif isinstance(event, ev.SessionResumed):
            self._line("resumed")
        elif isinstance(event, ev.Notice):
            self._line(("warning: " if event.level == "warning" else "") + event.message)
        elif isinstance(event, ev.Failed):
            self._line(f"failed: {event.message}")
        elif isinstance(event, ev.SessionFinished):
            best = judgement_line(event.best) if event.best else "none"
            self._line(f"finished ({event.reason}); best {best}")


def _at(server: str | None) -> str:
    """Where the prompts go, in the session's first line (a resumed session's recorded server included)."""
    return f" at {server}" if server else ""
