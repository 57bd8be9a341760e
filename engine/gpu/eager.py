"""PyTorch eager as the baseline of an imported task, run in the GPU worker.

The worker validates and times it in place of the task's baseline.cu: the module at its own dtype
on the harness's own stream, reading and writing the harness's device buffers (wrapped as tensors,
nothing copied in), so it is measured exactly as a candidate is (L2 flushed, queued behind the
delay kernel, interleaved, on the same placements). It duck-types the library program of
engine/gpu/library.py, so the profiler treats it as one: never captured in a graph, its host-side
queueing time measured and kept out of the timed region.

While timed, eager runs forward and keeps the result in PyTorch's allocator as a user of eager
does; for validation it also copies the result into the task's output buffers (a copy kernel
eager's own timing does not pay).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from cuda_llm.engine.core.errors import describe
from cuda_llm.engine.gpu.library import BoundLibrary, LibraryError
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import RMS_SCALES, SizeCase, Task
from cuda_llm.engine.torchtask.runtime import bits_view

if TYPE_CHECKING:
    from cuda_llm.engine.gpu.device_cases import MadeCase
    from cuda_llm.engine.gpu.driver import Context, DeviceBuffer
    from cuda_llm.engine.gpu.validate import Binder

EAGER_NAME = "PyTorch eager"
# The label the worker gives eager's timing: it stands in for the baseline.
EAGER_LABEL = "baseline"


def is_eager_baseline(task: Task, label: str) -> bool:
    return task.pytorch_module is not None and label == EAGER_LABEL


class _DeviceArray:
    """A device buffer as __cuda_array_interface__, so torch.as_tensor wraps it without a copy."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape,
            # A dtype NumPy carries in another's bits (bfloat16) is wrapped as that many-bit integer
            # and viewed as itself by the caller (torch reads no bf16 typestr).
            "typestr": np.dtype(
                DTYPES[dtype].numpy if DTYPES[dtype].numpy == dtype else f"int{8 * DTYPES[dtype].itemsize}"
            ).str,
            "data": (int(ptr), False),
            "version": 3,
            "strides": None,
            "stream": None,  # the harness orders its own stream: no synchronisation on wrapping
        }


def _as_dtype(torch: Any, tensor: Any, dtype: str) -> Any:
    """A wrapped buffer as a tensor of its task dtype (bf16 bits viewed as bfloat16, no copy)."""
    return tensor if bits_view(torch, dtype) is None else tensor.view(getattr(torch, str(DTYPES[dtype].torch)))


class _OnStream:
    """`with` scope making the harness stream PyTorch's current stream (BoundLibrary enters it)."""

    def __init__(self, torch: Any, stream: Any) -> None:
        self.torch = torch
        self.stream = stream
        self._scope: Any = None

    def __enter__(self) -> None:
        self._scope = self.torch.cuda.stream(self.stream)
        self._scope.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._scope.__exit__(*exc)


class EagerProgram:
    """The imported module of one task in this worker: PyTorch set up once, bound per buffer set."""

    name = EAGER_NAME

    def __init__(self, ctx: Context, task: Task) -> None:
        import torch

        from cuda_llm.engine.torchtask.runtime import ImportedModule

        self.torch = torch
        self.ctx = ctx
        self.module = ImportedModule(task.folder)
        torch.cuda.set_device(ctx.index)
        # The task's fp32 contract holds for the yardstick too: cuDNN's default TF32 convolutions
        # would be faster and fail the tolerance every candidate is held to.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        # bf16 GEMMs accumulate in fp32 to the end, as a bf16 task's contract asks of the candidates
        # (PyTorch otherwise lets cuBLAS add split-K partial sums in bf16).
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        self.stream = torch.cuda.ExternalStream(int(ctx.stream), device=torch.device("cuda", ctx.index))
        self._models: dict[str, Any] = {}
        self._kept: list[Any] = []  # the last result, alive until the next run (as eager code holds it)
        # The module as torch.compile made it, once a request asked for it (engine/gpu/torch_compile.py).
        self.compiled: Any = None

    def _model(self, task: Task, case: SizeCase) -> Any:
        if case.label not in self._models:
            self._models.clear()  # one size at a time: the previous size's weights go
            self._models[case.label] = self.module.build(task.params(case), f"cuda:{self.ctx.index}")
        return self._models[case.label]

    def bind(
        self,
        task: Task,
        case: SizeCase,
        device: dict[str, DeviceBuffer],
        write_outputs: bool = False,
        compiled: Any = None,
    ) -> BoundLibrary:
        """One run of forward on these buffers; with `compiled` (a CompiledForward), torch.compile's
        forward of the same module instead, bound the same way."""
        torch = self.torch
        env = task.env(case)
        sizes = task.params(case)
        tensors = {
            b.name: _as_dtype(
                torch,
                torch.as_tensor(_DeviceArray(device[b.name].ptr, b.shape_for(env), b.dtype), device="cuda"),
                b.dtype,
            )
            for b in task.buffers
        }
        binding = self.module.binding
        try:
            model = self._model(task, case) if compiled is None else compiled.model
        except Exception as exc:
            raise LibraryError(f"{EAGER_NAME} could not build the module: {type(exc).__name__}: {exc}") from None
        args = [tensors[n] if n in tensors else sizes[n] for n in binding.inputs]  # a scalar: its value
        # A module's buffers may change as it runs (BatchNorm's running statistics in training mode):
        # it gets a copy of them, so the task's input buffers stay as the harness wrote them.
        changing = {path for path, _ in model.named_buffers(remove_duplicate=False)}
        with torch.cuda.stream(self.stream):  # ordered before the runs that read the copies
            params = {
                path: tensors[n].clone() if path in changing else tensors[n] for n, path in binding.parameters.items()
            }
        outputs = [tensors[n] for n in binding.outputs]

        def enqueue() -> None:
            if compiled is None:
                result = self.module.forward(model, sizes, args, params)
            else:
                result = compiled(sizes, args, params)
            if write_outputs:
                for dst, src in zip(outputs, result, strict=True):
                    dst.copy_(src.reshape(dst.shape))
            self._kept[:] = result

        name = EAGER_NAME if compiled is None else compiled.name
        return BoundLibrary(name, enqueue, _OnStream(torch, self.stream), scrub=self.scrub)

    def scrub(self) -> None:
        """Let go of the last result and wipe every block PyTorch's caching allocator keeps but no
        tensor uses (an intermediate can be the answer or close to it), then give whole free segments
        back: nothing of eager's work stays readable by the next candidate (stream-ordered after it)."""
        self._kept.clear()
        device = self.torch.cuda.current_device()
        for segment in self.torch.cuda.memory_snapshot():
            if segment.get("device", device) != device:
                continue
            address = int(segment["address"])
            for block in segment["blocks"]:
                if block["state"] == "inactive":
                    self.ctx.zero(int(block.get("address", address)), int(block["size"]))
                address += int(block["size"])
        # The wipes are queued on the harness stream; a block PyTorch hands out on another stream (a
        # module's weights, built on the default one) must not be wiped after its new owner wrote it.
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()

    def make_case(self, task: Task, case: SizeCase, seed: int, with_expected: bool = True) -> MadeCase:
        """_make_case(); when PyTorch runs out of device memory, once more after the worker's idle
        buffers (engine/gpu/arena.py) went back to the driver, then a LibraryError saying so."""
        torch = self.torch
        try:
            return self._make_case(task, case, seed, with_expected)
        except torch.cuda.OutOfMemoryError:
            self.ctx.synchronize()
            self.ctx.arena.release_idle()
        try:
            return self._make_case(task, case, seed, with_expected)
        except torch.cuda.OutOfMemoryError as exc:
            raise LibraryError(
                f"the GPU has too little free memory to make case {case.label} of {task.name!r} and its "
                f"float64 reference ({describe(exc)}); smaller sizes in task.toml, or a GPU with more memory"
            ) from None

    def _make_case(self, task: Task, case: SizeCase, seed: int, with_expected: bool = True) -> MadeCase:
        """The case's inputs made on this GPU by get_inputs() and Model(), seeded from `seed` as the host
        path seeds them (runtime.case_torch_seed), and with `with_expected` the module's float64 outputs
        on them there, with each output's RMS (engine/gpu/device_cases.py keeps them). The tensors live
        until the result's done(), which also wipes what PyTorch's allocator kept."""
        from cuda_llm.engine.gpu.device_cases import MadeCase
        from cuda_llm.engine.gpu.driver import DeviceBuffer
        from cuda_llm.engine.torchtask.runtime import case_torch_seed

        torch = self.torch
        sizes = task.params(case)
        device = f"cuda:{self.ctx.index}"
        env = task.env(case)

        def tensors() -> tuple[
            list[Any], dict[str, DeviceBuffer], dict[str, tuple[DeviceBuffer, int]], dict[str, float]
        ]:
            # Every tensor is local here: when this raises, they go with its frame before the scrub.
            held: list[Any] = []
            with torch.cuda.stream(self.stream):
                made = self.module.make_inputs(sizes, case_torch_seed(seed), device)
                inputs: dict[str, DeviceBuffer] = {}
                for b in task.inputs:
                    t = made[b.name]
                    shape, dtype = tuple(t.shape), str(t.dtype).removeprefix("torch.")
                    if (shape, dtype) != (tuple(b.shape_for(env)), DTYPES[b.dtype].torch):
                        raise LibraryError(
                            f"{EAGER_NAME}: get_inputs() made {b.name!r} as {dtype}{list(shape)}, the task "
                            f"declares {b.dtype}{list(b.shape_for(env))} at {case.label}"
                        )
                    held.append(t)
                    inputs[b.name] = DeviceBuffer(int(t.data_ptr()), int(t.numel() * t.element_size()))
                outputs: dict[str, tuple[DeviceBuffer, int]] = {}
                rms: dict[str, float] = {}
                if with_expected:
                    expected = self.module.reference_tensors(made, sizes)
                    for b in task.outputs:
                        t = expected[b.name]
                        if t.numel() != b.count_for(env):
                            raise LibraryError(
                                f"{EAGER_NAME}: forward's {b.name!r} has {t.numel()} elements, the task "
                                f"declares {list(b.shape_for(env))} at {case.label}"
                            )
                        held.append(t)
                        outputs[b.name] = (DeviceBuffer(int(t.data_ptr()), int(t.numel() * 8)), int(t.numel()))
                        if task.tolerance.scale in RMS_SCALES:
                            # The norm over the root of the count: no temporary the output's size.
                            n = t.numel()
                            rms[b.name] = float(torch.linalg.vector_norm(t)) / n**0.5 if n else 0.0
            torch.cuda.synchronize()  # made before the worker's own stream copies them
            return held, inputs, outputs, rms

        out_of_memory = failure = None
        try:
            held, inputs, outputs, rms = tensors()
        except torch.cuda.OutOfMemoryError as exc:
            out_of_memory = describe(exc)
        except LibraryError as exc:
            failure = str(exc)
        except Exception as exc:
            failure = f"{EAGER_NAME} could not make case {case.label}: {describe(exc)}"
        if out_of_memory is not None or failure is not None:
            self.scrub()  # what the failed call made (a reference, perhaps) is wiped
            if out_of_memory is not None:
                raise torch.cuda.OutOfMemoryError(out_of_memory)
            raise LibraryError(str(failure))

        def done() -> None:
            self.ctx.synchronize()  # the worker's copies of the tensors have finished
            held.clear()
            self.scrub()

        return MadeCase(inputs, outputs, rms, done)

    def binder(self, task: Task) -> Binder:
        """For validation: bind(case, device buffers) with the result written to the outputs."""
        return lambda case, device: self.bind(task, case, device, write_outputs=True)
