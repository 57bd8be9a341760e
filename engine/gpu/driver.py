"""A thin, typed layer over `cuda.bindings.driver`: the calls the GPU worker makes, with errors
turned into `CudaError` carrying the driver's error name.

Runs only inside the worker process (engine/gpu/worker_process.py). It sticks to driver calls that exist in
cuda-bindings 13.0 through the newest, so it runs on the GPU image's older stack as well.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from dataclasses import dataclass
from typing import Any

from cuda.bindings import driver as cu

from cuda_llm.engine.gpu.arena import DeviceArena
from cuda_llm.engine.task.dtypes import SCALAR_TYPES

# A loaded module's handle (cuda-bindings' CUmodule): the bindings carry no type information, so the
# name says what the value is where a signature passes one on.
CuModule = Any

# After these the CUDA context is unusable for the rest of the process (measured: even a primary
# context reset does not recover it), so the worker reports the fault and exits.
STICKY_ERRORS = frozenset(
    {
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_INVALID_PC",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "CUDA_ERROR_ECC_UNCORRECTABLE",
        "CUDA_ERROR_CONTAINED",
        "CUDA_ERROR_UNKNOWN",
    }
)

# How the worker waits for the GPU: spin briefly (most runs end within microseconds), then sleep in
# short steps so a long kernel does not burn a host core, while a hang is still noticed.
_SPIN_S = 0.002
_POLL_SLEEP_S = 0.0005

_CTYPES: dict[str, type] = {"ptr": ctypes.c_void_p} | {s.name: getattr(ctypes, s.ctypes) for s in SCALAR_TYPES.values()}


class CudaError(RuntimeError):
    def __init__(self, name: str, call: str) -> None:
        self.name = name
        self.call = call
        super().__init__(f"{name} in {call}")

    @property
    def sticky(self) -> bool:
        return self.name in STICKY_ERRORS


class KernelTimeout(RuntimeError):
    """The GPU did not finish within the time limit: a hung or endless kernel."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"the kernel was still running after {seconds:g} s")


def is_fatal(exc: BaseException) -> bool:
    """After a hang or a sticky error nothing may touch the context again: even cuMemFree would wait
    for (or fail on) the kernel that is still running. The worker only reports and exits."""
    return isinstance(exc, KernelTimeout) or (isinstance(exc, CudaError) and exc.sticky)


def _name(err: Any) -> str:
    member = getattr(err, "name", None)  # a CUresult member is named as cuGetErrorName names it,
    if isinstance(member, str):  # with no call into the driver library (absent on a CPU-only host)
        return member
    ok, name = cu.cuGetErrorName(err)
    if ok == cu.CUresult.CUDA_SUCCESS and name:
        return name.decode()
    return str(err)


def check(result: tuple, call: str) -> Any:
    """Unwrap a cuda.bindings result tuple, raising CudaError on failure."""
    err = result[0]
    if err != cu.CUresult.CUDA_SUCCESS:
        raise CudaError(_name(err), call)
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def driver_available() -> str | None:
    """None when a CUDA driver and a device are usable, else the reason in a few words."""
    try:
        err = cu.cuInit(0)[0]
    except Exception:  # the driver library itself is missing
        return "no CUDA driver"
    if err != cu.CUresult.CUDA_SUCCESS:
        return f"CUDA driver unusable ({_name(err)})"
    count = cu.cuDeviceGetCount()
    if count[0] != cu.CUresult.CUDA_SUCCESS or count[1] == 0:
        return "no CUDA device"
    return None


# Every buffer starts on a 2 MiB boundary (a large page), so every program timed against another
# finds its buffers at the same alignment. The speed of atomics depends on the address: the
# histogram baseline's 1 KB of bins runs 5.3 ms at a 1 KB-aligned address and 3.0 ms 512 bytes
# further on (H200, bench notes in docs/baselines.md). A small allocation is otherwise placed
# wherever the driver's sub-allocator has room, which differs from program to program.
BUFFER_ALIGNMENT = 2 * 1024 * 1024


# Freed device memory a worker keeps for reuse (engine/gpu/arena.py), as a share of the GPU's memory:
# the heaviest round (a timing size's buffers on 4 placements for 10 programs, under the profiler's
# placement_memory_share of the free memory, plus validation's buffers) fits, and the other half of
# the GPU stays free for other processes. Idle buffers count as free memory for the profiler.
IDLE_MEMORY_SHARE = 0.5


def allocated_bytes(nbytes: int) -> int:
    """Device memory Context.alloc takes for a buffer of `nbytes` (alignment slack included)."""
    return max(nbytes, 4) + BUFFER_ALIGNMENT


@dataclass
class DeviceBuffer:
    ptr: int  # aligned to BUFFER_ALIGNMENT
    nbytes: int
    base: int = 0  # what cuMemAlloc returned (0: ptr itself)


class Context:
    """The worker's CUDA context on one device, with one stream all harness work goes through."""

    def __init__(self, index: int) -> None:
        check(cu.cuInit(0), "cuInit")
        self.index = index
        self.device = check(cu.cuDeviceGet(index), "cuDeviceGet")
        self.ctx = check(cu.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain")
        check(cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate")
        # A persisting-L2 window left by anyone would survive our flush and inflate figures.
        # GPUs without a persisting L2 refuse the limit; there is nothing to reset on them.
        with contextlib.suppress(CudaError):
            check(cu.cuCtxSetLimit(cu.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0), "cuCtxSetLimit")
        # Freed buffers are kept (wiped) for the next request of their size: engine/gpu/arena.py.
        self.arena: DeviceArena[DeviceBuffer] = DeviceArena(
            self._alloc_new,
            self._free_now,
            self._wipe,
            allocated_bytes,
            int(self.total_memory() * IDLE_MEMORY_SHARE),
            lambda exc: isinstance(exc, CudaError) and exc.name == "CUDA_ERROR_OUT_OF_MEMORY",
        )

    # ---- device properties -------------------------------------------------------------
    def attribute(self, name: str) -> int:
        attr = getattr(cu.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(check(cu.cuDeviceGetAttribute(attr, self.device), f"cuDeviceGetAttribute({name})"))

    def name(self) -> str:
        raw = check(cu.cuDeviceGetName(256, self.device), "cuDeviceGetName")
        return raw.split(b"\0", 1)[0].decode(errors="replace")

    def pci_bus_id(self) -> str:
        raw = check(cu.cuDeviceGetPCIBusId(64, self.device), "cuDeviceGetPCIBusId")
        return (raw if isinstance(raw, bytes) else bytes(raw)).split(b"\0", 1)[0].decode()

    def uuid(self) -> str:
        u = check(cu.cuDeviceGetUuid(self.device), "cuDeviceGetUuid")
        raw = bytes(u.bytes) if hasattr(u, "bytes") else bytes(u)
        h = raw.hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def driver_version(self) -> int:
        return int(check(cu.cuDriverGetVersion(), "cuDriverGetVersion"))

    def total_memory(self) -> int:
        return int(check(cu.cuDeviceTotalMem(self.device), "cuDeviceTotalMem"))

    def free_memory(self) -> int:
        """Device memory free for this worker: the driver's free memory and the arena's idle buffers."""
        free, _total = check(cu.cuMemGetInfo(), "cuMemGetInfo")
        return int(free) + self.arena.idle_bytes

    # ---- memory ----------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> DeviceBuffer:
        """A buffer of `nbytes`: an idle one of that size (wiped when it was freed), else a new one."""
        return self.arena.take(nbytes)

    def free(self, buf: DeviceBuffer) -> None:
        """Wipe the buffer and keep it for the next request of its size (stream-ordered: work queued
        on it before finishes first)."""
        self.arena.give(buf)

    def _alloc_new(self, nbytes: int) -> DeviceBuffer:
        # Zero-byte buffers still need a distinct, valid pointer. The slack lets the buffer start
        # on an aligned address whatever the driver returns.
        base = int(check(cu.cuMemAlloc(allocated_bytes(nbytes)), "cuMemAlloc"))
        ptr = -(-base // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT
        return DeviceBuffer(ptr, nbytes, base)

    def _free_now(self, buf: DeviceBuffer) -> None:
        check(cu.cuMemFree(buf.base or buf.ptr), "cuMemFree")

    def _wipe(self, buf: DeviceBuffer) -> None:
        # The whole allocation, the alignment slack around the buffer included.
        self.zero(buf.base or buf.ptr, allocated_bytes(buf.nbytes) if buf.base else buf.nbytes)

    def pin(self, host: Any) -> bool:
        """Page-lock a host array, so copies to and from it go by DMA at the link's speed instead of
        through the driver's staging buffer (several times slower, and it makes workers on two GPUs
        contend for host memory bandwidth). False, and nothing changed, when the driver refuses."""
        err = cu.cuMemHostRegister(host.ctypes.data, host.nbytes, 0)[0]
        return err == cu.CUresult.CUDA_SUCCESS

    def unpin(self, host: Any) -> None:
        check(cu.cuMemHostUnregister(host.ctypes.data), "cuMemHostUnregister")

    def upload(self, buf: DeviceBuffer, host: Any) -> None:
        if host.nbytes:
            check(cu.cuMemcpyHtoDAsync(buf.ptr, host.ctypes.data, host.nbytes, self.stream), "cuMemcpyHtoD")

    def download(self, buf: DeviceBuffer, host: Any, timeout_s: float) -> None:
        if host.nbytes:
            check(cu.cuMemcpyDtoHAsync(host.ctypes.data, buf.ptr, host.nbytes, self.stream), "cuMemcpyDtoH")
        self.wait(timeout_s)

    def copy(self, dst: DeviceBuffer, src: DeviceBuffer) -> None:
        """Device-to-device copy of the smaller of the two buffers (stream-ordered)."""
        n = min(dst.nbytes, src.nbytes)
        if n:
            check(cu.cuMemcpyDtoDAsync(dst.ptr, src.ptr, n, self.stream), "cuMemcpyDtoD")

    def fill32(self, buf: DeviceBuffer, word: int, nbytes: int | None = None) -> None:
        """Fill with a repeated 32-bit word (the tail, if any, with its low bytes)."""
        n = buf.nbytes if nbytes is None else nbytes
        words, rest = divmod(n, 4)
        if words:
            check(cu.cuMemsetD32Async(buf.ptr, word & 0xFFFFFFFF, words, self.stream), "cuMemsetD32")
        if rest:
            check(cu.cuMemsetD8Async(buf.ptr + 4 * words, word & 0xFF, rest, self.stream), "cuMemsetD8")

    def fill_rows32(self, ptr: int, pitch: int, word: int, width_words: int, rows: int) -> None:
        """Fill `rows` rows of `width_words` 32-bit words each, `pitch` bytes apart, with one word."""
        if width_words and rows:
            check(cu.cuMemsetD2D32Async(ptr, pitch, word & 0xFFFFFFFF, width_words, rows, self.stream), "cuMemsetD2D32")

    def fill_rows16(self, ptr: int, pitch: int, half: int, width_halves: int, rows: int) -> None:
        if width_halves and rows:
            check(cu.cuMemsetD2D16Async(ptr, pitch, half & 0xFFFF, width_halves, rows, self.stream), "cuMemsetD2D16")

    def fill16(self, buf: DeviceBuffer, half: int) -> None:
        check(cu.cuMemsetD16Async(buf.ptr, half & 0xFFFF, buf.nbytes // 2, self.stream), "cuMemsetD16")

    def wipe_slack(self, buf: DeviceBuffer) -> None:
        """Zero the alignment slack around a buffer (what the allocation holds beyond `nbytes`): device
        memory a kernel can write without a fault, so a result kept there would outlive the run."""
        if not buf.base:
            return
        end = buf.base + allocated_bytes(buf.nbytes)
        self.zero(buf.base, buf.ptr - buf.base)
        self.zero(buf.ptr + buf.nbytes, end - (buf.ptr + buf.nbytes))

    def zero(self, ptr: int, nbytes: int) -> None:
        if nbytes:
            check(cu.cuMemsetD8Async(ptr, 0, nbytes, self.stream), "cuMemsetD8")

    # ---- modules and launches --------------------------------------------------------------
    def load_module(self, cubin: bytes) -> CuModule:
        return check(cu.cuModuleLoadData(cubin), "cuModuleLoadData")

    def unload_module(self, module: CuModule) -> None:
        check(cu.cuModuleUnload(module), "cuModuleUnload")

    def module_global(self, module: Any, name: str) -> tuple[int, int] | None:
        """(device address, bytes) of a module-scope variable, or None when the module does not
        export that name (a `static` variable has local binding)."""
        result = cu.cuModuleGetGlobal(module, name.encode())
        if result[0] == cu.CUresult.CUDA_ERROR_NOT_FOUND:
            return None
        ptr, size = check(result, f"cuModuleGetGlobal({name})")
        return int(ptr), int(size)

    def copy_raw(self, dst: int, src: int, nbytes: int) -> None:
        """Device-to-device copy between raw addresses (stream-ordered)."""
        if nbytes:
            check(cu.cuMemcpyDtoDAsync(dst, src, nbytes, self.stream), "cuMemcpyDtoD")

    def function(self, module: Any, name: str) -> Any:
        return check(cu.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name})")

    def function_attribute(self, func: Any, name: str) -> int:
        attr = getattr(cu.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        return int(check(cu.cuFuncGetAttribute(attr, func), f"cuFuncGetAttribute({name})"))

    def set_max_dynamic_shared(self, func: Any, nbytes: int) -> None:
        check(
            cu.cuFuncSetAttribute(
                func, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes
            ),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
        )

    def occupancy(self, func: Any, block_threads: int, dynamic_shared: int) -> int:
        return int(
            check(
                cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, block_threads, dynamic_shared),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            )
        )

    def launch(
        self, func: Any, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int, params: Any
    ) -> None:
        check(cu.cuLaunchKernel(func, *grid, *block, shared, self.stream, params, 0), "cuLaunchKernel")

    # ---- synchronisation and timing --------------------------------------------------------
    def wait(self, timeout_s: float) -> None:
        """Wait for the stream with a deadline, so a hung kernel is reported, not waited on forever."""
        start = time.monotonic()
        while True:
            err = cu.cuStreamQuery(self.stream)[0]
            if err == cu.CUresult.CUDA_SUCCESS:
                return
            if err != cu.CUresult.CUDA_ERROR_NOT_READY:
                raise CudaError(_name(err), "cuStreamQuery")
            elapsed = time.monotonic() - start
            if elapsed > timeout_s:
                raise KernelTimeout(timeout_s)
            if elapsed > _SPIN_S:
                time.sleep(_POLL_SLEEP_S)

    def event(self) -> Any:
        return check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate")

    def record(self, event: Any) -> None:
        check(cu.cuEventRecord(event, self.stream), "cuEventRecord")

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(check(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))

    def capture_graph(self, body: Any) -> Any:
        """Capture what `body()` enqueues on the stream into an executable graph."""
        check(
            cu.cuStreamBeginCapture(self.stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture",
        )
        try:
            body()
        finally:
            graph = check(cu.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
        try:
            return check(cu.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        finally:
            cu.cuGraphDestroy(graph)

    def launch_graph(self, graph_exec: Any) -> None:
        check(cu.cuGraphLaunch(graph_exec, self.stream), "cuGraphLaunch")

    def destroy_graph(self, graph_exec: Any) -> None:
        cu.cuGraphExecDestroy(graph_exec)

    def synchronize(self) -> None:
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")

    def reset_persisting_l2(self) -> None:
        """Return every persisting L2 line to normal status (takes effect at once: the caller makes
        sure no kernel is running). GPUs without a persisting L2 refuse it; there is nothing to do."""
        with contextlib.suppress(CudaError):
            check(cu.cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache")


def pack_params(values: list[tuple[str, int | float]]) -> Any:
    """Kernel parameters as cuLaunchKernel takes them: a (values, ctypes types) pair."""
    return (tuple(v for _, v in values), tuple(_CTYPES[t] for t, _ in values))
