"""The vendor library as a second yardstick: a GPU engineer's first question about a generated
kernel is "how far from cuBLAS (or CUB)?".

A task may ship `library.py` beside its reference: the same computation done by a maintained
library (cuBLAS, CUB, cuSPARSE through CuPy). It declares

    NAME = "cuBLAS SGEMM (through CuPy)"        # what is timed, shown next to its figure
    def bind(cp, bufs, params, stream):         # -> a function that enqueues one run
        ...

`bufs` are CuPy arrays over the very device buffers the profiler owns (the task's shapes and dtypes),
`params` the task's scalars at the size being timed, `stream` the harness stream as a CuPy stream
(already current). `bind` may prepare once what the library needs (a sparse matrix object, a
handle's stream); the returned function must only enqueue work on `stream`, never synchronise.

The profiler times the library's run like any program (L2 flushed, queued behind a delay kernel,
events, placements, interleaved with the baseline) and checks its result against the task's
reference afterwards, with the task's own tolerance. CuPy is an optional extra: without it, or for a
task without library.py, there is simply no library figure, and the reason is given.
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuda_llm.engine.core.extras import install_hint
from cuda_llm.engine.task.model import Task

if TYPE_CHECKING:  # the engine reads library names without a CUDA driver; only the worker binds
    from cuda_llm.engine.gpu.driver import Context, DeviceBuffer

INSTALL_HINT = install_hint("library")
# The label of the library's program in a profile (never a candidate's: labels there are r1-2...).
LIBRARY_LABEL = "library"


class LibraryError(RuntimeError):
    """The library call itself failed (not a CUDA fault of the context): no library figure."""


def cupy_missing() -> str | None:
    """Why the library yardstick cannot run in this environment, or None."""
    if importlib.util.find_spec("cupy") is None:
        return f"CuPy is not installed ({INSTALL_HINT} adds the vendor-library column)"
    return None


def library_file(task: Task) -> Path:
    return task.folder / "library.py"


def library_name(task: Task) -> str | None:
    """The NAME a task's library.py declares, read without importing CuPy; None without one."""
    path = library_file(task)
    if not path.is_file():
        return None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("NAME = "):
            return line.split("=", 1)[1].strip().strip("\"'")
    return path.parent.name


@dataclass
class BoundLibrary:
    """A library run bound to one placement's buffers; duck-types PreparedPlan for the profiler."""

    name: str
    enqueue: Callable[[], None]
    stream: Any
    # How long the host took to queue each run. The profiler's delay kernel must outlast a run's
    # queueing, or host latency would land between the events and count against the library.
    enqueue_times_us: list[float] = field(default_factory=list)
    resources: tuple = ()
    launches: tuple = ()
    scratch: list = field(default_factory=list)
    # Called when the profiler or the validator is done with this binding: device memory the library
    # (or PyTorch) still holds is wiped, so no later candidate finds its results (see release).
    scrub: Callable[[], None] | None = None

    def run(self, ctx: Context) -> None:
        start = time.perf_counter()
        try:
            with self.stream:
                self.enqueue()
        except Exception as exc:
            raise LibraryError(f"{self.name} failed: {type(exc).__name__}: {exc}") from None
        self.enqueue_times_us.append((time.perf_counter() - start) * 1e6)

    @property
    def enqueue_us(self) -> float | None:
        """The usual time to queue one run: the median after the first, which pays one-time set-up
        (a handle, a kernel compiled by CuPy: up to seconds). None until two runs were queued."""
        later = self.enqueue_times_us[1:]
        return float(sorted(later)[len(later) // 2]) if later else None

    def release(self, ctx: Context) -> None:
        """Its buffers are the caller's (wiped when given back); what the library allocated itself and
        may still hold (PyTorch's cache, the last result it keeps) is wiped here."""
        if self.scrub is not None:
            self.scrub()


class _Lease:
    """Owns one buffer CuPy allocated: given back (and so wiped) when CuPy drops its memory."""

    def __init__(self, ctx: Context, buf: DeviceBuffer) -> None:
        self.ctx = ctx
        self.buf = buf

    def __del__(self) -> None:
        # A context already lost (the worker is exiting) has nothing to give back to.
        with contextlib.suppress(Exception):
            self.ctx.free(self.buf)


class Library:
    """The library program of one task in this worker: CuPy set up once, bound per placement."""

    def __init__(self, ctx: Context, task: Task) -> None:
        import cupy as cp

        from cuda_llm.engine.task.reference import load_module_from

        self.cp = cp
        self.ctx = ctx
        self.module = load_module_from(library_file(task), f"library_{task.name}_{task.fingerprint}")
        self.name = str(getattr(self.module, "NAME", task.name))
        cp.cuda.Device(ctx.index).use()
        # CUB's device-wide reductions, scans and histograms are what a library user gets; CuPy
        # uses them only when asked (a setting of this worker process alone).
        cp._core.set_reduction_accelerators(["cub"])
        cp._core.set_routine_accelerators(["cub"])
        self.stream = cp.cuda.ExternalStream(int(ctx.stream), ctx.index)
        # CuPy's temporaries come from this worker's buffers, so they are wiped when CuPy lets go of
        # them, like every buffer of ours: a library's temporaries can hold the answer itself (a
        # softmax's last division), and CuPy's own pool would keep them mapped, unwiped, while the
        # next candidate runs (a process-wide setting of this worker process).
        cp.cuda.set_allocator(self._allocate)

    def _allocate(self, nbytes: int) -> Any:
        buf = self.ctx.alloc(nbytes)
        mem = self.cp.cuda.UnownedMemory(buf.ptr, max(nbytes, 1), _Lease(self.ctx, buf), device_id=self.ctx.index)
        return self.cp.cuda.MemoryPointer(mem, 0)

    def array(self, buf: DeviceBuffer, shape: tuple[int, ...], dtype: Any) -> Any:
        cp = self.cp
        mem = cp.cuda.UnownedMemory(buf.ptr, max(buf.nbytes, 1), owner=None, device_id=self.ctx.index)
        return cp.ndarray(shape, dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, 0))

    def bind(self, task: Task, case: Any, device: dict[str, DeviceBuffer]) -> BoundLibrary:
        from cuda_llm.engine.task.dtypes import DTYPES

        env = task.env(case)
        bufs = {b.name: self.array(device[b.name], b.shape_for(env), DTYPES[b.dtype].numpy) for b in task.buffers}
        try:
            with self.stream:
                enqueue = self.module.bind(self.cp, bufs, task.params(case), self.stream)
        except Exception as exc:
            raise LibraryError(f"{self.name} could not be set up: {type(exc).__name__}: {exc}") from None
        return BoundLibrary(self.name, enqueue, self.stream)
