"""The fixed set of Nsight Compute metrics the counters step reads, and what each one is for.

Names are ncu's (Nsight Compute's metrics reference, "Metrics Reference" and the "Profiling Guide"
sections SpeedOfLight, Occupancy, MemoryWorkloadAnalysis and WarpStateStats use the same ones).
A small set on purpose: every extra metric can cost another replay of each launch.
"""

from __future__ import annotations

# Time and traffic.
DURATION = "gpu__time_duration.sum"  # nanoseconds (base units)
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
# Speed of light: the busiest memory (DRAM) and SM sub-unit, as a share of their peaks.
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
# The busiest of DRAM, L2 and L1 ("Memory Throughput" of Speed Of Light): a kernel can be bound by its
# caches while DRAM idles (data re-read from L1/L2).
MEMORY_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
L2_HIT = "lts__t_sector_hit_rate.pct"
# Everything the L2 moved (to and from the SMs and DRAM): data fetched again and again from the L2
# shows here when it no longer reaches DRAM (a naive matmul whose matrices fit the L2).
L2_BYTES = "lts__t_bytes.sum"
# Occupancy: achieved (warps resident per active cycle) and theoretical, and each resource's cap in
# blocks per SM (the smallest is what limits the theoretical figure).
ACHIEVED_OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCC = "sm__maximum_warps_per_active_cycle_pct"
LIMIT_REGISTERS = "launch__occupancy_limit_registers"
LIMIT_SHARED = "launch__occupancy_limit_shared_mem"
LIMIT_WARPS = "launch__occupancy_limit_warps"
LIMIT_BLOCKS = "launch__occupancy_limit_blocks"
REGISTERS = "launch__registers_per_thread"
BLOCK_SIZE = "launch__block_size"
GRID_SIZE = "launch__grid_size"
# Coalescing: 32-byte sectors per warp-wide request, and the share of each fetched sector's bytes
# the threads asked for (100% when fully coalesced).
LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
LD_BYTES_USED = "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"
ST_BYTES_USED = "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct"
# Shared-memory bank conflicts: the extra wavefronts conflicts cost, against all wavefronts.
SHARED_LD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SHARED_ST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
SHARED_LD_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SHARED_ST_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"

# Warp stall reasons: the average cycles a warp spent stalled for that reason per issued
# instruction (WarpStateStats' "warp cycles per issued instruction" broken down), with what a
# programmer does about it. `selected` (issuing) and `sleeping` are no stalls worth naming.
STALLS: dict[str, str] = {
    "long_scoreboard": "waiting on global or local memory",
    "short_scoreboard": "waiting on shared memory or special math",
    "barrier": "waiting at __syncthreads",
    "membar": "waiting on a memory fence",
    "mio_throttle": "shared-memory instruction queue full",
    "lg_throttle": "global-memory instruction queue full: fewer, wider loads help",
    "math_pipe_throttle": "a math pipe is saturated",
    "tex_throttle": "texture unit queue full",
    "wait": "fixed-latency dependencies",
    "not_selected": "eligible but another warp issued",
    "no_instruction": "instruction fetch misses",
    "drain": "draining memory writes at exit",
}


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


STALL_METRICS: dict[str, str] = {stall_metric(r): r for r in STALLS}

METRICS: tuple[str, ...] = (
    DURATION,
    DRAM_READ,
    DRAM_WRITE,
    DRAM_PCT,
    SM_PCT,
    MEMORY_PCT,
    L2_HIT,
    L2_BYTES,
    ACHIEVED_OCC,
    THEORETICAL_OCC,
    LIMIT_REGISTERS,
    LIMIT_SHARED,
    LIMIT_WARPS,
    LIMIT_BLOCKS,
    REGISTERS,
    BLOCK_SIZE,
    GRID_SIZE,
    LD_SECTORS,
    LD_REQUESTS,
    ST_SECTORS,
    ST_REQUESTS,
    LD_BYTES_USED,
    ST_BYTES_USED,
    SHARED_LD_CONFLICTS,
    SHARED_ST_CONFLICTS,
    SHARED_LD_WAVEFRONTS,
    SHARED_ST_WAVEFRONTS,
    *STALL_METRICS,
)

# The same counters under the names ncu's sections report them (`--section SpeedOfLight ...`, as a
# person profiling by hand gets them): the name the set above uses <- (the section's name, the factor
# to ours). Parsing fills ours from these where ours is missing, so a section report derives the same.
SECTION_NAMES: dict[str, tuple[str, float]] = {
    DRAM_PCT: ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 1.0),
    L2_BYTES: ("lts__t_sectors.sum", 32.0),  # 32-byte sectors
    LD_BYTES_USED: ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio", 100.0 / 32.0),  # bytes of 32
    ST_BYTES_USED: ("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio", 100.0 / 32.0),
}

# The metrics read with ncu on this project's H100 machine (CUDA 13.0) before the set above was
# chosen: what a run falls back to when ncu refuses a metric without naming it.
CORE_METRICS: tuple[str, ...] = (
    DURATION,
    DRAM_READ,
    DRAM_WRITE,
    DRAM_PCT,
    SM_PCT,
    L2_HIT,
    ACHIEVED_OCC,
    THEORETICAL_OCC,
    LIMIT_REGISTERS,
    REGISTERS,
    BLOCK_SIZE,
    GRID_SIZE,
)
