"""How long compiling a candidate takes: cold (a fresh process, as `cuda-llm eval` does) and warm
(the pool the FSR loop keeps). Prints figures and where they were taken; asserts nothing.

    python -m bench.compile_time [--task vector_add] [--arch sm_90] [--repeats 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time

from cuda_llm.engine.compile import CompilerPool, compile_once
from cuda_llm.engine.compile.nvrtc import compile_in_process
from cuda_llm.engine.compile.nvrtc_library import version as nvrtc_version
from cuda_llm.engine.core.settings import CompileSettings
from cuda_llm.engine.task import TaskLibrary


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


async def _warm(source: str, arch: str, repeats: int) -> tuple[float, list[float], list[float]]:
    started = time.perf_counter()
    async with CompilerPool(CompileSettings(), workers=1) as pool:
        start_s = time.perf_counter() - started
        walls, inside = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            result = await pool.compile(source, arch)
            walls.append(time.perf_counter() - t)
            inside.append(result.elapsed_s)
            assert result.ok, result.error
    return start_s, walls, inside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", default="vector_add")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    source = TaskLibrary().get(args.task).baseline_source

    major, minor = nvrtc_version()
    print(
        f"host: {platform.node()} ({platform.machine()}, {os.cpu_count()} cores), "
        f"Python {platform.python_version()}, NVRTC {major}.{minor}"
    )
    print(f"task: {args.task} baseline, {args.arch}")

    t = time.perf_counter()
    cold = compile_once(source, args.arch)
    cold_s = time.perf_counter() - t
    print(f"cold, compile_once (spawn + import + compile): {_ms(cold_s)} (NVRTC itself {_ms(cold.elapsed_s)})")

    start_s, walls, inside = asyncio.run(_warm(source, args.arch, args.repeats))
    print(f"pool start (spawn, load NVRTC, headers, warm-up compile): {_ms(start_s)}")
    print(
        f"warm, through the pool: median {_ms(statistics.median(walls))} "
        f"(min {_ms(min(walls))}, max {_ms(max(walls))}, n={len(walls)}); "
        f"NVRTC itself median {_ms(statistics.median(inside))}"
    )

    t = time.perf_counter()
    compile_in_process(source, args.arch)
    first = time.perf_counter() - t
    again = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        compile_in_process(source, args.arch)
        again.append(time.perf_counter() - t)
    print(f"in this process: first {_ms(first)}, then median {_ms(statistics.median(again))}")


if __name__ == "__main__":
    main()
