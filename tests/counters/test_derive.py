"""What limits it, derived from recorded counters of kernels whose limits are known: the words a CUDA
engineer would use, and each rule silent when its counters say nothing."""

from __future__ import annotations

import dataclasses

from recorded_outputs import kernels, min_bytes

from cuda_llm.engine.counters import metrics as M
from cuda_llm.engine.counters.derive import derive
from cuda_llm.engine.counters.model import KernelCounters

H100_SMS = 132


def kinds(report) -> list[str]:
    return [f.kind for f in report.findings]


def test_a_float4_vector_add_is_bandwidth_bound_near_peak():
    report = derive(kernels("vector_add_float4.csv", ("vector_add4",)), min_bytes("vector_add"), H100_SMS)
    assert kinds(report)[0] == "near_peak"
    assert "rereads" not in kinds(report) and "uncoalesced_loads" not in kinds(report)
    assert report.reread_factor is not None and 0.99 < report.reread_factor < 1.01
    assert "near peak: 89% of peak moving 1.00x the minimum bytes" in report.summary
    assert report.line().startswith("what limits it: DRAM bandwidth-bound near peak")


def test_the_same_kernel_moving_twice_the_bytes_re_reads_dram():
    (k,) = kernels("vector_add_float4.csv", ("vector_add4",))
    doubled = dataclasses.replace(
        k, values={**k.values, M.DRAM_READ: 3 * k.values[M.DRAM_READ], M.DRAM_WRITE: k.values[M.DRAM_WRITE]}
    )
    report = derive((doubled,), min_bytes("vector_add"), H100_SMS)
    assert "near_peak" not in kinds(report)
    assert kinds(report)[:2] == ["memory_bound", "rereads"]
    assert "DRAM traffic 2.3x the task's minimum" in report.summary


def test_the_naive_transpose_has_uncoalesced_stores_and_coalesced_loads():
    report = derive(kernels("transpose_naive.csv", ("matrix_transpose",)), min_bytes("matrix_transpose"), H100_SMS)
    assert "uncoalesced_stores" in kinds(report)
    assert "uncoalesced_loads" not in kinds(report)
    assert "cache_rereads" not in kinds(report)  # the strided stores explain the L2 traffic
    text = next(f.text for f in report.findings if f.kind == "uncoalesced_stores")
    assert "25% of each 32-byte sector used (16.0 sectors per request, 4 ideal for 32-bit)" in text
    assert "uncoalesced global stores" in report.summary


def test_the_naive_matmul_re_reads_its_inputs_from_the_l2():
    report = derive(kernels("matmul_naive.csv", ("matmul",)), min_bytes("matmul"), H100_SMS)
    assert kinds(report)[0] == "memory_bound"
    assert "on the L1/L2 caches" in report.findings[0].text
    assert "rereads" not in kinds(report)  # the matrices fit the L2: DRAM sees them about once
    assert "cache_rereads" in kinds(report)
    assert "L2 traffic 190x the task's minimum" in report.summary


def test_the_two_pass_reduction_names_its_main_kernel_and_its_bank_conflicts():
    report = derive(
        kernels("reduction_two_pass_raw.csv", ("block_sums", "final_sum")), min_bytes("reduction_sum"), H100_SMS
    )
    assert {f.launch for f in report.findings} == {0}  # final_sum takes 2% of the time: not described
    assert kinds(report)[0] == "compute_bound"
    assert "bank_conflicts" in kinds(report)
    stalls = next(f.text for f in report.findings if f.kind == "stalls")
    assert "barrier 11.8 (waiting at __syncthreads)" in stalls
    assert report.summary.startswith("block_sums (98% of the time): compute-bound")
    assert [k.kernel for k in report.kernels] == ["block_sums", "final_sum"]


def test_a_single_block_kernel_is_capped_by_its_registers():
    (_, final) = kernels("reduction_two_pass_raw.csv", ("block_sums", "final_sum"))
    partials = 4 * 524_288  # what final_sum must read
    report = derive((dataclasses.replace(final, launch=0),), partials, H100_SMS)
    assert "uncoalesced_stores" not in kinds(report)  # thread 0 writing the sum is no pattern to fix
    occupancy = next(f.text for f in report.findings if f.kind == "low_occupancy")
    assert occupancy == "theoretical occupancy 50%, capped by registers (1 blocks per SM)"
    assert kinds(report)[0] == "latency_bound"
    assert "long scoreboard 412.5" in report.summary


def test_achieved_occupancy_far_under_theoretical_names_a_grid_smaller_than_the_gpu():
    values = {M.DURATION: 80_000, M.THEORETICAL_OCC: 100.0, M.ACHIEVED_OCC: 20.0, M.GRID_SIZE: 64}
    report = derive((KernelCounters(0, "k", values),), 1 << 20, H100_SMS)
    assert [f.text for f in report.findings] == [
        "achieved occupancy 20% of 100% theoretical: a grid of 64 blocks leaves SMs of the 132 idle"
    ]


def test_a_very_short_plan_says_its_counters_describe_start_up():
    values = {M.DURATION: 2_400, M.DRAM_PCT: 3.0, M.SM_PCT: 2.0}
    report = derive((KernelCounters(0, "tiny", values),), 4096, H100_SMS)
    assert kinds(report) == ["too_short", "latency_bound"]


def test_missing_counters_make_rules_silent_not_wrong():
    report = derive((KernelCounters(0, "k", {M.DURATION: 100_000}),), 1 << 20, H100_SMS)
    assert report.findings == () and report.summary == ""
    assert report.line() == "counters read; nothing stands out"
    assert derive((), 1 << 20).kernels == ()
