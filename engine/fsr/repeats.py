"""A model's reply that repeats a program the session has judged already: the same kernel source and
the same launch plan as an earlier candidate of the model, or as the baseline. Weak models echo the
best kernel of the prompt back, or two slots of a round write the same thing.

Such a candidate is not compiled, run or timed again: its verdict is the earlier one's, said as a
repeat, and the round's history line tells the model it repeated itself. Only verdicts that belong to
the program itself are carried over (engine/core/status.py, `repeatable`); a crash or a time-out may
be the machine's, and is judged again. A repeat is never timed, so it cannot become the best by the
noise of a second timing. A person's edits are always judged.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TypeAlias

from cuda_llm.engine.core.status import REPEATABLE
from cuda_llm.engine.judge.judgement import BASELINE_LABEL, Candidate, Judgement

Program: TypeAlias = tuple[str, str]


def program_of(cand: Candidate) -> Program:
    """What a candidate runs: its source (surrounding blank space aside) and its launch plan, as its
    JSON (the same whether the plan was parsed from a reply or read back from a session's record)."""
    return cand.source.strip(), json.dumps(cand.plan.to_json(), sort_keys=True)


def name_of(label: str) -> str:
    return "the baseline" if label == BASELINE_LABEL else label


def repeat_of(first: Judgement, cand: Candidate) -> Judgement:
    """`cand` judged as `first` was, saying so; without timing or figures (it is not timed)."""
    why = f": {first.message}" if first.failed else f" ({first.status})"
    return Judgement(
        cand.label,
        first.status,
        f"the same kernel and launch plan as {name_of(first.label)}, not judged again{why}",
        detail=first.detail,
        candidate=cand,
        compile=first.compile,
        validation=first.validation,
        warnings=first.warnings,
        device=first.device,
        ran_on=first.ran_on,
        repeat_of=first.label,
    )


def history_note(pairs: Sequence[tuple[str, str]]) -> str:
    """ "r2-1 repeated r1-1, r2-3 repeated the baseline": for a round's history line."""
    return ", ".join(f"{label} repeated {name_of(first)}" for label, first in pairs)


def _settled(j: Judgement) -> asyncio.Future[Judgement]:
    future: asyncio.Future[Judgement] = asyncio.get_running_loop().create_future()
    future.set_result(j)
    return future


class JudgedPrograms:
    """The programs a session has judged, each with its first judgement (or the judging of it still
    under way: two slots of a round that write the same kernel wait for one verdict)."""

    def __init__(self) -> None:
        self._first: dict[Program, asyncio.Future[Judgement]] = {}

    def remember(self, j: Judgement) -> None:
        """A judgement made before (the baseline, a resumed session's records), in the order judged."""
        if j.repeat_of is not None or j.candidate is None or j.status not in REPEATABLE:
            return
        program = program_of(j.candidate)
        if program not in self._first:  # else judged on its own before repeats were known: the first stays
            self._first[program] = _settled(j)

    def settle(self, j: Judgement) -> None:
        """A first judgement made final by its timing (the re-check after timing may find it wrong,
        the figures may make it suspect): its repeats take that verdict."""
        if j.candidate is None:
            return
        known = self._first.get(program_of(j.candidate))
        if known is not None and known.done() and not known.cancelled() and known.result().label == j.label:
            self._first[program_of(j.candidate)] = _settled(j)

    async def earlier(self, cand: Candidate) -> Judgement | None:
        """The judgement whose verdict `cand` repeats, waiting for it if it is being made; None
        when `cand` must be judged (then `judging` must follow)."""
        pending = self._first.get(program_of(cand))
        if pending is None:
            return None
        try:
            first = await asyncio.shield(pending)
        except asyncio.CancelledError:
            if not pending.cancelled():
                raise  # this request was cancelled, not the first's
            return None
        return first if first.status in REPEATABLE else None

    def judging(self, cand: Candidate) -> asyncio.Future[Judgement]:
        """The future of `cand`'s own judgement, for repeats to wait on: set its result, or cancel it
        when the judging ends without one."""
        future: asyncio.Future[Judgement] = asyncio.get_running_loop().create_future()
        self._first[program_of(cand)] = future
        return future

    def forget(self, cand: Candidate, future: asyncio.Future[Judgement]) -> None:
        future.cancel()
        if self._first.get(program_of(cand)) is future:
            del self._first[program_of(cand)]
