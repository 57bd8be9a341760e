"""Recorded ncu outputs (tests/counters/recorded/): what `ncu --csv --print-units base --log-file`
wrote for kernels whose limits a CUDA engineer knows, and ncu's failures, as the test files read them."""

from __future__ import annotations

from pathlib import Path

from cuda_llm.engine.counters import ncu_csv
from cuda_llm.engine.counters.model import KernelCounters
from cuda_llm.engine.counters.runner import match_launches
from cuda_llm.engine.task.library import TaskLibrary

RECORDED = Path(__file__).parent / "recorded"


def text(name: str) -> str:
    return (RECORDED / name).read_text()


def kernels(name: str, plan_kernels: tuple[str, ...]) -> tuple[KernelCounters, ...]:
    return match_launches(ncu_csv.parse(text(name)).rows, plan_kernels)


def min_bytes(task: str) -> int:
    t = TaskLibrary().get(task)
    return t.bytes_and_flops(t.timing)[0]


def section_kernel(name: str, kernel: str) -> KernelCounters:
    """One kernel of a multi-kernel recording (the probe's four CuPy kernels), as launch 0."""
    row = next(r for r in ncu_csv.parse(text(name)).rows if r.kernel == kernel)
    return KernelCounters(0, kernel, row.values)
