"""What the run screen shows, built from the engine's events: plain Python, no Textual.

`SessionView.apply(event)` folds one engine event into the view and says which panes must redraw.
The panes read the view; they never hold session state of their own, so a pane can be rebuilt at
any time (the layout switches between tabs and a grid when the terminal is resized) and the view
can be tested without a terminal. This is presentation, not engine logic: nothing here decides
anything about the loop.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.core.status import STATUSES, Stage, Status
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.fsr.progress import TokenRate, progress_text
from cuda_llm.engine.gpu.protocol import Timing
from cuda_llm.engine.judge.judgement import BASELINE_LABEL, Candidate, Judgement, LibraryResult
from cuda_llm.engine.llm.base import Completion, Message, RequestKey

# Candidate phases before a final status; then the judgement's status names the state. "judged": the
# status says it. A phase shares no name with a status, so the state the tree shows is either.
Phase = Literal["waiting", "streaming", "compiling", "validating", "profiling", "no reply", "judged"]
PHASES: tuple[Phase, ...] = get_args(Phase)
assert not set(PHASES) & set(STATUSES), "a phase named as a status"

# One mark per state, each one terminal cell wide (no emoji: they are two cells in many terminals):
# the phases' and the best's here, a status's from its table (engine/core/status.py).
MARKS = {
    "waiting": "…",
    "streaming": "↓",
    "compiling": "◌",
    "validating": "◌",
    "profiling": "◔",
    "no reply": "-",
    **{status: info.mark for status, info in STATUSES.items()},
    "best": "★",
}
WORDS = {**{status: info.word for status, info in STATUSES.items()}, "no reply": "no reply"}

# Panes, as the flags apply() returns.
TREE, PROMPT, KERNEL, COMPILER, VALIDATION, LATENCY, STATUS, LOG = (
    "tree",
    "prompt",
    "kernel",
    "compiler",
    "validation",
    "latency",
    "status",
    "log",
)
FOCUSED = frozenset({PROMPT, KERNEL, COMPILER, VALIDATION})


@dataclass
class CandidateView:
    label: str
    round: int
    attempt: int = 0
    slot: int = 0
    phase: Phase = "waiting"
    reply: str = ""  # streamed so far (the whole reply once received)
    judgement: Judgement | None = None
    # Compiled and on the GPU, before its verdict (ValidationStarted): what the kernel and compiler
    # panes show meanwhile; the judgement carries both once it comes.
    sent: ev.ValidationStarted | None = None
    decision: str | None = None  # accepted | rejected | auto-accepted
    reason: str = ""
    error: str = ""  # the model error when no reply came
    retrying: bool = False  # the request failed and waits to be asked again (no new text yet)

    @property
    def key(self) -> RequestKey:
        return RequestKey(self.round, self.attempt, self.slot)

    @property
    def state(self) -> Phase | Status:
        """The state the tree shows: a phase, or the judgement's status."""
        if self.judgement is not None and self.phase not in ("compiling", "validating", "profiling"):
            return self.judgement.status
        return self.phase

    @property
    def candidate(self) -> Candidate | None:
        """The parsed candidate: its judgement's, or the one on the GPU being validated."""
        if self.judgement is not None and self.judgement.candidate is not None:
            return self.judgement.candidate
        return self.sent.candidate if self.sent is not None else None

    @property
    def median_us(self) -> float | None:
        j = self.judgement
        return j.timing.median_us if j is not None and j.timing is not None else None


@dataclass(frozen=True)
class LatencyPoint:
    round: int
    label: str
    median_us: float


@dataclass
class SessionView:
    session_id: int | None = None
    task: str = ""
    model: str = ""
    device: str = ""  # the label to show (engine/gpu/protocol.py device_label)
    compile_only: bool = False  # no GPU: nothing is timed (SessionStarted.compile_only)
    settings: LoopSettings | None = None
    notice: str | None = None
    manual: bool = False
    state: str = "opening"  # opening | running | paused | awaiting | finished | stopped | failed
    state_reason: str = ""
    error: str = ""  # the last thing that went wrong, shown in red until the next one
    round: int = 0
    attempt: int = 0
    session_rounds: int | None = None  # the session's D: from its settings, then as each round began
    token_rate: TokenRate = field(default_factory=TokenRate)  # the model's streamed tokens, all requests
    prompts: dict[tuple[int, int], tuple[Message, ...]] = field(default_factory=dict)
    candidates: dict[str, CandidateView] = field(default_factory=dict)
    baseline: Judgement | None = None
    best_label: str = BASELINE_LABEL
    best: Judgement | None = None
    awaiting: ev.AwaitingDecision | None = None
    # The winner still awaiting a decision when the session ended (stopped): a resume offers it again.
    undecided: str | None = None
    latency: list[LatencyPoint] = field(default_factory=list)
    best_by_round: list[tuple[int, float]] = field(default_factory=list)
    tokens_used: int = 0
    focus: str | None = None  # the candidate the prompt, kernel, compiler and validation panes show
    follow: bool = True  # move the focus to whatever happens next
    log: list[str] = field(default_factory=list)  # the event log, oldest first
    library: LibraryResult | None = None  # the vendor library's figure on this GPU, once timed
    stopping: bool = False  # the person asked to stop (or quit); the session has not ended yet
    quitting: bool = False  # the stop was asked for by quit: the app leaves once the session has ended
    # The best when each round's first request went out: what that round's candidates set out to
    # improve (their "parent" in the kernel pane's diff).
    round_best: dict[int, str] = field(default_factory=dict)
    quiet: bool = False  # folding a restored history in: past events add no log lines
    marked: str | None = None  # the candidate `d` compares the shown one with (marked with `t`)

    # ---- derived -------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.state in ("opening", "running", "paused", "awaiting")

    def focused(self) -> CandidateView | None:
        if self.focus == BASELINE_LABEL and self.baseline is not None:
            return CandidateView(BASELINE_LABEL, 0, phase="judged", judgement=self.baseline)
        return self.candidates.get(self.focus) if self.focus else None

    def best_source(self) -> Judgement | None:
        """The current best's judgement (the baseline's until something beats it)."""
        if self.best is not None:
            return self.best
        return self.baseline

    def rounds(self) -> dict[int, list[CandidateView]]:
        out: dict[int, list[CandidateView]] = {}
        for c in self.candidates.values():
            out.setdefault(c.round, []).append(c)
        return out

    @property
    def baseline_us(self) -> float | None:
        b = self.baseline
        return b.timing.median_us if b is not None and b.timing is not None else None

    @property
    def floor_us(self) -> float | None:
        for j in (self.best, self.baseline):
            if j is not None and j.figures is not None and j.figures.floor_us:
                return j.figures.floor_us
        for c in self.candidates.values():
            if c.judgement is not None and c.judgement.figures is not None and c.judgement.figures.floor_us:
                return c.judgement.figures.floor_us
        return None

    def parent_of(self, label: str) -> str | None:
        """The kernel a candidate was written from: for a person's edit, the kernel edited; for a
        repair, the same slot's candidate of the previous attempt; else the best its round set out to
        improve."""
        c = self.candidates.get(label)
        if c is None:
            return None
        edited = c.judgement.candidate.based_on if c.judgement is not None and c.judgement.candidate else None
        if edited and (edited == BASELINE_LABEL or edited in self.candidates):
            return edited
        if c.attempt > 0:
            before = next(
                (
                    o.label
                    for o in self.candidates.values()
                    if (o.round, o.attempt, o.slot) == (c.round, c.attempt - 1, c.slot)
                ),
                None,
            )
            if before is not None:
                return before
        return self.round_best.get(c.round)

    def judgement_of(self, label: str | None) -> Judgement | None:
        if label is None:
            return None
        if label == BASELINE_LABEL:
            return self.baseline
        c = self.candidates.get(label)
        return c.judgement if c is not None else None

    def mark(self, c: CandidateView) -> str:
        if c.label == self.best_label and c.judgement is not None and c.judgement.is_correct:
            return MARKS["best"]
        return MARKS.get(c.state, "·")

    @staticmethod
    def word(state: str) -> str:
        return WORDS.get(state, state)

    def tokens_per_s(self, now: float | None = None) -> float | None:
        """The model's live token rate while a reply streams; None when none does."""
        if not any(c.phase == "streaming" for c in self.candidates.values()):
            return None
        return self.token_rate.per_s(time.monotonic() if now is None else now)

    def progress(self, now: float | None = None) -> str:
        """'round 3/10, 41 tok/s' (engine/fsr/progress.py: the headless run's lines say the same)."""
        return progress_text(self.round, self.session_rounds, self.attempt, self.tokens_per_s(now))

    # ---- folding events in ---------------------------------------------------------------------
    def set_focus(self, label: str | None, by_person: bool = False) -> set[str]:
        if by_person:
            self.follow = label is None
        if label == self.focus:
            return set()
        self.focus = label
        return set(FOCUSED)

    def _follow(self, label: str) -> set[str]:
        return self.set_focus(label) if self.follow else set()

    def _candidate(self, label: str, round_: int | None = None) -> CandidateView:
        c = self.candidates.get(label)
        if c is None:
            c = CandidateView(label, round_ if round_ is not None else self.round)
            self.candidates[label] = c
        return c

    def _say(self, line: str) -> None:
        if not self.quiet:
            self.log.append(line)

    def apply(self, event: ev.Event) -> set[str]:
        """Fold one engine event in; the panes to redraw. The handler is looked up by the event's
        class (FOLDS), so renaming an event is an error at import, never a handler silently lost."""
        fold = FOLDS.get(type(event))
        return fold(self, event) if fold is not None else set()

    def _on_SessionStarted(self, e: ev.SessionStarted) -> set[str]:
        self.task, self.model, self.device, self.settings = e.task, e.model, e.device, e.settings
        self.compile_only = e.compile_only
        self.session_rounds = e.settings.rounds
        self.state, self.state_reason = "running", ""
        at = f" at {e.server}" if e.server else ""
        self._say(f"session {e.session_id}{' resumed' if e.resumed else ''}: {e.task} with {e.model}{at} on {e.device}")
        return {STATUS, TREE, LOG, LATENCY}

    def _on_RoundStarted(self, e: ev.RoundStarted) -> set[str]:
        self.round, self.attempt = e.round, e.attempt
        self.session_rounds = e.rounds or self.session_rounds
        self.prompts[(e.round, e.attempt)] = e.prompt
        self.round_best.setdefault(e.round, self.best_label)
        what = f"repair {e.attempt} of round {e.round}" if e.attempt else f"round {e.round}"
        self._say(f"{what}: asking for {e.candidates} candidate{'s' if e.candidates != 1 else ''}")
        return {STATUS, TREE, LOG}

    def _on_RequestStarted(self, e: ev.RequestStarted) -> set[str]:
        c = self._candidate(e.label, e.round)
        c.attempt, c.slot, c.phase, c.reply, c.error, c.retrying = e.attempt, e.slot, "waiting", "", "", False
        changed = {TREE, STATUS}
        if e.slot == 0:
            changed |= self._follow(e.label)
        return changed

    def add_tokens(self, label: str, text: str, at: float | None = None) -> bool:
        """Streamed text (one token), arrived at `at` on the monotonic clock (None: now); True when the
        first text of a reply arrived (the tree mark changes)."""
        self.token_rate.add(time.monotonic() if at is None else at)
        c = self._candidate(label)
        first = c.phase == "waiting"
        c.phase, c.retrying = "streaming", False
        c.reply += text
        return first

    def _on_TokensStreamed(self, e: ev.TokensStreamed) -> set[str]:
        first = self.add_tokens(e.label, e.text)
        return {TREE} if first else set()

    def _on_RequestRetrying(self, e: ev.RequestRetrying) -> set[str]:
        c = self._candidate(e.label)
        c.reply, c.phase, c.retrying = "", "waiting", True  # the failed attempt's text is void
        self._say(f"{e.label}: retry {e.attempt} in {e.delay_s:.1f} s: {e.message}")
        return {TREE, LOG, STATUS} | ({PROMPT} if e.label == self.focus else set())

    def _on_ReplyReceived(self, e: ev.ReplyReceived) -> set[str]:
        c = self._candidate(e.label)
        c.reply, c.phase = e.completion.text, "compiling"
        return {TREE} | ({PROMPT} if e.label == self.focus else set())

    def _on_ModelFailed(self, e: ev.ModelFailed) -> set[str]:
        c = self._candidate(e.label)
        c.phase, c.error = "no reply", e.message
        self.error = f"{e.label}: {e.message}"
        self._say(f"{e.label}: no reply ({e.kind}): {e.message}")
        return {TREE, STATUS, LOG} | ({PROMPT} if e.label == self.focus else set())

    def _on_CandidateJudged(self, e: ev.CandidateJudged) -> set[str]:
        j = e.judgement
        if j.label == BASELINE_LABEL:
            self.baseline = j
            if self.best_label == BASELINE_LABEL:
                self.best = j
            return {LATENCY, STATUS}
        c = self._candidate(j.label)
        c.judgement = j
        if j.candidate is not None and j.candidate.origin == "user" and not c.reply:
            c.reply = "(written in the editor)"
        if e.stage == "validate" and j.is_correct and not self.compile_only and j.repeat_of is None:
            c.phase = "profiling"  # (a repeat takes its first's verdict and is never timed)
        else:
            c.phase = "judged"
        if j.timing is not None:
            self.latency = [p for p in self.latency if p.label != j.label]
            self.latency.append(LatencyPoint(c.round, j.label, j.timing.median_us))
        if j.label == self.best_label:
            self.best = j
        changed = {TREE, LATENCY} | self._follow(j.label)
        if j.label == self.focus:
            changed |= FOCUSED
        return changed

    def _on_ValidationStarted(self, e: ev.ValidationStarted) -> set[str]:
        c = self._candidate(e.label)
        c.phase, c.sent = "validating", e  # a step, no verdict: the status stays the last judgement's (none)
        changed = {TREE} | self._follow(e.label)
        return changed | (FOCUSED if e.label == self.focus else set())

    def _on_RoundProfiled(self, e: ev.RoundProfiled) -> set[str]:
        if e.timing.baseline is not None and self.baseline is not None:
            self.baseline = _with_timing(self.baseline, e.timing.baseline)
        anchor = e.timing.anchor
        if anchor is not None and anchor.label == self.best_label and anchor.label != BASELINE_LABEL:
            self._adopt_best(anchor)
        for c in self.candidates.values():  # timed ones are judged; the rest of the round is done
            if c.round == e.round and c.phase == "profiling":
                c.phase = "judged"
        return {LATENCY, TREE, STATUS}

    def _on_AwaitingDecision(self, e: ev.AwaitingDecision) -> set[str]:
        self.awaiting, self.undecided = e, None
        self.state = "awaiting"
        c = self._candidate(e.judgement.label, e.round)
        c.judgement = e.judgement
        c.phase = "judged"
        timing, best_us, faster = e.judgement.timing, e.best_median_us, ""
        if timing is not None and best_us is not None and _ratio_ok(e):
            faster = f" ({best_us / timing.median_us:.2f}x the best)"
        self._say(f"round {e.round}: {e.judgement.label} is the fastest{faster}: accept, reject or edit it")
        return {STATUS, TREE, LOG} | self.set_focus(e.judgement.label)

    def _on_DecisionMade(self, e: ev.DecisionMade) -> set[str]:
        c = self._candidate(e.label)
        c.decision, c.reason = e.decision, e.reason
        if self.awaiting is not None and self.awaiting.judgement.label == e.label:
            self.awaiting = None
            self.state = "running"
        if self.undecided == e.label:
            self.undecided = None
        why = f": {e.reason}" if e.reason else ""
        self._say(f"{e.label} {e.decision}{why}")
        return {STATUS, TREE, LOG}

    def _adopt_best(self, j: Judgement) -> None:
        """The best as last timed (the loop times it again beside every round's candidates, and after
        a resume): its leaf in the tree, the status line and the latency pane show the same figure."""
        self.best_label, self.best = j.label, j
        c = self.candidates.get(j.label)
        if c is not None and c.judgement is not None and j.timing is not None:
            c.judgement = j

    def _on_BestImproved(self, e: ev.BestImproved) -> set[str]:
        self._adopt_best(e.judgement)
        self._say(f"new best: {e.judgement.label} ({e.judgement.message})")
        return {TREE, LATENCY, STATUS, LOG, KERNEL}

    def _on_RoundFinished(self, e: ev.RoundFinished) -> set[str]:
        self.best_label = e.best_label
        self.tokens_used = e.tokens_used
        if e.best_median_us is not None:
            self.best_by_round = [p for p in self.best_by_round if p[0] != e.round]
            self.best_by_round.append((e.round, e.best_median_us))
        if self.awaiting is not None and self.awaiting.round == e.round:
            self._keep_undecided()  # its round ended with no decision: the session was stopped
            self.awaiting = None
            if self.state == "awaiting":
                self.state = "running"
        for c in self.candidates.values():
            if c.round == e.round and c.phase in ("waiting", "streaming", "compiling", "validating", "profiling"):
                c.phase = "judged" if c.judgement is not None else "no reply"
        self._say(f"round {e.round} done: best {e.best_label}" + (" (new)" if e.improved else ""))
        return {STATUS, TREE, LATENCY, LOG}

    def _on_SessionPaused(self, e: ev.SessionPaused) -> set[str]:
        self.state, self.state_reason = "paused", e.reason
        self._say(f"paused: {e.reason}")
        return {STATUS, LOG}

    def _on_SessionResumed(self, e: ev.SessionResumed) -> set[str]:
        # The model's last error is behind it: the person went on (after switching server with
        # `m`, say). The log keeps it; the status line must not say it for the rest of the session.
        self.state, self.state_reason, self.error = "running", "", ""
        self._say("resumed")
        return {STATUS, LOG}

    def _on_SessionFinished(self, e: ev.SessionFinished) -> set[str]:
        self._keep_undecided()
        self.state, self.state_reason, self.awaiting = "finished", e.reason, None
        if e.best is not None:
            self._adopt_best(e.best)
        self._say(f"session finished: {e.reason}")
        if self.undecided is not None:
            self._say(f"{self.undecided} was left undecided: a resume times it again and asks you first")
        return {STATUS, LOG, TREE, LATENCY}

    def _on_Failed(self, e: ev.Failed) -> set[str]:
        self.state, self.error = "failed", e.message
        self._say(f"failed: {e.message}")
        return {STATUS, LOG}

    def _on_LibraryTimed(self, e: ev.LibraryTimed) -> set[str]:
        self.library = e.library
        lib = e.library
        if lib.timing is not None:
            self._say(f"vendor library: {lib.name} {lib.timing.median_us:.1f} us on this GPU")
        elif lib.name is not None:
            self._say(f"vendor library ({lib.name}): no figure: {lib.note}")
        return {LATENCY, LOG}

    def _on_HistoryRestored(self, e: ev.HistoryRestored) -> set[str]:
        """A resumed session: everything recorded before, folded in as the live events that recorded
        it (restored_events), so a resumed view and a live one are built by the same code."""
        quiet, self.quiet = self.quiet, True  # the log says "restored ...", not every past event again
        try:
            for event in restored_events(e):
                self.apply(event)
        finally:
            self.quiet = quiet
        for c in self.candidates.values():  # a request the store holds no reply for got none
            if c.phase == "waiting":
                c.phase = "no reply"
        self._adopt_best(e.best)
        self.tokens_used = e.tokens_used
        if e.rounds or e.candidates:
            self._say(
                f"restored {len(e.rounds)} recorded round(s) and {len(e.candidates)} candidate(s); best {e.best.label}"
            )
        if self.candidates:
            self._follow(next(reversed(self.candidates)))
        return {TREE, LATENCY, STATUS, LOG} | set(FOCUSED)

    def _on_CountersRead(self, e: ev.CountersRead) -> set[str]:
        """A candidate's hardware counters, read after timing: kept with its judgement."""
        j = e.judgement
        c = self.candidates.get(j.label)
        if c is not None:
            c.judgement = j
        if j.label == self.best_label:
            self.best = j
        changed = {LATENCY} if j.label == self.best_label else set()  # the latency pane's best line
        return changed | (FOCUSED if j.label == self.focus else set())

    def _on_Notice(self, e: ev.Notice) -> set[str]:
        self._say(("warning: " if e.level == "warning" else "") + e.message)
        return {LOG}

    def ended(self, status: str, reason: str) -> set[str]:
        """The session's coroutine returned (finished, stopped, paused for a fault)."""
        if status == "stopped":
            self.state, self.state_reason = "stopped", reason
        elif status == "paused":
            # The loop itself has ended (a store write failed): nothing is left to resume here.
            self.state, self.state_reason = "stopped", f"paused: {reason} (resume it from the sessions list)"
        elif status == "finished":
            self.state, self.state_reason = "finished", reason
        self._keep_undecided()
        self.awaiting = None
        return {STATUS}

    def _keep_undecided(self) -> None:
        if self.awaiting is not None:
            self.undecided = self.awaiting.judgement.label

    def failed(self, message: str) -> set[str]:
        self.state, self.error = "failed", message
        self._say(f"error: {message}")
        return {STATUS, LOG}


def _ratio_ok(e: ev.AwaitingDecision) -> bool:
    t = e.judgement.timing
    return e.best_median_us is not None and t is not None and t.median_us > 0


def _with_timing(j: Judgement, timing: Timing) -> Judgement:
    return dataclasses.replace(j, timing=timing)


# A restored candidate's verdict, folded in as a CandidateJudged of this stage: final, not a step on
# the way to the GPU (a live "validate" of a correct candidate moves its phase on to profiling).
RESTORED_STAGE: Stage = "restore"


def restored_events(e: ev.HistoryRestored) -> Iterator[ev.Event]:
    """A recorded history as the live events that would have recorded it, round by round: each
    request's prompt, its candidates (asked, replied, judged, decided) and the round's end."""
    sid = e.session_id
    prompts = {(r, a): messages for r, a, messages in e.prompts}
    by_attempt: dict[tuple[int, int], list[ev.RestoredCandidate]] = {}
    for rc in e.candidates:
        by_attempt.setdefault((rc.round, rc.attempt), []).append(rc)
    summaries = {int(s.get("round", 0)): s for s in e.rounds}
    rounds = sorted({r for r, _ in by_attempt} | {r for r, _ in prompts} | set(summaries))
    for r in rounds:
        for a in sorted({a for rr, a in by_attempt if rr == r} | {a for rr, a in prompts if rr == r}):
            members = by_attempt.get((r, a), [])
            yield ev.RoundStarted(sid, r, a, prompts.get((r, a), ()), len(members))
            for rc in members:
                yield ev.RequestStarted(sid, rc.label, r, a, rc.slot)
                if rc.reply:
                    yield ev.ReplyReceived(sid, rc.label, Completion(rc.reply, "", None, None, 0.0, None, None))
                if rc.judgement is not None:
                    yield ev.CandidateJudged(sid, RESTORED_STAGE, rc.judgement)
                if rc.decision:
                    yield ev.DecisionMade(sid, rc.label, rc.decision, rc.reason)
        summary = summaries.get(r)
        if summary is not None:
            best_us = summary.get("best_median_us")
            yield ev.RoundFinished(
                sid,
                r,
                improved=bool(summary.get("improved")),
                best_label=str(summary.get("best") or BASELINE_LABEL),
                best_median_us=float(best_us) if best_us is not None else None,
                best_speedup=None,
                best_roofline_share=None,
                tokens_used=int(summary.get("tokens_used", e.tokens_used) or 0),
            )


# Every engine event and the fold that takes it in. tests/tui/test_state_fold.py checks that each
# event class the engine defines is here or in IGNORED_EVENTS.
FOLDS: dict[type[ev.Event], Callable[[SessionView, Any], set[str]]] = {
    ev.SessionStarted: SessionView._on_SessionStarted,
    ev.HistoryRestored: SessionView._on_HistoryRestored,
    ev.LibraryTimed: SessionView._on_LibraryTimed,
    ev.RoundStarted: SessionView._on_RoundStarted,
    ev.RequestStarted: SessionView._on_RequestStarted,
    ev.TokensStreamed: SessionView._on_TokensStreamed,
    ev.RequestRetrying: SessionView._on_RequestRetrying,
    ev.ReplyReceived: SessionView._on_ReplyReceived,
    ev.ModelFailed: SessionView._on_ModelFailed,
    ev.ValidationStarted: SessionView._on_ValidationStarted,
    ev.CandidateJudged: SessionView._on_CandidateJudged,
    ev.RoundProfiled: SessionView._on_RoundProfiled,
    ev.AwaitingDecision: SessionView._on_AwaitingDecision,
    ev.DecisionMade: SessionView._on_DecisionMade,
    ev.BestImproved: SessionView._on_BestImproved,
    ev.RoundFinished: SessionView._on_RoundFinished,
    ev.SessionPaused: SessionView._on_SessionPaused,
    ev.SessionResumed: SessionView._on_SessionResumed,
    ev.SessionFinished: SessionView._on_SessionFinished,
    ev.Failed: SessionView._on_Failed,
    ev.Notice: SessionView._on_Notice,
    ev.CountersRead: SessionView._on_CountersRead,
}
# Engine events the view has no use for (none today): listed, so leaving one out is a decision.
IGNORED_EVENTS: frozenset[type[ev.Event]] = frozenset()
