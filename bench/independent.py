"""An independent timer for a compiled candidate: CuPy launches the same cubin with the same plan,
and triton.testing.do_bench times it (its own events, its own L2 clearing, median of its samples).

Used by bench/baselines.py and the GPU timing test to check the profiler against a second opinion.
Needs CuPy and Triton (present on the GPU image); nothing in the engine imports this.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from cuda_llm.engine.judge.judgement import Compiled
from cuda_llm.engine.task import expr
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import Task
from cuda_llm.engine.task.reference import case_seed, load_reference

_SCALAR = {
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
}


def profile_inputs(task: Task) -> dict[str, np.ndarray]:
    """The inputs the profiler times on (the timing size, the profile seed)."""
    case = task.timing
    return load_reference(task).inputs(case, case_seed(task, case, 0, "profile"))


def cupy_plan_runner(task: Task, compiled: Compiled, inputs: dict[str, np.ndarray] | None = None) -> Any:
    """A zero-argument function that runs the plan once on CuPy's current stream, on buffers it
    allocates now (so each call places them afresh); `inputs` saves generating them again."""
    import cupy as cp

    case = task.timing
    env, params = task.env(case), task.params(case)
    if inputs is None:
        inputs = profile_inputs(task)
    bufs = {}
    for b in task.buffers:
        if b.role == "input":
            bufs[b.name] = cp.asarray(inputs[b.name])
        else:
            bufs[b.name] = cp.empty(b.shape_for(env), dtype=DTYPES[b.dtype].numpy)
    scratch = {
        s.name: cp.zeros(expr.evaluate(s.count, env), dtype=DTYPES[s.dtype].numpy) for s in compiled.bound.scratch
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "candidate.cubin"
        path.write_bytes(compiled.compile.cubin)
        module = cp.RawModule(path=str(path))
        module.get_function(compiled.bound.launches[0].kernel)  # loads the module now
    calls = []
    for la in compiled.bound.launches:
        fn = module.get_function(la.kernel)
        shared = expr.evaluate(la.shared_bytes, env)
        if shared > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = shared
        args = []
        for a in la.args:
            if a.kind == "buffer":
                args.append(bufs[a.ref])
            elif a.kind == "scratch":
                args.append(scratch[a.ref])
            else:
                value = params[a.ref] if a.kind == "scalar" else expr.evaluate(a.ref, env)
                args.append(_SCALAR[a.param_type](value))
        grid = tuple(expr.evaluate(g, env) for g in la.grid)
        block = tuple(expr.evaluate(b, env) for b in la.block)
        calls.append((fn, grid, block, tuple(args), shared))

    def run() -> None:
        for buf in scratch.values():
            buf.fill(0)
        for fn, grid, block, args, shared in calls:
            fn(grid, block, args, shared_mem=shared)

    run._keepalive = (module, bufs, scratch)  # type: ignore[attr-defined]
    return run


_EMPTY_KERNEL = 'extern "C" __global__ void empty() {}'


def launch_overhead_us(launches: int) -> float:
    """What do_bench measures for `launches` empty kernels: the host's launch latency that lands
    between its events (a few microseconds a launch). The profiler keeps it out of its own figures
    by queuing the timed launches behind a delay kernel, so the comparison subtracts it."""
    import cupy as cp
    import triton.testing

    fn = cp.RawKernel(_EMPTY_KERNEL, "empty")

    def run() -> None:
        for _ in range(launches):
            fn((1,), (1,), ())

    run()
    return float(triton.testing.do_bench(run, warmup=25, rep=100, return_mode="median")) * 1000.0


def do_bench_us(task: Task, compiled: Compiled, subtract_launch_overhead: bool = True) -> float:
    """Median microseconds per plan run by triton.testing.do_bench (less the launch overhead it
    measures for the same number of empty launches, unless told otherwise)."""
    import cupy as cp
    import triton.testing

    run = cupy_plan_runner(task, compiled)
    run()
    cp.cuda.Device().synchronize()
    us = float(triton.testing.do_bench(run, warmup=25, rep=200, return_mode="median")) * 1000.0
    if subtract_launch_overhead:
        us -= launch_overhead_us(len(compiled.bound.launches) + len(compiled.bound.scratch))
    return us
