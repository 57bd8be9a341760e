"""Judge an output against the reference on the GPU, without bringing it to the host.

The float64 reference (and a custom tolerance's scale) is copied into buffers that exist only for the
comparison, from the worker's vault (engine/gpu/expected_vault.py: another context, which no kernel of
the worker's context can address) or else from the host: no candidate kernel runs while they are in
the worker's context, and they are wiped before they are freed, so a kernel can never find the
expected values in memory and copy them. Only four counters come back. An output that passes is
fully judged this way; one that fails is downloaded and compared on the host, which also finds the
first mismatches and the shape of the failure.
"""

from __future__ import annotations

import numpy as np

from cuda_llm.engine.gpu.compare import OutputComparison
from cuda_llm.engine.gpu.driver import Context, DeviceBuffer, is_fatal
from cuda_llm.engine.gpu.expected_vault import ExpectedVault
from cuda_llm.engine.gpu.harness import Harness
from cuda_llm.engine.task.model import BufferSpec, Tolerance


def compare_on_device(
    ctx: Context,
    harness: Harness,
    got: DeviceBuffer,
    spec: BufferSpec,
    expected: np.ndarray,
    scale: np.ndarray | None,
    tol: Tolerance,
    rms: float,
    timeout_s: float,
    vault: ExpectedVault | None = None,
) -> tuple[int, OutputComparison | None]:
    """(wrong elements, the comparison when nothing is wrong). `rms` is the output's RMS for the "rms"
    rule (ReferenceCase.rms, computed once). With wrong elements the caller downloads `got` and
    describes the failure with compare_output(). `vault`: the worker's device copies of the expected
    values; without it (or when it cannot hold them) they are uploaded."""
    exp64 = np.ascontiguousarray(expected, dtype=np.float64).reshape(-1)
    uploaded: list[DeviceBuffer] = []

    def wipe_and_free() -> None:
        for buf in uploaded:
            ctx.zero(buf.ptr, buf.nbytes)
        ctx.wait(timeout_s)  # wiped before the memory can go to anyone else
        for buf in uploaded:
            ctx.free(buf)

    try:
        exp_dev = ctx.alloc(exp64.nbytes)
        uploaded.append(exp_dev)
        if vault is None or not vault.copy_into(ctx, exp_dev, expected, exp64):
            ctx.upload(exp_dev, exp64)
        scale_dev = None
        if tol.scale == "custom" and scale is not None:
            scale64 = np.ascontiguousarray(scale, dtype=np.float64).reshape(-1)
            scale_dev = ctx.alloc(scale64.nbytes)
            uploaded.append(scale_dev)
            if vault is None or not vault.copy_into(ctx, scale_dev, scale, scale64):
                ctx.upload(scale_dev, scale64)
        result = harness.compare(got, spec.dtype, exp64.size, exp_dev, scale_dev, tol, rms, timeout_s)
    except BaseException as exc:
        if not is_fatal(exc):  # a dead context frees nothing
            wipe_and_free()
        raise
    wipe_and_free()
    if result.wrong:
        return result.wrong, None
    return 0, OutputComparison(
        output=spec.name,
        checked=int(exp64.size),
        wrong=0,
        unwritten=0,
        worst_ratio=result.worst_ratio,
        mismatches=(),
        pattern=None,
    )
