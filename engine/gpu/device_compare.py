"""Judge an output against the reference on the GPU, without bringing it to the host.

The float64 reference (and a custom tolerance's scale) is on the device only while the comparison
runs: lent by the worker's vault (engine/gpu/expected_vault.py: device memory that has an address only
then), or else uploaded into a buffer that is wiped before it is freed. No candidate kernel runs
meanwhile, so a kernel can never find the expected values in memory and copy them. Only six counters
come back. An output that passes is fully judged this way; one that fails is described on the host
(the first mismatches and the shape of the failure): downloaded whole when small, else a window from
its first wrong element (engine/gpu/failure_window.py), so host memory stays bounded at any size.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from cuda_llm.engine.gpu.compare import OutputComparison
from cuda_llm.engine.gpu.device_cases import Sealable
from cuda_llm.engine.gpu.driver import Context, DeviceBuffer, is_fatal
from cuda_llm.engine.gpu.expected_vault import ExpectedVault
from cuda_llm.engine.gpu.harness import DeviceComparison, Harness
from cuda_llm.engine.task.model import BufferSpec, Tolerance


def compare_on_device(
    ctx: Context,
    harness: Harness,
    got: DeviceBuffer,
    spec: BufferSpec,
    expected: np.ndarray | Sealable,
    scale: np.ndarray | None,
    tol: Tolerance,
    rms: float,
    timeout_s: float,
    vault: ExpectedVault | None = None,
) -> tuple[int, OutputComparison | None]:
    """(wrong elements, the comparison when nothing is wrong): device_comparison() for callers that
    need only the count."""
    result, passed = device_comparison(ctx, harness, got, spec, expected, scale, tol, rms, timeout_s, vault)
    return result.wrong, passed


def device_comparison(
    ctx: Context,
    harness: Harness,
    got: DeviceBuffer,
    spec: BufferSpec,
    expected: np.ndarray | Sealable,
    scale: np.ndarray | None,
    tol: Tolerance,
    rms: float,
    timeout_s: float,
    vault: ExpectedVault | None = None,
) -> tuple[DeviceComparison, OutputComparison | None]:
    """(the device's counts, the comparison when nothing is wrong). `rms` is the output's RMS for the
    "rms" and "rms_or_abs" rules (ReferenceCase.rms, computed once). With wrong elements the caller
    describes the failure with compare_output(), on the whole output or on a window from the first
    wrong element (engine/gpu/failure_window.py). `vault`: the worker's device copies of the expected
    values, mapped for this comparison only; without it (or when it cannot hold them) they are
    uploaded. `expected` may be Sealable (expected_vault.Sealed): values made on the device (an
    imported task's), lent for this comparison and unmapped after it like the vault's."""
    if not isinstance(expected, np.ndarray):
        assert tol.scale != "custom", "an imported task's tolerance has no custom scale"
        return _compare_sealed(ctx, harness, got, spec, expected, tol, rms, timeout_s)
    exp64 = np.ascontiguousarray(expected, dtype=np.float64).reshape(-1)
    uploaded: list[DeviceBuffer] = []
    give_back: list[Callable[[], None]] = []  # for each copy the vault lent

    def on_device(key: np.ndarray, values: np.ndarray) -> DeviceBuffer:
        if vault is not None:
            mapped = vault.lend(key, values)
            if mapped is not None:
                give_back.append(partial(vault.give_back, mapped[0]))
                return mapped[1]
        buf = ctx.alloc(values.nbytes)
        uploaded.append(buf)
        ctx.upload(buf, values)
        return buf

    def put_away() -> None:
        for buf in uploaded:
            ctx.zero(buf.ptr, buf.nbytes)
        ctx.wait(timeout_s)  # wiped (and the vault's copies read) before anything else can run
        for buf in uploaded:
            ctx.free(buf)
        for unmap in give_back:
            unmap()

    try:
        # The candidate's kernels have finished before any expected value is on the device.
        ctx.wait(timeout_s)
        exp_dev = on_device(expected, exp64)
        scale_dev = None
        if tol.scale == "custom" and scale is not None:
            scale_dev = on_device(scale, np.ascontiguousarray(scale, dtype=np.float64).reshape(-1))
        result = harness.compare(got, spec.dtype, exp64.size, exp_dev, scale_dev, tol, rms, timeout_s)
    except BaseException as exc:
        if not is_fatal(exc):  # a dead context frees nothing
            put_away()
        raise
    put_away()
    return result, _passed(spec, int(exp64.size), result)


def _compare_sealed(
    ctx: Context,
    harness: Harness,
    got: DeviceBuffer,
    spec: BufferSpec,
    expected: Sealable,
    tol: Tolerance,
    rms: float,
    timeout_s: float,
) -> tuple[DeviceComparison, OutputComparison | None]:
    # The candidate's kernels have finished before the expected values have an address.
    ctx.wait(timeout_s)
    exp_dev = expected.lend()
    try:
        result = harness.compare(got, spec.dtype, expected.count, exp_dev, None, tol, rms, timeout_s)
        ctx.wait(timeout_s)  # read before the range loses its address
    except BaseException as exc:
        if not is_fatal(exc):
            expected.give_back()
        raise
    expected.give_back()
    return result, _passed(spec, expected.count, result)


def _passed(spec: BufferSpec, count: int, result: DeviceComparison) -> OutputComparison | None:
    if result.wrong:
        return None
    return OutputComparison(
        output=spec.name,
        checked=count,
        wrong=0,
        unwritten=0,
        worst_ratio=result.worst_ratio,
        mismatches=(),
        pattern=None,
    )
