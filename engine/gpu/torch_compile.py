"""torch.compile of an imported task's module: the optional second yardstick beside PyTorch eager.

Compiling takes seconds to minutes (Dynamo traces forward, Inductor writes Triton kernels and Triton
compiles them), so it is a request of its own with its own time limit
(ProfileSettings.torch_compile_timeout_s), made only when asked for (`--torch-compile`). The compiled
forward is kept in the worker beside the task's eager program (engine/gpu/eager.py), and a later
profile times it as it times eager: on the harness stream, over the harness's own buffers, L2
flushed, interleaved, on the same placements.

It is compiled at the timing size, and its result there is checked against the task's float64
reference with the task's tolerance before it is ever timed. Once compiled, a call that would compile
again (a guard of Dynamo's that fails) raises instead, so no compile time lands inside a timed run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from cuda_llm.engine.core.errors import describe
from cuda_llm.engine.gpu.compare import compare_output
from cuda_llm.engine.gpu.protocol import TORCH_COMPILE_NAME as TORCH_COMPILE_NAME
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import SizeCase, Task
from cuda_llm.engine.task.reference import case_seed
from cuda_llm.engine.torchtask.runtime import to_numpy, to_torch

if TYPE_CHECKING:
    from cuda_llm.engine.gpu.device_cases import DeviceCase, TaskCases
    from cuda_llm.engine.gpu.driver import DeviceBuffer
    from cuda_llm.engine.gpu.eager import EagerProgram
    from cuda_llm.engine.gpu.library import BoundLibrary
    from cuda_llm.engine.gpu.reference_cache import ReferenceCache
    from cuda_llm.engine.torchtask.runtime import ImportedModule

# The label of its timing in a profile (never a candidate's: labels there are r1-2...).
TORCH_COMPILE_LABEL = "torch.compile"


class CompiledForward:
    """forward of one built module through torch.compile, called like ImportedModule.forward."""

    name = TORCH_COMPILE_NAME

    def __init__(self, torch: Any, module: ImportedModule, model: Any, backend: str = "inductor") -> None:
        self.torch = torch
        self.module = module
        self.model = model

        def forward(args: list[Any], params: dict[str, Any]) -> Any:
            return torch.func.functional_call(model, params, tuple(args))

        # Static shapes: it is timed at one size only, and a dynamic-shape kernel would be slower.
        # (`backend`: Inductor, what a user of torch.compile gets; tests on a CPU trace with a cheaper one.)
        self._fn = torch.compile(forward, dynamic=False, backend=backend)
        self.ready = False  # compiled by a first call

    def __call__(self, sizes: Mapping[str, int | float], args: list[Any], params: dict[str, Any]) -> list[Any]:
        torch = self.torch
        self.module.set_sizes(sizes)
        with torch.no_grad(), torch._dynamo.config.patch(error_on_recompile=self.ready):
            out = self._fn(args, params)
        self.ready = True
        return list(out) if isinstance(out, list | tuple) else [out]


def compile_for(
    program: EagerProgram, task: Task, refs: ReferenceCache, cases: TaskCases | None = None, harness: Any = None
) -> str | None:
    """Compile the task's module at its timing size, run it once on the reference's inputs there and
    check the result; kept on `program` when right. None when ready, else the one line saying why not.
    With `cases` (and the worker's `harness`), the case is made, run and compared on the device
    (engine/gpu/device_cases.py): nothing of the timing size comes to the host."""
    if cases is not None:
        return _compile_on_device(program, task, cases, harness)
    case = task.timing
    ref = refs.get(task, case, case_seed(task, case, 0))
    assert ref.expected is not None
    try:
        compiled, got = _compile_and_run(program, task, ref.inputs)
    except Exception as exc:
        return f"torch.compile failed: {describe(exc)}"
    finally:
        program.scrub()  # what the first run left in PyTorch's cache (the answer) is wiped
    for b in task.outputs:
        scale = ref.scale[b.name] if ref.scale else None
        result = compare_output(b.name, ref.expected[b.name], got[b.name], task.tolerance, scale, dtype=b.dtype)
        if not result.passed:
            return (
                f"torch.compile's result differs from the reference at {case.label}: "
                f"{result.wrong} wrong element(s) of {b.name!r}"
            )
    program.compiled = compiled
    return None


def _compile_on_device(program: EagerProgram, task: Task, cases: TaskCases, harness: Any) -> str | None:
    case = task.timing
    made = cases.get(case, case_seed(task, case, 0))
    try:
        # Every tensor is local to the call: gone before the scrub wipes what PyTorch's cache kept.
        return _check_compiled(program, task, made, harness, cases.timeout_s)
    finally:
        program.scrub()  # what the run left in PyTorch's cache (the answer) is wiped
        cases.release(made)


def _check_compiled(program: EagerProgram, task: Task, made: DeviceCase, harness: Any, timeout_s: float) -> str | None:
    from cuda_llm.engine.gpu.device_compare import compare_on_device
    from cuda_llm.engine.gpu.driver import DeviceBuffer
    from cuda_llm.engine.gpu.eager import _DeviceArray

    torch = program.torch
    case = task.timing
    env = task.env(case)
    sizes = task.params(case)
    binding = program.module.binding
    device = torch.device("cuda", program.ctx.index)
    specs = {b.name: b for b in task.inputs}

    def tensor(name: str) -> Any:
        # A copy: the masters are only to be read, and nothing says the module leaves its inputs be.
        b = specs[name]
        view = torch.as_tensor(_DeviceArray(made.masters[name].ptr, b.shape_for(env), b.dtype), device=device)
        return view.clone()

    try:
        compiled = CompiledForward(torch, program.module, program.module.build(sizes, str(device)))
        with torch.cuda.stream(program.stream):
            args = [tensor(n) for n in binding.inputs]
            params = {path: tensor(n) for n, path in binding.parameters.items()}
            outs = compiled(sizes, args, params)
            got = {name: o.detach().contiguous() for name, o in zip(binding.outputs, outs, strict=True)}
        torch.cuda.synchronize()
    except Exception as exc:
        return f"torch.compile failed: {describe(exc)}"
    for b in task.outputs:
        t = got[b.name]
        if str(t.dtype).removeprefix("torch.") != DTYPES[b.dtype].torch or t.numel() != b.count_for(env):
            return f"torch.compile's {b.name!r} is {t.dtype} of {t.numel()} elements, not the task's output"
        buf = DeviceBuffer(int(t.data_ptr()), int(t.numel() * t.element_size()))
        expected = made.expected[b.name]
        wrong, _ = compare_on_device(
            program.ctx, harness, buf, b, expected, None, task.tolerance, made.rms_of(b.name), timeout_s
        )
        if wrong:
            return (
                f"torch.compile's result differs from the reference at {case.label}: "
                f"{wrong} wrong element(s) of {b.name!r}"
            )
    program.compiled = compiled
    return None


def _compile_and_run(
    program: EagerProgram, task: Task, inputs: dict[str, np.ndarray]
) -> tuple[CompiledForward, dict[str, np.ndarray]]:
    """The compiled forward and its outputs on `inputs` (host copies: no tensor outlives the call)."""
    torch = program.torch
    device = torch.device("cuda", program.ctx.index)
    sizes = task.params(task.timing)
    binding = program.module.binding
    compiled = CompiledForward(torch, program.module, program.module.build(sizes, str(device)))

    dtypes = {b.name: b.dtype for b in task.buffers}

    def tensor(name: str) -> Any:
        return to_torch(torch, inputs[name], dtypes[name]).to(device)

    with torch.cuda.stream(program.stream):
        args = [tensor(n) if n in inputs else sizes[n] for n in binding.inputs]  # a scalar: its value
        params = {path: tensor(n) for n, path in binding.parameters.items()}
        outs = compiled(sizes, args, params)
        got = {name: to_numpy(torch, o) for name, o in zip(binding.outputs, outs, strict=True)}
    return compiled, got


class CompiledProgram:
    """The compiled forward as the profiler binds a program (as it binds eager's and the library's)."""

    name = TORCH_COMPILE_NAME

    def __init__(self, program: EagerProgram) -> None:
        assert program.compiled is not None, "compile_for() first"
        self.program = program

    def bind(self, task: Task, case: SizeCase, device: dict[str, DeviceBuffer]) -> BoundLibrary:
        return self.program.bind(task, case, device, compiled=self.program.compiled)
