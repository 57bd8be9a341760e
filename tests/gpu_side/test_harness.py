"""The harness kernels compile for the architectures we support, and the harness wires its
functions and launch parameters the way the kernels declare them (no GPU needed)."""

import re
from unittest import mock

import numpy as np
import pytest

from cuda_llm.engine.compile.nvrtc import compile_in_process
from cuda_llm.engine.gpu.harness import HARNESS_SOURCE, Harness
from cuda_llm.engine.gpu.peaks import fp16_tensor_rate
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import Tolerance


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_harness_kernels_compile(arch):
    result = compile_in_process(HARNESS_SOURCE, arch)
    assert result.ok, result.log
    names = {k.name for k in result.kernels}
    assert {
        "harness_scrub_shared",
        "harness_flush_l2",
        "harness_demote_l2",
        "harness_copy",
        "harness_triad",
        "harness_read",
        "harness_write",
        "harness_fma",
        "harness_delay",
        "harness_count_diff",
    } <= names
    # Parameter counts the Python side packs must match the kernels' signatures.
    assert len(result.ptx_entries["harness_scrub_shared"]) == 2
    assert len(result.ptx_entries["harness_flush_l2"]) == 3
    assert len(result.ptx_entries["harness_demote_l2"]) == 2
    assert len(result.ptx_entries["harness_write"]) == 2
    assert len(result.ptx_entries["harness_triad"]) == 4
    assert len(result.ptx_entries["harness_fma"]) == 4
    assert len(result.ptx_entries["harness_delay"]) == 1
    assert len(result.ptx_entries["harness_count_diff"]) == 4
    for dtype in DTYPES:
        assert len(result.ptx_entries[f"harness_compare_{dtype}"]) == 11, dtype


def test_harness_load_and_launch_parameter_counts():
    ctx = mock.MagicMock()
    ctx.alloc.side_effect = lambda n: mock.MagicMock(ptr=0x1000, nbytes=n)
    h = Harness.load(ctx, b"cubin", l2_bytes=50 << 20, flush_factor=2, sm_count=132, shared_optin=232448)
    ctx.set_max_dynamic_shared.assert_called_once_with(h.scrub, 232448)
    calls = {
        "scrub": (h.scrub_shared, (0x1234,), 2),
        "flush": (h.flush_l2, (), 2),  # its last launch: the demotion of the flush buffer's lines
        "delay": (h.delay_us, (10.0,), 1),
        "fma": (h.fma_launch, (16, 8, 256), 4),
        "copy": (h.copy_launch, (mock.MagicMock(ptr=1, nbytes=1 << 20), mock.MagicMock(ptr=2, nbytes=1 << 20)), 3),
        "triad": (h.triad_launch, tuple(mock.MagicMock(ptr=p, nbytes=1 << 20) for p in (1, 2, 3)), 4),
        "read": (h.read_launch, (mock.MagicMock(ptr=1, nbytes=1 << 20),), 3),
        "write": (h.write_launch, (mock.MagicMock(ptr=1, nbytes=1 << 20),), 2),
    }

    def count_diff(a, b):
        with mock.patch("cuda_llm.engine.gpu.harness.np.zeros", return_value=[7]):
            assert h.count_diff(a, b, 1.0) == 7  # the counter's value, as downloaded

    def compare(got):
        # The first wrong index comes back as its complement, the last plus one (0 meaning none).
        counters = np.array([3, 1, 0, 2, ~np.uint64(17), 91], dtype=np.uint64)
        with mock.patch("cuda_llm.engine.gpu.harness.np.zeros", return_value=counters):
            result = h.compare(got, "float32", 100, got, None, Tolerance("abs", 1e-6, 0.0), 0.0, 1.0)
        assert (result.wrong, result.unwritten, result.nonfinite, result.worst_ratio) == (3, 1, 2, 0.0)
        assert (result.first_wrong, result.last_wrong) == (17, 90)

    calls["compare"] = (compare, (mock.MagicMock(ptr=1, nbytes=400),), 11)
    calls["diff"] = (count_diff, (mock.MagicMock(ptr=1, nbytes=1 << 20), mock.MagicMock(ptr=2, nbytes=1 << 20)), 4)
    for name, (method, args, nparams) in calls.items():
        ctx.launch.reset_mock()
        method(*args)
        (_func, grid, block, _shared, params), _ = ctx.launch.call_args
        values, types = params
        assert len(values) == len(types) == nparams, name
        assert all(g >= 1 for g in grid) and all(b >= 1 for b in block), name
        if name in ("copy", "triad", "read", "write"):  # one float4 per thread: the grid covers the buffer
            assert grid[0] * block[0] * 16 >= 1 << 20, name


def test_the_flush_resets_persisting_lines_then_reads_then_demotes():
    """The order matters: persisting lines back to normal first, so the read displaces them; the
    flush buffer's own evict_last lines demoted last, so they leave the L2 to the next kernel."""
    ctx = mock.MagicMock()
    ctx.alloc.side_effect = lambda n: mock.MagicMock(ptr=0x1000, nbytes=n)
    h = Harness.load(ctx, b"cubin", l2_bytes=50 << 20, flush_factor=2, sm_count=132, shared_optin=232448)
    ctx.reset_mock()
    h.flush_l2()
    calls = [c for c in ctx.mock_calls if c[0] in ("reset_persisting_l2", "launch")]
    assert [c[0] for c in calls] == ["reset_persisting_l2", "launch", "launch"]
    assert calls[1].args[0] is h.flush and calls[2].args[0] is h.demote
    (_, n4, _), _ = calls[1].args[4]
    (_, lines), _ = calls[2].args[4]
    assert n4 * 16 == lines * 128 == 100 << 20, "both passes cover the whole flush buffer (2x the L2)"


def test_fp16_tensor_rate_from_the_datasheet():
    info = mock.MagicMock(compute_capability=(9, 0), sm_count=132, sm_clock_mhz=1830)
    assert fp16_tensor_rate(info) == pytest.approx(989.4e12, rel=0.01)


def test_every_task_dtype_has_a_comparison_kernel():
    """The comparison kernels are made from the dtype table, one per dtype and no other."""
    compares = set(re.findall(r"HARNESS_COMPARE\((harness_compare_\w+),", HARNESS_SOURCE))
    assert compares == {f"harness_compare_{d}" for d in DTYPES}


def test_harness_kernels_that_do_not_compile_say_why(monkeypatch):
    """A worker whose NVRTC cannot build the harness (a broken toolkit) stops with NVRTC's own
    error and log, which its start-up failure then shows the user."""
    import cuda_llm.engine.gpu.harness as harness

    monkeypatch.setattr(harness, "HARNESS_SOURCE", HARNESS_SOURCE + "\nthis is not CUDA;\n")
    with pytest.raises(RuntimeError) as failed:
        harness.compile_harness("sm_90")
    message = str(failed.value)
    assert message.startswith("the harness kernels failed to compile: ")
    assert "this is not CUDA" in message, message  # the log quotes the line NVRTC refused
