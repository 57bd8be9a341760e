"""The FSR loop's knobs (DESIGN.md section 1), with the reason for each default."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.llm.base import GenerateOptions, RetryPolicy


@dataclass(frozen=True)
class LoopSettings:
    # N: candidates per request. Four parallel samples find a correct kernel far more often than
    # one while keeping a round's token cost moderate.
    candidates: int = 4
    # D: optimisation rounds. The paper's best kernels came after a handful of rounds.
    rounds: int = 5
    # R: repair requests per round when no candidate is correct (they do not count as rounds).
    repairs: int = 3
    # K: stop after this many rounds in a row without a new best (None: never).
    patience: int | None = 3
    # Stop once the best reaches this share of the roofline floor (None: never).
    target_roofline: float | None = 0.90
    # Stop when the session has used this many tokens, prompt and completion (None: no limit).
    token_budget: int | None = None
    # Stop when the session has run this long (None: no limit).
    time_budget_s: float | None = None
    # A winner must beat the best by at least this share, and by more than the measured noise
    # (the sum of both relative IQRs), to become the new best.
    min_gain: float = 0.02
    # Accept each round's winner without asking; the TUI can switch it off to review each one.
    auto_accept: bool = True
    generate: GenerateOptions = field(default_factory=GenerateOptions)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # The prompt's feedback section is trimmed to this many characters (failures first lose
    # detail), so prompts do not grow without bound over a long session.
    feedback_chars: int = 12_000

    def validate(self) -> None:
        from engine.errors import UserError

        if self.candidates < 1 or self.candidates > 32:
            raise UserError(f"--candidates must be between 1 and 32, got {self.candidates}")
        if self.rounds < 1:
            raise UserError(f"--rounds must be at least 1, got {self.rounds}")
        if self.repairs < 0:
            raise UserError(f"--repairs must not be negative, got {self.repairs}")
