"""A bound launch plan at concrete sizes, checked against what a GPU can launch: grid and block
dimensions, threads per block, shared memory per block, the scratch it asks for, and the integers it
passes. One set of rules, used twice: by the judge for every validation and timing size before
anything runs (also in compile-only mode, with the limits of the target arch from the table below),
and by the GPU worker on the device itself just before it launches (engine/gpu/runner.py), where the
device's own limits apply.

Every message is written for the model: it names the launch, the field, its expression, the size at
which it goes wrong and the limit, so one repair can fix it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from cuda_llm.engine.core.errors import ExpressionError
from cuda_llm.engine.task import expr
from cuda_llm.engine.task.dtypes import DTYPES, SCALAR_TYPES
from cuda_llm.engine.task.plan import BoundPlan

if TYPE_CHECKING:  # engine.task.model imports engine.contract.plan: a runtime import would be a cycle
    from cuda_llm.engine.task.model import SizeCase, Task

# A plan's scratch may use this many bytes beyond twice the task's own buffers: generous for
# partial sums and tiles, small enough that a runaway expression is refused before cuMemAlloc.
SCRATCH_SLACK_BYTES = 256 * 1024 * 1024
# What the integer parameter types can hold; an argument outside its range would wrap silently.
INT_RANGES = {s.name: s.bounds for s in SCALAR_TYPES.values() if s.bounds is not None}
_AXES = "xyz"


class PlanError(Exception):
    """A launch the GPU cannot run as asked (limits, sizes, arguments): the model's to fix."""


@dataclass(frozen=True)
class ModuleMemory:
    """The device memory a program's module takes for its `__device__` variables when it is loaded
    (engine/compile/cubin.py): counted with the scratch against the same allowance, since it is
    working memory the harness never sees allocated."""

    nbytes: int
    largest: tuple[tuple[str, int], ...] = ()  # (variable, bytes), largest first, for the message

    def describe(self) -> str:
        names = ", ".join(f"{name} {size / 2**20:,.1f} MiB" for name, size in self.largest)
        return f"{self.nbytes / 2**20:,.1f} MiB of __device__ variables" + (f" ({names})" if names else "")


@dataclass(frozen=True)
class LaunchLimits:
    """What one launch may ask of a GPU."""

    where: str  # how messages name the GPU: "NVIDIA H100 80GB HBM3", "sm_90"
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    shared_per_block: int  # dynamic + static without the opt-in (the harness opts in beyond it)
    shared_per_block_optin: int  # the most one block may have, static and dynamic together


class _DeviceLike(Protocol):
    # Read-only, as DeviceInfo (a frozen dataclass) has them.
    @property
    def name(self) -> str: ...
    @property
    def max_threads_per_block(self) -> int: ...
    @property
    def max_block_dims(self) -> tuple[int, int, int]: ...
    @property
    def max_grid_dims(self) -> tuple[int, int, int]: ...
    @property
    def shared_per_block(self) -> int: ...
    @property
    def shared_per_block_optin(self) -> int: ...


def device_limits(device: _DeviceLike) -> LaunchLimits:
    """The limits a GPU reports about itself (engine.gpu.protocol.DeviceInfo)."""
    return LaunchLimits(
        device.name,
        device.max_threads_per_block,
        tuple(device.max_block_dims),  # type: ignore[arg-type]  # three dims stay three
        tuple(device.max_grid_dims),  # type: ignore[arg-type]  # three dims stay three
        device.shared_per_block,
        device.shared_per_block_optin,
    )


# The limits of each architecture, for compile-only mode (no GPU to ask). From the CUDA C++
# Programming Guide, "Technical Specifications per Compute Capability": every arch from 7.5 on has
# 1024 threads per block, blocks of at most 1024 x 1024 x 64, grids of at most (2^31 - 1) x 65535 x
# 65535, 48 KiB of shared memory per block without the opt-in; they differ in the opt-in maximum per
# block (what cudaDevAttrMaxSharedMemoryPerBlockOptin reports, 1 KiB per SM being reserved):
# Turing 64 KiB; A100 (8.0) and Orin (8.7) 163 KiB; GA10x (8.6) and Ada (8.9) 99 KiB; Hopper (9.0)
# and the datacenter Blackwells (10.0, 10.3) 227 KiB; the RTX Blackwells (12.0, 12.1) 99 KiB.
_COMMON_THREADS = 1024
_COMMON_BLOCK = (1024, 1024, 64)
_COMMON_GRID = (2**31 - 1, 65535, 65535)
_COMMON_SHARED = 48 * 1024
SHARED_OPTIN_BY_ARCH: dict[str, int] = {
    "sm_75": 64 * 1024,
    "sm_80": 163 * 1024,
    "sm_86": 99 * 1024,
    "sm_87": 163 * 1024,
    "sm_89": 99 * 1024,
    "sm_90": 227 * 1024,
    "sm_100": 227 * 1024,
    "sm_103": 227 * 1024,
    "sm_120": 99 * 1024,
    "sm_121": 99 * 1024,
}
ARCH_LIMITS: dict[str, LaunchLimits] = {
    arch: LaunchLimits(arch, _COMMON_THREADS, _COMMON_BLOCK, _COMMON_GRID, _COMMON_SHARED, optin)
    for arch, optin in SHARED_OPTIN_BY_ARCH.items()
}


def arch_limits(arch: str) -> LaunchLimits:
    """The table's limits for `arch` ("sm_90", "sm_90a"). An arch the table does not list gets the
    nearest listed one of its generation below it, else the strictest of all, and says so."""
    base = arch.rstrip("abcdefghijklmnopqrstuvwxyz") if arch[-1:].isalpha() else arch
    if base in ARCH_LIMITS:
        return ARCH_LIMITS[base] if base == arch else _renamed(ARCH_LIMITS[base], arch)
    try:
        number = int(base.removeprefix("sm_"))
    except ValueError:
        number = -1
    same_major = [a for a in ARCH_LIMITS if int(a[3:]) // 10 == number // 10 and int(a[3:]) <= number]
    if same_major:
        nearest = max(same_major, key=lambda a: int(a[3:]))
        return _renamed(ARCH_LIMITS[nearest], f"{arch} (limits of {nearest})")
    strictest = min(ARCH_LIMITS.values(), key=lambda lim: lim.shared_per_block_optin)
    return _renamed(strictest, f"{arch} (not in the table of per-arch limits: the strictest listed)")


def _renamed(limits: LaunchLimits, where: str) -> LaunchLimits:
    return LaunchLimits(
        where,
        limits.max_threads_per_block,
        limits.max_block_dims,
        limits.max_grid_dims,
        limits.shared_per_block,
        limits.shared_per_block_optin,
    )


@dataclass(frozen=True)
class SizedLaunch:
    """One launch at concrete sizes, within the limits."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int  # dynamic shared memory in bytes
    expr_args: tuple[tuple[int, int], ...]  # (argument index, value) of its integer expressions

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class SizedPlan:
    launches: tuple[SizedLaunch, ...]
    scratch_bytes: tuple[tuple[str, int], ...]  # (name, bytes) in declaration order


def _size_text(env: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in env.items())


def _at(text: str, at: str) -> str:
    """The size prefix, for an expression whose value depends on the size (a literal is wrong at all)."""
    try:
        return at if expr.names(text) else ""
    except ExpressionError:
        return at


def _shown(text: str, value: int) -> str:
    """`cdiv(n, 256) is 4096`, or just `2048` for a literal."""
    return text if text.strip() == str(value) else f"{text} is {value}"


def _evaluate(text: str, env: Mapping[str, int], where: str, at: str) -> int:
    try:
        return expr.evaluate(text, env)
    except ExpressionError as exc:
        raise PlanError(f"{at}{where}: {exc}") from None


def _dims(
    texts: Sequence[str], env: Mapping[str, int], where: str, limits: tuple[int, int, int], at: str, device: str
) -> tuple[int, int, int]:
    out = []
    for axis, (text, limit) in enumerate(zip(texts, limits, strict=True)):
        field = f"{where}.{_AXES[axis]}"
        value = _evaluate(text, env, field, at)
        if value < 1:
            raise PlanError(
                f"{_at(text, at)}{field} = {_shown(text, value)}: every grid and block dimension must be at "
                "least 1 at every size (use max(1, ...) or cdiv)"
            )
        if value > limit:
            raise PlanError(f"{_at(text, at)}{field} = {_shown(text, value)}, over the limit of {limit} on {device}")
        out.append(value)
    return out[0], out[1], out[2]


def size_plan(
    plan: BoundPlan,
    env: Mapping[str, int],
    limits: LaunchLimits,
    task_bytes: int,
    static_shared: Mapping[str, int] | None = None,
    at: str = "",
    module: ModuleMemory | None = None,
) -> SizedPlan:
    """The plan at the sizes in `env`, or PlanError saying what no GPU with these limits can run.
    `task_bytes`: the task's own buffers at these sizes (the scratch allowance grows with them);
    `static_shared`: each kernel's static shared memory, where known (from ptxas or the module);
    `at`: a prefix for messages naming the size ("at n=1000: "); `module`: the module's own
    `__device__` variables, which count against the scratch allowance."""
    at = at or f"at {_size_text(env)}: "
    scratch: list[tuple[str, int]] = []
    for i, s in enumerate(plan.scratch):
        where = f'scratch[{i}] "{s.name}": count'
        count = _evaluate(s.count, env, where, at)
        if count < 0:
            raise PlanError(
                f"{_at(s.count, at)}{where} = {_shown(s.count, count)}: a buffer cannot have a negative size"
            )
        scratch.append((s.name, count * DTYPES[s.dtype].itemsize))
    total = sum(n for _, n in scratch)
    allowance = 2 * task_bytes + SCRATCH_SLACK_BYTES
    if total > allowance:
        raise PlanError(
            f"{at}the scratch buffers need {total / 2**20:,.1f} MiB, over the limit of {allowance / 2**20:,.0f} MiB "
            "(twice the task's buffers plus 256 MiB)"
        )
    if module is not None and module.nbytes and total + module.nbytes > allowance:
        raise PlanError(
            f"{at}the module's {module.describe()} and {total / 2**20:,.1f} MiB of scratch buffers together are "
            f"over the limit of {allowance / 2**20:,.0f} MiB (twice the task's buffers plus 256 MiB): declare "
            "working memory as scratch in the launch plan, sized by the task's sizes, not as __device__ arrays"
        )
    launches: list[SizedLaunch] = []
    for i, la in enumerate(plan.launches):
        name = f"launches[{i}]"
        grid = _dims(la.grid, env, f"{name}.grid", limits.max_grid_dims, at, limits.where)
        block = _dims(la.block, env, f"{name}.block", limits.max_block_dims, at, limits.where)
        threads = block[0] * block[1] * block[2]
        if threads > limits.max_threads_per_block:
            raise PlanError(
                f"{at}{name} (kernel {la.kernel}): a block of {threads} threads is over the limit of "
                f"{limits.max_threads_per_block} threads per block on {limits.where}"
            )
        shared = _evaluate(la.shared_bytes, env, f"{name}.shared_bytes", at)
        if shared < 0:
            raise PlanError(
                f"{_at(la.shared_bytes, at)}{name}.shared_bytes = {_shown(la.shared_bytes, shared)}: negative"
            )
        static = (static_shared or {}).get(la.kernel, 0)
        if static + shared > limits.shared_per_block_optin:
            raise PlanError(
                f"{at}{name} (kernel {la.kernel}): {static} bytes of static plus {shared} bytes of dynamic "
                f"shared memory are over the limit of {limits.shared_per_block_optin} bytes per block on "
                f"{limits.where}"
            )
        values: list[tuple[int, int]] = []
        for j, arg in enumerate(la.args):
            if arg.kind != "expr":
                continue
            value = _evaluate(arg.ref, env, f"{name}.args[{j}]", at)
            low, high = INT_RANGES.get(arg.param_type, (None, None))
            if low is not None and not low <= value <= high:  # type: ignore[operator]  # high is set with low
                raise PlanError(
                    f"{_at(arg.ref, at)}{name}.args[{j}] = {_shown(arg.ref, value)}, which does not fit the kernel's "
                    f'{arg.param_type} parameter: pass it as {{"expr": ..., "type": "int64"}} to a 64-bit parameter'
                )
            values.append((j, value))
        launches.append(SizedLaunch(grid, block, shared, tuple(values)))
    return SizedPlan(tuple(launches), tuple(scratch))


def case_prefix(case: SizeCase) -> str:
    """How a message names a size case: "at n=1000: ", "at the timing size (n=...): "."""
    sizes = ", ".join(f"{k}={v}" for k, v in case.values)
    return f"at the timing size ({sizes}): " if case.is_timing else f"at {sizes}: "


def check_every_size(
    plan: BoundPlan,
    task: Task,
    limits: LaunchLimits,
    static_shared: Mapping[str, int] | None = None,
    module: ModuleMemory | None = None,
) -> None:
    """Raise PlanError for the first validation or timing size at which the plan cannot run."""
    for case in task.validation:
        size_plan(plan, task.env(case), limits, task.buffer_bytes(case), static_shared, case_prefix(case), module)
