"""What one compile returns: plain frozen data, importable without NVRTC (the TUI and the store read
it; only the compiler child process loads libnvrtc)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from cuda_llm.engine.core.errors import UserError

Severity = Literal["error", "warning", "note"]

# The name every candidate is compiled under: diagnostics say `candidate.cu(12): error: ...`.
CANDIDATE_FILE = "candidate.cu"


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    line: int | None  # 1-based line of the candidate; None for ptxas or header diagnostics
    column: int | None  # 1-based, from the caret line NVRTC prints under the source line
    message: str  # one line, e.g. 'identifier "y" is undefined'
    source_line: str | None  # the candidate's own text of that line
    file: str = CANDIDATE_FILE  # a header's name when the error is inside an included header
    detail: str = ""  # EDG's "detected during instantiation of ..." lines, when there are any

    def one_line(self) -> str:
        where = f"{self.file}({self.line})" if self.line is not None else self.file
        return f"{where}: {self.severity}: {self.message}"


@dataclass(frozen=True)
class KernelResources:
    """What ptxas -v reports for one entry function (kernel)."""

    name: str  # the symbol: the plain name for extern "C" kernels, else the mangled one
    registers: int
    shared_bytes: int  # static shared memory (dynamic shared memory comes with the launch)
    stack_frame_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    barriers: int
    cumulative_stack_bytes: int
    constant_bytes: int = 0  # cmem[0]: kernel parameters and driver constants
    # Module-scope __device__ variables this kernel writes: state that survives between launches,
    # so a kernel can return a result cached from an earlier run (a known benchmark cheat).
    writes_device_globals: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceGlobal:
    """A module-scope `__device__` variable (a PTX `.global` declaration, printf's strings aside)."""

    name: str
    size_bytes: int
    written: bool  # some function stores to it (or atomically updates it)


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    arch: str  # "sm_90"
    cubin: bytes | None
    ptx: str | None  # for display only: a newer NVRTC's PTX may not load on an older driver
    log: str  # the NVRTC log (ptxas -v included), trailing NULs stripped, host paths masked
    diagnostics: tuple[Diagnostic, ...]
    kernels: tuple[KernelResources, ...]
    # Kernel name -> byte size of each parameter, from the PTX `.entry` (binds launch arguments).
    ptx_entries: dict[str, tuple[int, ...]]
    nvrtc_version: tuple[int, int]
    options: tuple[str, ...]
    elapsed_s: float
    timed_out: bool = False
    error: str | None = None  # one line saying why ok is False; None when ok
    device_globals: tuple[DeviceGlobal, ...] = ()
    # Reduced-precision arithmetic or conversions found in the PTX (fp16, bf16, tf32, fp8): an
    # fp32 task flags them (docs/architecture.md, "Tasks": fp16/tf32 shortcuts on fp32 tasks must fail).
    precision_hints: tuple[str, ...] = ()
    headers: tuple[str, ...] = field(default=())  # the headers the candidate includes

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "warning")

    @property
    def writes_device_globals(self) -> bool:
        return any(g.written for g in self.device_globals)

    def kernel(self, name: str) -> KernelResources | None:
        return next((k for k in self.kernels if k.name == name), None)


def failed_result(
    arch: str,
    message: str,
    *,
    options: tuple[str, ...] = (),
    elapsed: float = 0.0,
    version: tuple[int, int] = (0, 0),
    headers: tuple[str, ...] = (),
    timed_out: bool = False,
) -> CompileResult:
    """A compile that produced nothing: `message` is both the log and the one-line error."""
    return CompileResult(
        ok=False,
        arch=arch,
        cubin=None,
        ptx=None,
        log=message,
        diagnostics=(),
        kernels=(),
        ptx_entries={},
        nvrtc_version=version,
        options=options,
        elapsed_s=elapsed,
        timed_out=timed_out,
        error=message,
        headers=headers,
    )


class CompilerUnavailableError(UserError):
    """NVRTC cannot be loaded, or the compiler process cannot start: nothing can be compiled."""
