"""Device state a program could keep from one run to the next, put back before every run that must
be independent of the others (worker side).

A plan's buffers are the harness's: inputs are copied in and checked unchanged, outputs poisoned,
scratch zeroed. What a kernel can write besides them, without a fault, is its module's `__device__`
variables and the alignment slack around each buffer (engine/gpu/driver.py allocates 2 MiB more than
asked). A result kept there, keyed on the sizes and a few input values, would make a run that repeats
an earlier one's inputs return at once: timed runs do, validation's second run does. So before each
such run the slack is zeroed and the module's writable variables get back the values they had when
the module was loaded (a copy taken then, on the device). Where each variable lies in its section
comes from the cubin's symbol table (engine/compile/cubin.py); a section the driver will not locate
cannot be put back, and the program is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cuda_llm.engine.compile.cubin import ANCHORS, ModuleVariable, device_variables
from cuda_llm.engine.contract.limits import PlanError
from cuda_llm.engine.gpu.driver import Context, DeviceBuffer

# Variables looked up to place a section: the anchor and a few of the program's own, which must agree.
_CONFIRM = 4


@dataclass
class _Region:
    ptr: int  # where the variables lie
    nbytes: int
    copy: DeviceBuffer  # their values right after the load


@dataclass
class DeviceState:
    """The writable `__device__` memory of one loaded module, as the load left it."""

    ctx: Context
    regions: list[_Region] = field(default_factory=list)

    @classmethod
    def capture(cls, ctx: Context, module: Any, cubin: bytes) -> DeviceState:
        """Locate the module's writable variables and copy their loaded values aside. Raises PlanError
        when some cannot be located (they could not be put back)."""
        state = cls(ctx)
        by_section: dict[str, list[ModuleVariable]] = {}
        for v in device_variables(cubin):
            by_section.setdefault(v.section, []).append(v)
        try:
            for variables in by_section.values():
                if all(v.name in ANCHORS for v in variables):
                    continue  # the judge's own anchor alone: nothing of the program's to put back
                for ptr, nbytes in _spans(ctx, module, variables):
                    copy = ctx.alloc(nbytes)
                    state.regions.append(_Region(ptr, nbytes, copy))
                    ctx.copy_raw(copy.ptr, ptr, nbytes)
        except BaseException:
            state.release()
            raise
        return state

    @property
    def writable(self) -> bool:
        """Whether the module has any writable variable (a program that has cannot be graphed:
        they are put back between runs, and a graph's replays are not separate runs)."""
        return bool(self.regions)

    def restore(self) -> None:
        """Give every writable variable its loaded value again (stream-ordered)."""
        for r in self.regions:
            self.ctx.copy_raw(r.ptr, r.copy.ptr, r.nbytes)

    def release(self) -> None:
        for r in self.regions:
            self.ctx.free(r.copy)
        self.regions.clear()


def _spans(ctx: Context, module: Any, variables: list[ModuleVariable]) -> list[tuple[int, int]]:
    """(address, bytes) to copy for one section's variables: the whole section from its base, found
    through the judge's anchor (engine/compile/cubin.py) and confirmed by a few of the program's own
    variables (one copy, however many variables); else each variable the driver locates, which is
    only enough when it locates them all."""
    ordered = sorted(variables, key=lambda v: v.name not in ANCHORS)  # the anchors first
    reach = max(v.offset + v.size_bytes for v in variables)
    bases: set[int] = set()
    for v in ordered[:_CONFIRM]:
        at = ctx.module_global(module, v.name)
        if at is not None:
            bases.add(at[0] - v.offset)
    if len(bases) == 1:
        return [(bases.pop(), reach)]
    spans: list[tuple[int, int]] = []
    lost: list[str] = []
    for v in variables:
        at = ctx.module_global(module, v.name)
        if at is None:
            lost.append(v.name)
        else:
            spans.append(at)
    if lost:
        raise PlanError(
            f"the __device__ variable(s) {', '.join(lost[:5])} cannot be located in the loaded module, so they "
            "could not be reset between runs: keep working memory in the plan's scratch buffers"
        )
    return spans


def reset_for_run(ctx: Context, buffers: Iterable[DeviceBuffer], state: DeviceState | None) -> None:
    """Before a run that must be independent: the slack around `buffers` zeroed, the module's
    variables back to their loaded values (stream-ordered; outside any timed region)."""
    for buf in buffers:
        ctx.wipe_slack(buf)
    if state is not None:
        state.restore()
