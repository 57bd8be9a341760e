"""What the FSR loop tells its watchers: typed, immutable events.

The TUI and the headless CLI subscribe to the same stream (an `EventBus`); neither holds engine
logic. Events carry data, not widgets: a subscriber decides how to show them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cuda_llm.engine.compile.result import CompileResult
from cuda_llm.engine.core.settings import LoopSettings
from cuda_llm.engine.core.status import STAGES, Stage
from cuda_llm.engine.judge.judgement import Candidate, Judgement, LibraryResult, RoundTiming
from cuda_llm.engine.llm.base import Completion, Message


def _now() -> float:
    return time.time()


@dataclass(frozen=True)
class Event:
    session_id: int  # the session's row id in the store


@dataclass(frozen=True)
class SessionStarted(Event):
    task: str
    model: str
    device: str  # "NVIDIA H200 (sm_90)" or "compile-only (sm_90)": shown, never parsed
    settings: LoopSettings
    resumed: bool = False
    compile_only: bool = False  # no GPU: judged up to compiling (engine/gpu/protocol.py is_compile_only)
    server: str | None = None  # where the prompts go (engine/llm/spec.py server_of); None: no server
    at: float = field(default_factory=_now)


@dataclass(frozen=True)
class RestoredCandidate:
    """One candidate of a resumed session, as recorded."""

    label: str
    round: int
    attempt: int
    slot: int
    reply: str | None
    judgement: Judgement | None  # its last verdict (None: received, never judged)
    decision: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class HistoryRestored(Event):
    """What a resumed session had recorded before this run, in one event, so a consumer can show
    the whole session (every round, candidate, verdict, decision and the best) and not only what
    happens from now on."""

    candidates: tuple[RestoredCandidate, ...]
    rounds: tuple[dict, ...]  # each finished round's summary as the store keeps it
    prompts: tuple[tuple[int, int, tuple[Message, ...]], ...]  # (round, attempt, messages)
    best: Judgement  # the best as restored (re-timed on this GPU when there is one)
    tokens_used: int


@dataclass(frozen=True)
class LibraryTimed(Event):
    """The vendor library's figure for the task on this GPU, timed once at the session's start
    (engine/gpu/library.py), or why there is none: a second yardstick beside the baseline."""

    library: LibraryResult


@dataclass(frozen=True)
class RoundStarted(Event):
    round: int
    attempt: int  # 0: the round's first request; 1..: repairs
    prompt: tuple[Message, ...]
    candidates: int
    # The session's D as this round begins (the person may change it while it runs); None where it is
    # not known (a history rebuilt from the store).
    rounds: int | None = None


@dataclass(frozen=True)
class RequestStarted(Event):
    label: str
    round: int
    attempt: int
    slot: int


@dataclass(frozen=True)
class TokensStreamed(Event):
    label: str
    text: str  # the new text only


@dataclass(frozen=True)
class RequestRetrying(Event):
    label: str
    attempt: int
    delay_s: float
    message: str  # the error that caused the retry; the label's streamed text so far is void


@dataclass(frozen=True)
class ReplyReceived(Event):
    label: str
    completion: Completion


@dataclass(frozen=True)
class ModelFailed(Event):
    label: str
    kind: str
    message: str  # one line naming the server and what to do


@dataclass(frozen=True)
class ValidationStarted(Event):
    """A candidate compiled and bound, sent to the GPU to be validated: a step, with no verdict yet
    (compile-only mode has no GPU and skips it: its verdict follows at once)."""

    label: str
    candidate: Candidate
    compile: CompileResult


@dataclass(frozen=True)
class CandidateJudged(Event):
    """A candidate's status, and the stage of judging that gave it (engine/core/status.py Stage)."""

    stage: Stage
    judgement: Judgement

    def __post_init__(self) -> None:
        # A status passed for a stage ("compiled") would show a verdict as a step or the reverse.
        if self.stage not in STAGES:
            raise ValueError(f"{self.stage!r} is not a stage of judging (one of {', '.join(STAGES)})")


@dataclass(frozen=True)
class RoundProfiled(Event):
    round: int
    timing: RoundTiming
    best_label: str
    best_median_us: float | None


@dataclass(frozen=True)
class CountersRead(Event):
    """A candidate's hardware counters and what limits it (engine/counters), or the one line saying
    why none could be read (then the session reads no more)."""

    round: int
    judgement: Judgement  # with .counters set
    is_best: bool  # the session's best (its counters go into the next prompt)


@dataclass(frozen=True)
class AwaitingDecision(Event):
    round: int
    judgement: Judgement  # the round's winner, faster than the best by more than the noise
    best_median_us: float | None


@dataclass(frozen=True)
class DecisionMade(Event):
    label: str
    decision: str  # "accepted" | "rejected" | "auto-accepted"
    reason: str = ""


@dataclass(frozen=True)
class BestImproved(Event):
    round: int
    judgement: Judgement
    previous_label: str
    previous_median_us: float | None


@dataclass(frozen=True)
class RoundFinished(Event):
    round: int
    improved: bool
    best_label: str
    best_median_us: float | None
    best_speedup: float | None
    best_roofline_share: float | None  # of the achievable roofline (metrics.ROOFLINE_NAME)
    tokens_used: int
    best_physical_share: float | None = None  # of the physical limit (metrics.PHYSICAL_NAME)
    best_speedup_text: str | None = None  # '2.40x eager, 1.30x torch.compile' (metrics.speedup_text)


@dataclass(frozen=True)
class SessionPaused(Event):
    reason: str  # "paused by the user", or a fault the user must fix (a server that is down)


@dataclass(frozen=True)
class SessionResumed(Event):
    pass


@dataclass(frozen=True)
class SessionFinished(Event):
    reason: str  # which stop rule ended it
    best: Judgement | None
    rounds: int
    tokens_used: int


@dataclass(frozen=True)
class Failed(Event):
    message: str  # one line: what broke, and what to do


@dataclass(frozen=True)
class Notice(Event):
    """A line worth showing that is not a state change (a retry, a throttled GPU, a setting change)."""

    message: str
    level: str = "info"  # "info" | "warning"


Subscriber = Callable[[Event], None]


class EventBus:
    """Fan-out of events to subscribers, in order. A subscriber that raises is dropped, never the loop."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self.dropped: list[str] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn) if fn in self._subscribers else None

    def emit(self, event: Event) -> None:
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception as exc:  # a broken view must not stop the loop
                self._subscribers.remove(fn)
                self.dropped.append(f"{getattr(fn, '__qualname__', fn)}: {exc!r}")
