"""The program ncu profiles: one run of a candidate's launch plan at the task's timing size.

Started by runner.py as `python -m cuda_llm.engine.counters.probe SPEC` under ncu, in a process of
its own: it never shares a context with the GPU worker that times candidates, so nothing it does
reaches a latency figure. It loads the cubin, fills the task's inputs at the timing size (the same
generator and seed the profiler uses), poisons the outputs, and runs the plan exactly once, so ncu's
launches are the plan's launches in order. Exit status 0 when the run finished; otherwise one line
on stderr says what failed.
"""

from __future__ import annotations

import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

from cuda_llm.engine.core.settings import ValidationSettings
from cuda_llm.engine.gpu.protocol import DeviceInfo, ProgramRef

# Exit status when the plan cannot run (the judge has validated it, so this is rare: a device
# without memory to spare, a driver refusing a second context).
EXIT_FAILED = 3


@dataclass(frozen=True)
class ProbeSpec:
    task_folder: str
    program: ProgramRef
    device: DeviceInfo  # the GPU the worker judged on (its index, and the limits a plan is sized by)
    validation: ValidationSettings


def write_spec(spec: ProbeSpec, path: Path) -> None:
    path.write_bytes(pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL))


def run(spec: ProbeSpec) -> None:
    from cuda_llm.engine.gpu.driver import Context
    from cuda_llm.engine.gpu.reference_cache import ReferenceCache
    from cuda_llm.engine.gpu.runner import ModuleFunctions, prepare
    from cuda_llm.engine.gpu.validate import BufferSet, poison, task_bytes
    from cuda_llm.engine.task.loader import load_task
    from cuda_llm.engine.task.reference import case_seed

    task = load_task(spec.task_folder, spec.validation)
    case = task.timing
    ctx = Context(spec.device.index)
    inputs = ReferenceCache().get(task, case, case_seed(task, case, 0, "profile"), with_expected=False).inputs
    bufs = BufferSet(ctx, task, case)
    for name, host in inputs.items():
        ctx.upload(bufs.device[name], host)
    for b in task.outputs:
        poison(ctx, bufs.device[b.name], b.dtype)
    module = ctx.load_module(spec.program.cubin)
    prepared = prepare(
        ctx,
        spec.device,
        ModuleFunctions(ctx, module),
        spec.program.plan,
        task.env(case),
        task.params(case),
        bufs.device,
        task_bytes(task, case),
    )
    ctx.synchronize()  # the uploads and fills are done before the one run ncu measures
    prepared.run(ctx)
    ctx.wait(spec.validation.launch_timeout_s)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cuda_llm.engine.counters.probe SPEC (written by the counters runner)", file=sys.stderr)
        return 2
    spec = pickle.loads(Path(args[0]).read_bytes())
    try:
        run(spec)
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
