"""The GPU worker process: one per GPU, driven by the engine over its stdin/stdout pipes.

It owns the CUDA context. A sticky CUDA error (illegal address, trap, ...) or a hung kernel poisons
that context for the rest of the process, so the worker answers with the fault and exits; the
engine starts a fresh one for the next candidate (engine/gpu/client.py).

Protocol: length-prefixed pickles (engine/gpu/wire.py). The first message is a
WorkerHello; each later one a request, answered by one Response. Device-side printf writes to the
C stdout, which is redirected to a file so it can never corrupt the protocol.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import os
import sys
import time
import traceback
from typing import IO, TYPE_CHECKING, Any

from cuda_llm.engine.gpu.wire import read_message, write_message

if TYPE_CHECKING:  # the worker imports the rest where it is used: it starts before CUDA is loaded
    from cuda_llm.engine.gpu.protocol import (
        Fault,
        PeaksRequest,
        ProfileRequest,
        Response,
        TorchCompileRequest,
        ValidateRequest,
    )


class WorkerState:
    """Everything the worker keeps between requests."""

    def __init__(self, device_index: int, settings: Any) -> None:
        from cuda_llm.engine.compile import nvrtc_library
        from cuda_llm.engine.gpu.driver import Context
        from cuda_llm.engine.gpu.expected_vault import EXPECTED_VAULT_SHARE, ExpectedVault
        from cuda_llm.engine.gpu.harness import Harness, compile_harness
        from cuda_llm.engine.gpu.input_masters import INPUT_MASTERS_SHARE, InputMasters
        from cuda_llm.engine.gpu.protocol import DeviceInfo
        from cuda_llm.engine.gpu.reference_cache import ReferenceCache
        from cuda_llm.engine.gpu.telemetry import Nvml

        self.settings = settings
        self.ctx = ctx = Context(device_index)
        major = ctx.attribute("COMPUTE_CAPABILITY_MAJOR")
        minor = ctx.attribute("COMPUTE_CAPABILITY_MINOR")
        drv = ctx.driver_version()
        nv_major, nv_minor = nvrtc_library.version()
        self.info = DeviceInfo(
            index=device_index,
            name=ctx.name(),
            uuid=ctx.uuid(),
            pci_bus_id=ctx.pci_bus_id(),
            arch=f"sm_{major}{minor}",
            compute_capability=(major, minor),
            sm_count=ctx.attribute("MULTIPROCESSOR_COUNT"),
            warp_size=ctx.attribute("WARP_SIZE"),
            max_threads_per_block=ctx.attribute("MAX_THREADS_PER_BLOCK"),
            max_block_dims=(
                ctx.attribute("MAX_BLOCK_DIM_X"),
                ctx.attribute("MAX_BLOCK_DIM_Y"),
                ctx.attribute("MAX_BLOCK_DIM_Z"),
            ),
            max_grid_dims=(
                ctx.attribute("MAX_GRID_DIM_X"),
                ctx.attribute("MAX_GRID_DIM_Y"),
                ctx.attribute("MAX_GRID_DIM_Z"),
            ),
            shared_per_block=ctx.attribute("MAX_SHARED_MEMORY_PER_BLOCK"),
            shared_per_block_optin=ctx.attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            shared_per_sm=ctx.attribute("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
            registers_per_block=ctx.attribute("MAX_REGISTERS_PER_BLOCK"),
            registers_per_sm=ctx.attribute("MAX_REGISTERS_PER_MULTIPROCESSOR"),
            max_threads_per_sm=ctx.attribute("MAX_THREADS_PER_MULTIPROCESSOR"),
            max_blocks_per_sm=ctx.attribute("MAX_BLOCKS_PER_MULTIPROCESSOR"),
            l2_bytes=ctx.attribute("L2_CACHE_SIZE"),
            memory_bytes=ctx.total_memory(),
            sm_clock_mhz=ctx.attribute("CLOCK_RATE") // 1000,
            memory_clock_mhz=ctx.attribute("MEMORY_CLOCK_RATE") // 1000,
            memory_bus_bits=ctx.attribute("GLOBAL_MEMORY_BUS_WIDTH"),
            driver_version=f"{drv // 1000}.{drv % 1000 // 10}",
            nvrtc_version=f"{nv_major}.{nv_minor}",
        )
        self.harness = Harness.load(
            ctx,
            compile_harness(self.info.arch),
            self.info.l2_bytes,
            settings.profile.l2_flush_factor,
            self.info.sm_count,
            self.info.shared_per_block_optin,
        )
        self.refs = ReferenceCache(pinner=ctx)
        # The cases' inputs on the device, copied into each candidate's buffers (input_masters.py).
        self.inputs = InputMasters(ctx, int(self.info.memory_bytes * INPUT_MASTERS_SHARE))
        # The expected values on the device too, in a context no candidate runs in (expected_vault.py).
        self.vault = ExpectedVault.open(ctx, int(self.info.memory_bytes * EXPECTED_VAULT_SHARE))
        # An imported task's cases, made on the device and kept there (device_cases.py); they need the
        # vault's unmapped memory to keep the expected values out of every kernel's reach.
        self.device_cases = self._device_cases()
        self.nvml = Nvml.open(self.info.pci_bus_id, device_index)
        # The physical DRAM limit: NVML's maximum memory clock and bus width where NVML answers
        # (CUDA 13 deprecates the driver's memory-clock attribute), else the driver's figures.
        mem_clock = self.nvml.max_memory_clock() if self.nvml else None
        bus_bits = self.nvml.memory_bus_width() if self.nvml else None
        if mem_clock and bus_bits:
            self.info = dataclasses.replace(self.info, memory_clock_mhz=mem_clock, memory_bus_bits=bus_bits)
        self._tasks: dict[str, Any] = {}
        self._libraries: dict[str, Any] = {}
        self._eager: dict[str, Any] = {}
        self._profiler: Any = None  # the Profiler, made on first use (it imports more)

    def _device_cases(self) -> Any:
        from cuda_llm.engine.gpu.device_cases import DEVICE_CASES_SHARE, DeviceCases
        from cuda_llm.engine.gpu.expected_vault import Sealed, UnmappedMemory

        if self.vault is None or not isinstance(self.vault.memory, UnmappedMemory):
            return None
        from cuda_llm.engine.gpu.driver import CudaError

        memory = self.vault.memory
        budget = int(self.info.memory_bytes * DEVICE_CASES_SHARE)
        ctx = self.ctx

        def seal(src: Any, count: int) -> Sealed:
            try:
                return Sealed(memory, src, count)
            except CudaError as exc:
                if exc.name != "CUDA_ERROR_OUT_OF_MEMORY":
                    raise
            ctx.arena.release_idle()  # the worker's idle buffers (engine/gpu/arena.py) go back first
            return Sealed(memory, src, count)

        return DeviceCases(ctx, seal, budget, ctx.free_memory)

    def task_cases(self, task: Any) -> Any:
        """An imported task's cases on the device (device_cases.TaskCases), or None: a task of the
        library's, or a GPU without virtual memory management (the host path serves it)."""
        from cuda_llm.engine.gpu.device_cases import TaskCases

        if task.pytorch_module is None or self.device_cases is None:
            return None
        return TaskCases(
            self.device_cases, self.eager(task), task, self.harness, self.settings.validation.launch_timeout_s
        )

    def task(self, folder: str) -> Any:
        from cuda_llm.engine.task.loader import load_task

        task = load_task(folder, self.settings.validation)
        cached = self._tasks.get(folder)
        if cached is not None and cached.fingerprint == task.fingerprint:
            return cached
        self._tasks[folder] = task
        return task

    def library(self, task: Any) -> tuple[Any, str | None, str | None]:
        """(the task's vendor-library program or None, its name, why there is none)."""
        from cuda_llm.engine.gpu.library import Library, LibraryError, cupy_missing, library_name

        name = library_name(task)
        if name is None:
            return None, None, f"task {task.name!r} has no vendor-library reference (no library.py)"
        missing = cupy_missing()
        if missing:
            return None, name, missing
        key = f"{task.folder}|{task.fingerprint}"
        if key not in self._libraries:
            try:
                self._libraries[key] = Library(self.ctx, task)
            except (LibraryError, ImportError, OSError, RuntimeError) as exc:
                return None, name, f"{name} is unavailable here: {type(exc).__name__}: {exc}"
        return self._libraries[key], name, None

    def eager(self, task: Any) -> Any:
        """PyTorch eager, the baseline of a task imported from a module (engine/gpu/eager.py)."""
        from cuda_llm.engine.gpu.eager import EagerProgram

        key = f"{task.folder}|{task.fingerprint}"
        if key not in self._eager:
            self._eager.clear()  # one imported task at a time keeps its weights on the device
            if self.device_cases is not None:
                self.device_cases.clear()  # ...and its cases
            self._eager[key] = EagerProgram(self.ctx, task)
        return self._eager[key]

    def torch_compiled(self, task: Any) -> tuple[Any, str | None]:
        """(torch.compile's program of an imported task, or None and why there is none)."""
        from cuda_llm.engine.gpu.torch_compile import CompiledProgram

        if task.pytorch_module is None:
            return None, f"task {task.name!r} is not imported from a PyTorch module"
        program = self.eager(task)
        if program.compiled is None:
            return None, "torch.compile was not compiled in this GPU worker (it restarted, or took another task, since)"
        return CompiledProgram(program), None

    @property
    def profiler(self) -> Any:
        if self._profiler is None:
            from cuda_llm.engine.gpu.profile import Profiler

            self._profiler = Profiler(
                self.ctx,
                self.info,
                self.harness,
                self.refs,
                self.nvml,
                self.settings.profile,
                self.settings.validation,
                self.inputs,
                self.vault,
            )
        return self._profiler


def _printf_bytes() -> int:
    """Bytes the kernels printed since the last call (the file behind fd 1), then start afresh."""
    try:
        ctypes.CDLL(None).fflush(None)
        size = os.fstat(1).st_size
        os.ftruncate(1, 0)
        os.lseek(1, 0, os.SEEK_SET)
        return size
    except OSError:
        return 0


def _fault_response(exc: BaseException, case: str | None) -> tuple[Fault, bool]:
    """Map an exception raised while running a candidate to (Fault, fatal)."""
    from cuda_llm.engine.gpu.driver import CudaError, KernelTimeout
    from cuda_llm.engine.gpu.protocol import Fault
    from cuda_llm.engine.gpu.runner import PlanError

    where = f" at {case}" if case else ""
    if isinstance(exc, PlanError):
        return Fault("launch_error", "plan", str(exc), case), False
    if isinstance(exc, KernelTimeout):
        return Fault(
            "timed_out",
            "TIMEOUT",
            f"timed out{where}: {exc} (an endless loop, or a deadlock between blocks waiting on each other)",
            case,
        ), True
    if isinstance(exc, CudaError):
        if exc.sticky:
            return Fault("crashed", exc.name, f"crashed{where} with {exc.name} ({_explain(exc.name)})", case), True
        return Fault(
            "launch_error", exc.name, f"the launch failed{where} with {exc.name} ({_explain(exc.name)})", case
        ), False
    raise exc


def _explain(name: str) -> str:
    return {
        "CUDA_ERROR_ILLEGAL_ADDRESS": "a read or write outside any allocation",
        "CUDA_ERROR_MISALIGNED_ADDRESS": "an access not aligned to its size, e.g. a float4 load "
        "from an address that is not a multiple of 16",
        "CUDA_ERROR_LAUNCH_FAILED": "a trap or another unrecoverable fault in the kernel",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION": "an illegal instruction",
        "CUDA_ERROR_ASSERT": "a device-side assert failed",
        "CUDA_ERROR_HARDWARE_STACK_ERROR": "stack overflow (deep recursion or large local arrays)",
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "too many registers or too much shared memory for this block size",
        "CUDA_ERROR_INVALID_VALUE": "a launch configuration the device refuses",
        "CUDA_ERROR_OUT_OF_MEMORY": "the GPU ran out of memory",
        "CUDA_ERROR_INVALID_IMAGE": "the compiled module does not load on this GPU",
        "CUDA_ERROR_NO_BINARY_FOR_GPU": "the module was compiled for another architecture",
    }.get(name, "see the CUDA driver documentation")


def _context_healthy(state: WorkerState) -> bool:
    try:
        state.ctx.synchronize()
        return True
    except Exception:
        return False


def _handle(state: WorkerState, req: ValidateRequest | ProfileRequest | PeaksRequest | TorchCompileRequest) -> Response:
    """The request's handler, chosen by its type."""
    from cuda_llm.engine.gpu import protocol as P

    if isinstance(req, P.ValidateRequest):
        return handle_validate(state, req)
    if isinstance(req, P.ProfileRequest):
        return handle_profile(state, req)
    if isinstance(req, P.PeaksRequest):
        return handle_peaks(state, req)
    return handle_torch_compile(state, req)


def handle_validate(state: WorkerState, req: ValidateRequest) -> Response:
    from cuda_llm.engine.compile.cubin import CubinError, module_memory
    from cuda_llm.engine.contract.limits import check_every_size, device_limits
    from cuda_llm.engine.gpu.device_state import DeviceState
    from cuda_llm.engine.gpu.driver import CudaError, KernelTimeout
    from cuda_llm.engine.gpu.eager import is_eager_baseline
    from cuda_llm.engine.gpu.library import LibraryError
    from cuda_llm.engine.gpu.protocol import Response, ValidationReport, Verdict
    from cuda_llm.engine.gpu.runner import PlanError
    from cuda_llm.engine.gpu.validate import validate

    task = state.task(req.task_folder)
    # An imported task's baseline is PyTorch eager: it is validated in place of baseline.cu.
    binder = state.eager(task).binder(task) if is_eager_baseline(task, req.program.label) else None
    _printf_bytes()
    module = None
    device_state = None
    fatal = False
    load_s = 0.0
    try:
        if binder is None:
            # The module's __device__ variables count against the plan's memory allowance before
            # they are allocated (the judge counted them too; a program from elsewhere may not be).
            check_every_size(req.program.plan, task, device_limits(state.info), None, module_memory(req.program.cubin))
        loaded = time.monotonic()
        module = state.ctx.load_module(req.program.cubin)
        load_s = time.monotonic() - loaded
        if binder is None:
            device_state = DeviceState.capture(state.ctx, module, req.program.cubin)
        report = validate(
            state.ctx,
            state.info,
            state.harness,
            state.refs,
            task,
            module,
            req.program.plan,
            state.settings.validation,
            binder,
            state.inputs,
            state.vault,
            device_state,
            device_cases=state.task_cases(task),
        )
    except CubinError as exc:
        report = ValidationReport(verdict="launch_error", summary=f"the compiled module could not be read: {exc}")
    except LibraryError as exc:
        report = ValidationReport(verdict="launch_error", summary=str(exc))
    except (CudaError, KernelTimeout, PlanError) as exc:
        fault, fatal = _fault_response(exc, getattr(exc, "case", None))
        if not fatal and not _context_healthy(state):
            fatal = True
        verdict: Verdict = fault.kind if fault.kind in ("crashed", "timed_out") else "launch_error"
        report = ValidationReport(verdict=verdict, summary=fault.message, fault=fault)
    finally:
        if device_state is not None and not fatal:
            with contextlib.suppress(CudaError):
                device_state.release()
        if module is not None and not fatal:
            try:
                state.ctx.unload_module(module)
            except CudaError:
                fatal = True
    report = dataclasses.replace(report, printf_bytes=_printf_bytes(), load_s=load_s)
    return Response(ok=True, result=report, fatal=fatal)


def handle_profile(state: WorkerState, req: ProfileRequest) -> Response:
    from cuda_llm.engine.gpu.device_state import DeviceState
    from cuda_llm.engine.gpu.driver import CudaError, KernelTimeout
    from cuda_llm.engine.gpu.eager import is_eager_baseline
    from cuda_llm.engine.gpu.protocol import Response

    task = state.task(req.task_folder)
    modules = []
    states: dict[str, Any] = {}
    try:
        programs = []
        # An imported task's baseline is PyTorch eager, timed in place of baseline.cu.
        eager = state.eager(task) if any(is_eager_baseline(task, p.label) for p in req.programs) else None
        for p in req.programs:
            if eager is not None and is_eager_baseline(task, p.label):
                continue
            module = state.ctx.load_module(p.cubin)
            modules.append(module)
            programs.append((p.label, module, p.plan, p.trusted))
            # Validated programs only: each one's variables were located when it was validated.
            states[p.label] = DeviceState.capture(state.ctx, module, p.cubin)
        library, name, note = state.library(task) if req.library else (None, None, None)
        compiled, compiled_note = state.torch_compiled(task) if req.torch_compile else (None, None)
        report = state.profiler.profile(task, programs, library, eager, compiled, states, cases=state.task_cases(task))
        if req.library:
            report = dataclasses.replace(report, library_name=name, library_note=note)
        if compiled_note:
            report = dataclasses.replace(report, torch_compile_note=compiled_note)
        return Response(ok=True, result=report)
    except (CudaError, KernelTimeout) as exc:
        fault, fatal = _fault_response(exc, getattr(exc, "case", None))
        if fatal:
            modules = []  # nothing may touch the context any more
            states = {}
        return Response(ok=False, error=fault.message, result=fault, fatal=fatal or not _context_healthy(state))
    finally:
        for device_state in states.values():
            with contextlib.suppress(CudaError):
                device_state.release()
        for module in modules:
            with contextlib.suppress(CudaError):
                state.ctx.unload_module(module)


def handle_torch_compile(state: WorkerState, req: TorchCompileRequest) -> Response:
    """Compile an imported task's module with torch.compile (engine/gpu/torch_compile.py) and keep it
    for this worker's later profiles: answered with None when ready, else why there is none."""
    from cuda_llm.engine.gpu.protocol import Response
    from cuda_llm.engine.gpu.torch_compile import compile_for

    task = state.task(req.task_folder)
    if task.pytorch_module is None:
        return Response(ok=True, result=f"task {task.name!r} is not imported from a PyTorch module")
    try:
        program = state.eager(task)
    except Exception as exc:  # PyTorch missing or broken in the worker's environment
        from cuda_llm.engine.core.errors import describe

        return Response(ok=True, result=f"torch.compile could not start: {describe(exc)}")
    if program.compiled is not None:
        return Response(ok=True, result=None)
    return Response(ok=True, result=compile_for(program, task, state.refs, state.task_cases(task), state.harness))


def handle_peaks(state: WorkerState, req: PeaksRequest) -> Response:
    from cuda_llm.engine.gpu import peaks
    from cuda_llm.engine.gpu.protocol import Response

    cached = None if req.force else peaks.load_cached(state.info)
    if cached is None:
        cached = peaks.measure(state.ctx, state.info, state.harness)
        # A cache that cannot be written costs the next session a measurement, nothing more.
        with contextlib.suppress(OSError):
            peaks.store(state.info, cached)
    return Response(ok=True, result=cached)


def serve(proto_in: IO[bytes], proto_out: IO[bytes]) -> int:
    from cuda_llm.engine.gpu import protocol as P

    hello = read_message(proto_in)
    try:
        state = WorkerState(hello.device_index, hello.settings)
    except Exception as exc:
        write_message(proto_out, P.Response(ok=False, error=f"GPU worker could not start: {exc}", fatal=True))
        traceback.print_exc()
        return 2
    write_message(proto_out, P.Response(ok=True, result=state.info))
    while True:
        try:
            req = read_message(proto_in)
        except EOFError:
            return 0
        if isinstance(req, P.ShutdownRequest):
            write_message(proto_out, P.Response(ok=True))
            return 0
        if not isinstance(req, P.ValidateRequest | P.ProfileRequest | P.PeaksRequest | P.TorchCompileRequest):
            write_message(proto_out, P.Response(ok=False, error=f"unknown request {type(req).__name__}"))
            continue
        try:
            response = _handle(state, req)
        except Exception as exc:
            traceback.print_exc()
            # A worker-side failure that is not the candidate's: report it and stay up unless the
            # context is gone.
            response = P.Response(ok=False, error=f"{type(exc).__name__}: {exc}", fatal=not _context_healthy(state))
        write_message(proto_out, response)
        if response.fatal:
            # Exit at once: interpreter shutdown would run cuda-bindings' finalisers, which can
            # block on a hung kernel. The driver tears the context down with the process.
            sys.stderr.flush()
            os._exit(3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="cuda-llm GPU worker (started by the engine)")
    parser.add_argument("--printf-log", required=True, help="file that receives device printf output")
    args = parser.parse_args(argv)
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    log_fd = os.open(args.printf_log, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log_fd, 1)
    sys.stdout = sys.stderr  # Python-level prints must not reach the printf log either
    return serve(proto_in, proto_out)


if __name__ == "__main__":
    sys.exit(main())
