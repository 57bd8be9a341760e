"""Turn a bound launch plan into launches on the device: concrete grids, checked limits, packed
arguments, scratch buffers. Shared by validation and profiling (worker side)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cuda_llm.engine import expr
from cuda_llm.engine.contract.plan import BoundPlan
from cuda_llm.engine.dtypes import DTYPES
from cuda_llm.engine.errors import ExpressionError
from cuda_llm.engine.gpu.driver import Context, CudaError, DeviceBuffer, pack_params
from cuda_llm.engine.gpu.protocol import DeviceInfo, LaunchResources

# A plan's scratch may use this many bytes beyond twice the task's own buffers: generous for
# partial sums and tiles, small enough that a runaway expression is refused before cuMemAlloc.
SCRATCH_SLACK_BYTES = 256 * 1024 * 1024
_INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}


class PlanError(Exception):
    """A launch the device cannot run as asked (limits, arguments): the model's to fix."""


@dataclass
class PreparedLaunch:
    index: int
    kernel: str
    func: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: int
    params: Any


@dataclass
class PreparedPlan:
    launches: list[PreparedLaunch]
    scratch: list[DeviceBuffer]
    resources: tuple[LaunchResources, ...]
    _owned: list[DeviceBuffer] = field(default_factory=list)

    def run(self, ctx: Context) -> None:
        """Enqueue one run: zero the scratch (part of the timed work), then every launch in order."""
        for buf in self.scratch:
            ctx.zero(buf.ptr, buf.nbytes)
        for la in self.launches:
            ctx.launch(la.func, la.grid, la.block, la.shared, la.params)

    def release(self, ctx: Context) -> None:
        for buf in self._owned:
            ctx.free(buf)
        self._owned.clear()


class ModuleFunctions:
    """Kernel handles of one loaded module, looked up once."""

    def __init__(self, ctx: Context, module: Any) -> None:
        self.ctx = ctx
        self.module = module
        self._funcs: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        if name not in self._funcs:
            try:
                self._funcs[name] = self.ctx.function(self.module, name)
            except CudaError as exc:
                raise PlanError(
                    f'kernel {name!r} is not in the compiled module ({exc.name}); is it declared extern "C" __global__?'
                ) from None
        return self._funcs[name]


def _dims(
    exprs: tuple[str, ...], env: Mapping[str, int], what: str, limits: tuple[int, int, int], where: str
) -> tuple[int, int, int]:
    out = []
    for axis, (text, limit) in enumerate(zip(exprs, limits, strict=True)):
        try:
            value = expr.evaluate(text, env)
        except ExpressionError as exc:
            raise PlanError(f"{where}: {what}: {exc}") from None
        name = "xyz"[axis]
        if value < 1:
            raise PlanError(
                f"{where}: {what}.{name} = {text} evaluates to {value} at {_env_text(env)}; "
                "every dimension must be at least 1"
            )
        if value > limit:
            raise PlanError(f"{where}: {what}.{name} = {value} exceeds the device limit of {limit}")
        out.append(value)
    return out[0], out[1], out[2]


def _env_text(env: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in env.items())


def prepare(
    ctx: Context,
    info: DeviceInfo,
    funcs: ModuleFunctions,
    plan: BoundPlan,
    env: Mapping[str, int],
    scalars: Mapping[str, int | float],
    buffers: Mapping[str, DeviceBuffer],
    task_bytes: int,
) -> PreparedPlan:
    """Check every launch against the device's limits and build it; allocate the scratch."""
    scratch_sizes: dict[str, int] = {}
    for s in plan.scratch:
        try:
            count = expr.evaluate(s.count, env)
        except ExpressionError as exc:
            raise PlanError(f"scratch {s.name!r}: count: {exc}") from None
        if count < 0:
            raise PlanError(f"scratch {s.name!r}: count {s.count} is negative ({count}) at {_env_text(env)}")
        scratch_sizes[s.name] = count * DTYPES[s.dtype].itemsize
    total = sum(scratch_sizes.values())
    limit = 2 * task_bytes + SCRATCH_SLACK_BYTES
    if total > limit:
        raise PlanError(
            f"scratch buffers need {total / 2**20:.1f} MiB at {_env_text(env)}, over the "
            f"limit of {limit / 2**20:.0f} MiB (twice the task's buffers plus 256 MiB)"
        )

    launches: list[PreparedLaunch] = []
    resources: list[LaunchResources] = []
    owned: list[DeviceBuffer] = []
    scratch_bufs: dict[str, DeviceBuffer] = {}
    try:
        for name, nbytes in scratch_sizes.items():
            buf = ctx.alloc(nbytes)
            owned.append(buf)
            scratch_bufs[name] = buf
        for i, la in enumerate(plan.launches):
            where = f"launch {i} ({la.kernel})"
            func = funcs.get(la.kernel)
            grid = _dims(la.grid, env, "grid", info.max_grid_dims, where)
            block = _dims(la.block, env, "block", info.max_block_dims, where)
            threads = block[0] * block[1] * block[2]
            func_max = ctx.function_attribute(func, "MAX_THREADS_PER_BLOCK")
            regs = ctx.function_attribute(func, "NUM_REGS")
            if threads > info.max_threads_per_block:
                raise PlanError(
                    f"{where}: a block of {threads} threads exceeds the device limit of "
                    f"{info.max_threads_per_block} threads per block"
                )
            if threads > func_max:
                raise PlanError(
                    f"{where}: a block of {threads} threads is more than this kernel can "
                    f"launch ({func_max}): it uses {regs} registers per thread and the SM "
                    f"has {info.registers_per_block} per block (or __launch_bounds__ says so)"
                )
            try:
                shared = expr.evaluate(la.shared_bytes, env)
            except ExpressionError as exc:
                raise PlanError(f"{where}: shared_bytes: {exc}") from None
            static = ctx.function_attribute(func, "SHARED_SIZE_BYTES")
            if shared < 0:
                raise PlanError(f"{where}: shared_bytes is negative ({shared})")
            if static + shared > info.shared_per_block_optin:
                raise PlanError(
                    f"{where}: {static} bytes of static plus {shared} bytes of dynamic shared memory "
                    f"exceed the device's {info.shared_per_block_optin} bytes per block"
                )
            if shared > info.shared_per_block - static:
                # Over 48 KiB needs an explicit opt-in per kernel; the harness does it (DESIGN 4).
                ctx.set_max_dynamic_shared(func, shared)
            values: list[tuple[str, int | float]] = []
            for j, arg in enumerate(la.args):
                if arg.kind == "buffer":
                    values.append(("ptr", buffers[arg.ref].ptr))
                elif arg.kind == "scratch":
                    values.append(("ptr", scratch_bufs[arg.ref].ptr))
                else:
                    if arg.kind == "scalar":
                        value = scalars[arg.ref]
                    else:
                        try:
                            value = expr.evaluate(arg.ref, env)
                        except ExpressionError as exc:
                            raise PlanError(f"{where}: argument {j}: {exc}") from None
                    if arg.param_type in _INT_RANGES:
                        lo, hi = _INT_RANGES[arg.param_type]
                        if not lo <= int(value) <= hi:
                            raise PlanError(
                                f"{where}: argument {j} ({arg.ref}) = {value} does not fit the kernel's "
                                f'{arg.param_type} parameter; pass it as {{"expr": ..., "type": "int64"}} '
                                "to a 64-bit parameter"
                            )
                    values.append((arg.param_type, value))
            launches.append(PreparedLaunch(i, la.kernel, func, grid, block, shared, pack_params(values)))
            blocks_per_sm = ctx.occupancy(func, threads, shared)
            warps = -(-threads // info.warp_size)
            resources.append(
                LaunchResources(
                    launch=i,
                    kernel=la.kernel,
                    grid=grid,
                    block=block,
                    dynamic_shared=shared,
                    registers=regs,
                    static_shared=static,
                    local_bytes=ctx.function_attribute(func, "LOCAL_SIZE_BYTES"),
                    const_bytes=ctx.function_attribute(func, "CONST_SIZE_BYTES"),
                    max_threads_per_block=func_max,
                    blocks_per_sm=blocks_per_sm,
                    occupancy=min(1.0, blocks_per_sm * warps * info.warp_size / info.max_threads_per_sm),
                )
            )
    except BaseException:
        for buf in owned:
            ctx.free(buf)
        raise
    return PreparedPlan(launches, list(scratch_bufs.values()), tuple(resources), owned)
