"""Whether an imported problem fits the GPU at its own sizes, and which size to lower if not.

Problems in the field's format are often large (inputs of several GB). What the judge holds at
once, at the timing size, in units of B (every task buffer at its own dtype):
- validation: the buffers, the inputs' pristine copies and the first run's outputs (2 B), while
  the float64 reference ran just before with its own copies and intermediates (REFERENCE_COPIES
  of the buffers in float64);
- timing: the input masters, one placement each for the baseline, the best so far and a
  candidate, and eager's own intermediates (PROFILE_COPIES B).
"""

from __future__ import annotations

from dataclasses import dataclass

from cuda_llm.engine.task import expr
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.torchtask.inspect_module import ModuleFacts, TensorFacts

PROFILE_COPIES = 5
VALIDATION_COPIES = 2
# float64 inputs, parameters and outputs, plus as much again for the module's intermediates.
REFERENCE_COPIES = 2
# Where no GPU answers (a CPU machine), a problem is still refused when no GPU made could judge it:
# the CUDA GPU with the most memory today.
LARGEST_GPU_NAME = "B300"
LARGEST_GPU_BYTES = 288 * 10**9


def _bytes(t: TensorFacts, sizes: dict[str, int], itemsize: int | None = None) -> int:
    n = itemsize or DTYPES[t.dtype].itemsize
    for d in t.shape:
        n *= expr.evaluate(d, sizes)
    return n


@dataclass(frozen=True)
class MemoryNeed:
    buffers: int  # B: every task buffer at its own dtype
    required: int  # the peak the judge needs
    lower: str | None  # the size constant to lower first (in the largest buffer), if any


def memory_need(facts: ModuleFacts) -> MemoryNeed:
    tensors = (*facts.inputs, *facts.params, *facts.outputs)
    sizes = facts.sizes
    own = sum(_bytes(t, sizes) for t in tensors)
    wide = sum(_bytes(t, sizes, 8 if DTYPES[t.dtype].is_float else None) for t in tensors)
    required = max(PROFILE_COPIES * own, VALIDATION_COPIES * own + REFERENCE_COPIES * wide)
    biggest = max(tensors, key=lambda t: _bytes(t, sizes))
    names = [n for d in biggest.shape for n in sorted(expr.names(d)) if n in sizes]
    lower = max(names, key=lambda n: sizes[n]) if names else None
    return MemoryNeed(own, required, lower)


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def fit_refusal(facts: ModuleFacts, free_bytes: int, largest: str | None = None) -> str | None:
    """One line when the problem does not fit `free_bytes` of GPU memory, else None. With `largest`
    (the name of the GPU with the most memory made), `free_bytes` is that GPU's whole memory."""
    need = memory_need(facts)
    if need.required <= free_bytes:
        return None
    what = (
        f"lower {need.lower} (now {facts.sizes[need.lower]}) in {facts.source.name}"
        if need.lower
        else f"make the tensors of {facts.source.name} smaller"
    )
    room = f"more than any GPU has ({largest}: {gib(free_bytes)})" if largest else f"{gib(free_bytes)} is free"
    return (
        f"{facts.source.name} does not fit: at its own sizes its tensors take {gib(need.buffers)} and judging it "
        f"needs about {gib(need.required)} of GPU memory, {room}; {what} and import it again"
    )
