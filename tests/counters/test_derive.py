"""What limits it, derived from ncu's real recordings on an H200 (tests/counters/recorded/README.md) of
kernels whose limits a CUDA engineer knows: the words they would use, and each rule silent when its
counters say nothing."""

from __future__ import annotations

import dataclasses

from recorded_outputs import kernels, min_bytes, section_kernel

from cuda_llm.engine.counters import metrics as M
from cuda_llm.engine.counters.derive import derive
from cuda_llm.engine.counters.model import KernelCounters

H200_SMS = 132
# The probe's sizes (h200_sections_raw.csv): an 8192x8192 float transpose, adds of 2^26 floats, a 2048^3 matmul.
PROBE_MIN_BYTES = {
    "transpose_naive": 2 * 4 * 8192 * 8192,
    "add_scalar": 3 * 4 * (1 << 26),
    "add_vec4": 3 * 4 * (1 << 26),
    "matmul_naive": 3 * 4 * 2048 * 2048,
}


def kinds(report) -> list[str]:
    return [f.kind for f in report.findings]


def baseline(task: str, plan: tuple[str, ...] | None = None):
    return derive(kernels(f"h200_{task}_baseline.csv", plan or (task,)), min_bytes(task), H200_SMS)


def probe(name: str, page: str = "h200_sections_raw.csv"):
    return derive((section_kernel(page, name),), PROBE_MIN_BYTES[name], H200_SMS)


def test_the_naive_matmul_re_reads_its_inputs_from_the_caches_and_is_not_called_uncoalesced():
    """1,073,741,824 L1 sectors (34 GB) for a 50 MB minimum: each A and B element fetched N times. Its
    loads average 2 sectors per request and 56% of each used because the A loads are a broadcast (every
    thread of a row reads one address); the B loads are coalesced: no coalescing to fix."""
    report = baseline("matmul")
    assert kinds(report)[0] == "memory_bound" and "on the L1/L2 caches" in report.findings[0].text
    assert "cache_rereads" in kinds(report)
    assert not {"uncoalesced_loads", "uncoalesced_stores"} & set(kinds(report))
    assert "rereads" not in kinds(report)  # the matrices fit the L2: DRAM sees them about once
    text = next(f.text for f in report.findings if f.kind == "cache_rereads")
    assert text.startswith("cache re-reads: global loads use 384x the task's minimum from the L1/L2 caches")
    assert "(19.3 GB used of 34.4 GB fetched, for 50.3 MB; L2 traffic 83x)" in text
    assert "cache re-reads" in report.summary


def test_the_same_matmul_profiled_by_sections_reads_the_same():
    report = probe("matmul_naive")
    assert "cache_rereads" in kinds(report) and "uncoalesced_loads" not in kinds(report)
    assert "384x the task's minimum" in report.summary


def test_a_naive_conv2d_re_reads_too_and_a_streaming_kernel_does_not():
    assert "cache_rereads" in kinds(baseline("conv2d"))
    for report in (baseline("vector_add"), baseline("matrix_transpose"), baseline("softmax"), probe("add_vec4")):
        assert "cache_rereads" not in kinds(report), report.summary


def test_the_naive_transpose_has_uncoalesced_stores_and_coalesced_loads():
    report = baseline("matrix_transpose")
    assert "uncoalesced_stores" in kinds(report)
    assert "uncoalesced_loads" not in kinds(report)
    text = next(f.text for f in report.findings if f.kind == "uncoalesced_stores")
    assert "25% of each 32-byte sector used (16.0 sectors per request, 4 ideal for 32-bit)" in text
    assert "uncoalesced global stores" in report.summary
    # 32x8 blocks (the sections' probe): each thread of a warp stores to another row.
    sections = probe("transpose_naive")
    assert "uncoalesced_stores" in kinds(sections) and "uncoalesced_loads" not in kinds(sections)
    assert "12% of each 32-byte sector used (32.0 sectors per request" in sections.summary


def test_a_row_per_thread_softmax_is_uncoalesced_both_ways_and_reads_dram_twice():
    report = baseline("softmax")
    assert {"uncoalesced_loads", "uncoalesced_stores", "rereads"} <= set(kinds(report))
    assert "DRAM traffic 2.0x the task's minimum" in report.summary


def test_low_use_at_few_sectors_per_request_is_a_broadcast_not_uncoalesced():
    """The rule needs both: little of each sector used and more sectors per request than a coalesced
    32-bit access takes. The matmul's loads scattered over 8 sectors per request would be uncoalesced."""
    (k,) = kernels("h200_matmul_baseline.csv", ("matmul",))
    scattered = dataclasses.replace(k, values={**k.values, M.LD_SECTORS: 4 * k.values[M.LD_SECTORS]})
    report = derive((scattered,), min_bytes("matmul"), H200_SMS)
    assert "uncoalesced_loads" in kinds(report)
    assert "56% of each 32-byte sector used (8.0 sectors per request" in report.summary


def test_the_float4_add_is_bandwidth_bound_near_peak_and_the_scalar_one_below_it():
    for page in ("h200_sections_raw.csv", "h200_core_details.csv"):
        vec4, scalar = probe("add_vec4", page), probe("add_scalar", page)
        assert kinds(vec4)[0] == "near_peak", vec4.summary
        assert vec4.reread_factor is not None and 0.95 < vec4.reread_factor < 1.0  # writes still in the L2
        assert kinds(scalar)[0] == "memory_bound" and "DRAM at 71% of peak" in scalar.summary
    report = baseline("vector_add")
    assert kinds(report)[0] == "memory_bound" and "DRAM at 70% of peak" in report.summary
    assert not {"uncoalesced_loads", "uncoalesced_stores", "rereads"} & set(kinds(report))


def test_the_same_kernel_moving_three_times_the_bytes_re_reads_dram():
    (k,) = kernels("h200_vector_add_baseline.csv", ("vector_add",))
    tripled = dataclasses.replace(k, values={**k.values, M.DRAM_READ: 3 * k.values[M.DRAM_READ]})
    report = derive((tripled,), min_bytes("vector_add"), H200_SMS)
    assert kinds(report)[:2] == ["memory_bound", "rereads"]
    assert "DRAM traffic 2.3x the task's minimum (927.2 MB for 402.7 MB)" in report.summary


def test_the_two_pass_reduction_names_its_main_kernel():
    report = baseline("reduction_sum", ("block_sums", "final_sum"))
    assert {f.launch for f in report.findings} == {0}  # final_sum takes 11% of the time: not described
    assert kinds(report)[0] == "compute_bound"
    assert report.summary.startswith("block_sums (89% of the time): compute-bound: SM at 79% of peak")
    assert [k.kernel for k in report.kernels] == ["block_sums", "final_sum"]


def test_a_single_block_kernel_is_described_on_its_own():
    (_, final) = kernels("h200_reduction_sum_baseline.csv", ("block_sums", "final_sum"))
    report = derive((dataclasses.replace(final, launch=0),), 4 * 524_288, H200_SMS)
    assert "uncoalesced_stores" not in kinds(report)  # thread 0 writing the sum is no pattern to fix
    assert "low_achieved_occupancy" in kinds(report)
    assert "a grid of 1 blocks leaves SMs of the 132 idle" in " ".join(f.text for f in report.findings)


def test_achieved_occupancy_far_under_theoretical_names_a_grid_smaller_than_the_gpu():
    # Hand-made figures: no recording has a grid of 64 blocks.
    values = {M.DURATION: 80_000, M.THEORETICAL_OCC: 100.0, M.ACHIEVED_OCC: 20.0, M.GRID_SIZE: 64}
    report = derive((KernelCounters(0, "k", values),), 1 << 20, H200_SMS)
    assert [f.text for f in report.findings] == [
        "achieved occupancy 20% of 100% theoretical: a grid of 64 blocks leaves SMs of the 132 idle"
    ]


def test_a_very_short_plan_says_its_counters_describe_start_up():
    values = {M.DURATION: 2_400, M.DRAM_PCT: 3.0, M.SM_PCT: 2.0}  # hand-made: no recording is this short
    report = derive((KernelCounters(0, "tiny", values),), 4096, H200_SMS)
    assert kinds(report) == ["too_short", "latency_bound"]


def test_missing_counters_make_rules_silent_not_wrong():
    report = derive((KernelCounters(0, "k", {M.DURATION: 100_000}),), 1 << 20, H200_SMS)
    assert report.findings == () and report.summary == ""
    assert report.line() == "counters read; nothing stands out"
    assert derive((), 1 << 20).kernels == ()
