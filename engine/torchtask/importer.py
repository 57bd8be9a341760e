"""`tasks import`: one module file in, one task folder out, or one line saying why not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cuda_llm.engine.torchtask.inspect_module import ImportRefused, inspect_module
from cuda_llm.engine.torchtask.memory import LARGEST_GPU_BYTES, LARGEST_GPU_NAME, fit_refusal, gib, memory_need
from cuda_llm.engine.torchtask.writer import check_destination, write_task


@dataclass(frozen=True)
class Imported:
    folder: Path
    sizes: dict[str, int]
    validation_cases: int
    needs_bytes: int  # GPU memory judging needs at the file's sizes
    memory_note: str  # how the fit was checked


def import_module(path: Path, root: Path, name: str | None = None, gpu_memory_bytes: int | None = None) -> Imported:
    """Inspect `path` in a child process, check it fits the GPU, write root/NAME. Raises UserError."""
    check_destination(path, root, name)
    facts = inspect_module(path)
    free = gpu_memory_bytes if gpu_memory_bytes is not None else facts.gpu_free_bytes
    need = memory_need(facts)
    if free is not None:
        refusal = fit_refusal(facts, free)
        if refusal:
            raise ImportRefused(refusal)
        note = f"needs about {gib(need.required)} of GPU memory, {gib(free)} available"
    else:
        # No card here to check against: still none made can judge a problem larger than the largest.
        refusal = fit_refusal(facts, LARGEST_GPU_BYTES, LARGEST_GPU_NAME)
        if refusal:
            raise ImportRefused(refusal)
        note = f"needs about {gib(need.required)} of GPU memory (no GPU here to check; --gpu-memory GIB checks a card)"
    folder = write_task(facts, root, name)
    return Imported(folder, facts.sizes, len(facts.validation), need.required, note)
