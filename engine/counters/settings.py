"""When the counters step runs, and how long it may take."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# off: never; best: the candidate that becomes a round's new best (and `eval --counters`, the TUI's
# key on demand); all: every correct candidate of a round as well.
CountersMode = Literal["off", "best", "all"]
COUNTERS_MODES: tuple[str, ...] = ("off", "best", "all")


@dataclass(frozen=True)
class CountersSettings:
    # Best only by default: one ncu run costs seconds (the plan is replayed once per counter pass),
    # which a round of four candidates should not pay four times for figures no prompt shows.
    mode: CountersMode = "best"
    # ncu starts the probe, which loads the task's inputs at the timing size (hundreds of MB) and
    # replays each launch for some twenty counter passes: a few seconds usually, tens for the
    # largest tasks. Past this the run is killed and the round goes on without counters.
    timeout_s: float = 180.0
    # Where ncu is; None: $CUDA_LLM_NCU, then PATH, then the CUDA toolkit's usual folders.
    ncu_path: str | None = None
