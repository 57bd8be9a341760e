"""How far a session has got, in the words both consumers show: "round 3/10, 41 tok/s".

The round out of the session's rounds (D, which the person may change while it runs), and the
model's live token rate while replies stream: the tokens of every stream in the last few seconds
over those seconds. A token is one streamed delta (a `TokensStreamed` event): ollama and
OpenAI-compatible servers send one token a delta. The TUI's status line and the headless run's
progress lines both format it here, so they say the same thing.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# Long enough to smooth the bursts a server's batching makes (several requests share one GPU), short
# enough that a stalled stream shows as a falling rate within seconds.
RATE_WINDOW_S = 3.0
# Below this much streaming a rate is a guess from a handful of tokens (the first burst after a long
# prompt's prefill): it is not shown.
RATE_MIN_SPAN_S = 0.5


@dataclass
class TokenRate:
    """Tokens per second over the last `window_s` seconds, fed with each token's arrival time (any
    monotonic clock, in seconds: the consumers pass time.monotonic())."""

    window_s: float = RATE_WINDOW_S
    min_span_s: float = RATE_MIN_SPAN_S
    _times: deque[float] = field(default_factory=deque, repr=False)
    _since: float | None = field(default=None, repr=False)  # when the current run of streaming began

    def add(self, at: float, tokens: int = 1) -> None:
        if self._since is None or not self._times or at - self._times[-1] > self.window_s:
            self._since = at  # the first token after a quiet window: a new run of streaming
            self._times.clear()
        self._times.extend([at] * tokens)

    def per_s(self, now: float) -> float | None:
        """The rate now; None when nothing streamed within the window or streaming began too recently
        to say."""
        while self._times and self._times[0] <= now - self.window_s:
            self._times.popleft()
        if not self._times or self._since is None:
            return None
        span = min(self.window_s, now - self._since)
        if span < self.min_span_s:
            return None
        return len(self._times) / span


def progress_text(round_: int, rounds: int | None, attempt: int = 0, tokens_per_s: float | None = None) -> str:
    """'round 3/10', then ', repair 1' during a repair and ', 41 tok/s' while replies stream. `rounds`
    None: the session's D is not known (yet), 'round 3' alone."""
    text = f"round {round_}/{rounds}" if rounds else f"round {round_}"
    if attempt:
        text += f", repair {attempt}"
    if tokens_per_s is not None:
        text += f", {tokens_per_s:.0f} tok/s"
    return text


__all__ = ["RATE_MIN_SPAN_S", "RATE_WINDOW_S", "TokenRate", "progress_text"]
