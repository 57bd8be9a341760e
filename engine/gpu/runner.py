"""Turn a bound launch plan into launches on the device: concrete grids, checked limits, packed
arguments, scratch buffers. Shared by validation and profiling (worker side)."""

from __future__ import annotations

import ctypes
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cuda_llm.engine.contract.limits import INT_RANGES, PlanError, device_limits, size_plan
from cuda_llm.engine.gpu.driver import Context, CudaError, DeviceBuffer, pack_params
from cuda_llm.engine.gpu.protocol import DeviceInfo, LaunchResources
from cuda_llm.engine.task.plan import BoundPlan

# PlanError is the contract's (engine/contract/limits.py): the judge checks every size against the
# same rules before a plan reaches a GPU; this module applies them again with the device's own limits.
__all__ = ["ModuleFunctions", "PlanError", "PreparedLaunch", "PreparedPlan", "prepare"]


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

    def retargeted(self, moved: Mapping[int, int]) -> PreparedPlan:
        """The same launches with the buffer addresses in `moved` replaced by others of the same size
        (the profiler's rotating outputs); the scratch stays this plan's, and so does freeing it."""
        launches = []
        for la in self.launches:
            values, types = la.params
            swapped = tuple(moved.get(v, v) if t is ctypes.c_void_p else v for v, t in zip(values, types, strict=True))
            launches.append(dataclasses.replace(la, params=(swapped, types)))
        return PreparedPlan(launches, self.scratch, self.resources)

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
    """Check every launch against the device's limits (engine/contract/limits.py) and build it;
    allocate the scratch."""
    funcs_by_kernel = {la.kernel: funcs.get(la.kernel) for la in plan.launches}
    static = {k: ctx.function_attribute(f, "SHARED_SIZE_BYTES") for k, f in funcs_by_kernel.items()}
    sized = size_plan(plan, env, device_limits(info), task_bytes, static)

    launches: list[PreparedLaunch] = []
    resources: list[LaunchResources] = []
    owned: list[DeviceBuffer] = []
    scratch_bufs: dict[str, DeviceBuffer] = {}
    try:
        for name, nbytes in sized.scratch_bytes:
            buf = ctx.alloc(nbytes)
            owned.append(buf)
            scratch_bufs[name] = buf
        for i, (la, at) in enumerate(zip(plan.launches, sized.launches, strict=True)):
            where = f"launches[{i}] (kernel {la.kernel})"
            func = funcs_by_kernel[la.kernel]
            threads, shared = at.threads, at.shared
            func_max = ctx.function_attribute(func, "MAX_THREADS_PER_BLOCK")
            regs = ctx.function_attribute(func, "NUM_REGS")
            if threads > func_max:
                raise PlanError(
                    f"{where}: a block of {threads} threads is more than this kernel can "
                    f"launch ({func_max}): it uses {regs} registers per thread and the SM "
                    f"has {info.registers_per_block} per block (or __launch_bounds__ says so)"
                )
            if shared > info.shared_per_block - static[la.kernel]:
                # Over 48 KiB needs an explicit opt-in per kernel; the harness does it (DESIGN 4).
                ctx.set_max_dynamic_shared(func, shared)
            expr_values = dict(at.expr_args)
            values: list[tuple[str, int | float]] = []
            for j, arg in enumerate(la.args):
                if arg.kind == "buffer":
                    values.append(("ptr", buffers[arg.ref].ptr))
                elif arg.kind == "scratch":
                    values.append(("ptr", scratch_bufs[arg.ref].ptr))
                elif arg.kind == "expr":
                    values.append((arg.param_type, expr_values[j]))
                else:
                    value = scalars[arg.ref]
                    if arg.param_type in INT_RANGES:
                        lo, hi = INT_RANGES[arg.param_type]
                        if not lo <= int(value) <= hi:
                            raise PlanError(
                                f"{where}: argument {j} ({arg.ref}) = {value} does not fit the kernel's "
                                f'{arg.param_type} parameter; pass it as {{"expr": ..., "type": "int64"}} '
                                "to a 64-bit parameter"
                            )
                    values.append((arg.param_type, value))
            launches.append(PreparedLaunch(i, la.kernel, func, at.grid, at.block, shared, pack_params(values)))
            blocks_per_sm = ctx.occupancy(func, threads, shared)
            warps = -(-threads // info.warp_size)
            resources.append(
                LaunchResources(
                    launch=i,
                    kernel=la.kernel,
                    grid=at.grid,
                    block=at.block,
                    dynamic_shared=shared,
                    registers=regs,
                    static_shared=static[la.kernel],
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
