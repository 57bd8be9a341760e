"""What limits a kernel, from its counters and the task's own figures: pure arithmetic and words.

Each rule reads a few counters of one launch (or the whole plan's DRAM traffic against the task's
minimum) and, when the counters cross its threshold, says what it sees and what a programmer does
about it. The thresholds are named here with their reasons; a counter ncu did not report makes its
rule silent rather than wrong.
"""

from __future__ import annotations

from cuda_llm.engine.counters import metrics as M
from cuda_llm.engine.counters.model import CountersReport, Finding, KernelCounters

# A plan this short is mostly the launch ramp and tail: its counters describe start-up more than
# the kernel, and ncu's own guidance is to profile work of at least a few microseconds.
TOO_SHORT_US = 5.0
# A unit above this share of its peak is busy (ncu's Speed Of Light rule uses 60% for "high").
BUSY_PCT = 60.0
# The memory figure is DRAM's own when DRAM is within this of the busiest memory unit; further below,
# the caches are what is busy.
CACHE_MARGIN_PCT = 10.0
# DRAM at this share of peak is about what the best streaming kernels reach (a vector add read
# 78% through ncu on an H100): there is little left but moving fewer bytes.
NEAR_PEAK_PCT = 75.0
# DRAM traffic above this multiple of the task's minimal bytes means data comes from DRAM more than
# once (a write-allocate or a scratch buffer costs far less than half again).
REREAD_FACTOR = 1.5
# L2 traffic above this multiple of the minimal bytes: the SMs fetch the same data many times (each
# byte crosses the L2 about twice at least: DRAM to L2 and L2 to SM, or SM to L2 and L2 to DRAM).
# Used only where the L1 load counters are missing (uncoalesced accesses inflate it too).
L2_REREAD_FACTOR = 6.0
# The bytes global loads asked of the L1 (sectors x 32 x the share of each used) above this multiple
# of the minimal bytes: each input element is fetched again and again. A kernel tiled by T re-reads
# each input about N/T times: at the library's 2048^3 matmul a 64-wide tile reads about 21x the
# minimum, a 32-wide one about 43x, the naive kernel 384x (H200 recording: 1,073,741,824 sectors of
# 34 GB for a 50 MB minimum). Streaming kernels read 1x or less.
L1_REREAD_FACTOR = 64.0
SECTOR_BYTES = 32
# Under this share of each fetched 32-byte sector's bytes used, the accesses may be uncoalesced.
COALESCED_PCT = 60.0
# ...but only when a warp's request also touches more sectors than a coalesced one of 32-bit words
# needs (32 threads x 4 B = 4 sectors). Low use at or under 4 sectors per request is threads sharing
# addresses, not scattering them: a warp-wide broadcast (every thread reading A[row][k] in a naive
# matmul) is 1 sector per request with 4 of its 32 bytes used, and averaged with the coalesced B loads
# (4 sectors, all used) it reads "56% used, 2 sectors per request" on an H200, which stages through
# shared memory would not fix as coalescing (its cost is the re-reading, _cache_rereads).
IDEAL_SECTORS_32BIT = 4
# Without the bytes-used metric: more sectors per warp request than even 16-byte-per-thread loads
# need (32 threads x 16 B = 512 B = 16 sectors) cannot be coalesced.
SECTORS_PER_REQUEST_MAX = 16.0
# Loads or stores that are under this share of a kernel's global sectors are not judged for
# coalescing: one thread writing a block's partial sum is no access pattern to fix.
COALESCING_MIN_SHARE = 0.1
# Theoretical occupancy of half or less is worth naming with what caps it.
LOW_OCCUPANCY_PCT = 50.0
# Achieved occupancy under this share of the theoretical one: warps are not resident as they
# could be (too few blocks, a tail, or uneven blocks).
ACHIEVED_SHARE = 0.6
# A fifth of shared-memory wavefronts being replays is a conflict pattern, not noise.
CONFLICT_SHARE = 0.2
# A stall reason worth naming costs at least this many cycles per issued instruction.
STALL_MIN_CYCLES = 1.0
STALLS_SHOWN = 2
# Launches under this share of the plan's time are not described (a final tiny reduction kernel).
MAIN_SHARE = 0.25
# The summary line holds this many findings; the rest stay in the report.
SUMMARY_FINDINGS = 4

_LIMITERS = {
    M.LIMIT_REGISTERS: "registers",
    M.LIMIT_SHARED: "shared memory",
    M.LIMIT_WARPS: "block size (warps per SM)",
    M.LIMIT_BLOCKS: "the blocks-per-SM limit (small blocks)",
}


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _throughput(k: KernelCounters, reread: float | None) -> Finding | None:
    dram, sm = k.get(M.DRAM_PCT), k.get(M.SM_PCT)
    if dram is None or sm is None:
        return None
    memory = max(k.get(M.MEMORY_PCT) or 0.0, dram)
    if dram >= NEAR_PEAK_PCT and dram >= sm and (reread is None or reread <= REREAD_FACTOR):
        moved = f" moving {reread:.2f}x the minimum bytes" if reread is not None else ""
        return Finding(
            "near_peak",
            f"DRAM bandwidth-bound near peak: {dram:.0f}% of peak{moved}; only moving fewer bytes helps",
            k.launch,
        )
    if memory >= BUSY_PCT and memory >= sm:
        if dram >= memory - CACHE_MARGIN_PCT:
            text = f"memory-bound: DRAM at {dram:.0f}% of peak (SM {sm:.0f}%)"
        else:
            text = f"memory-bound on the L1/L2 caches: {memory:.0f}% of their peak (DRAM {dram:.0f}%, SM {sm:.0f}%)"
        return Finding("memory_bound", text, k.launch)
    if sm >= BUSY_PCT:
        return Finding("compute_bound", f"compute-bound: SM at {sm:.0f}% of peak (DRAM {dram:.0f}%)", k.launch)
    return Finding(
        "latency_bound",
        f"latency-bound: neither memory ({memory:.0f}%) nor SM ({sm:.0f}%) is busy; more independent work per "
        "thread or more warps hide it",
        k.launch,
    )


def _coalescing(k: KernelCounters) -> list[Finding]:
    out = []
    sectors = {"loads": k.get(M.LD_SECTORS), "stores": k.get(M.ST_SECTORS)}
    total = sum(v for v in sectors.values() if v is not None)
    for what, used_name, spr in (
        ("loads", M.LD_BYTES_USED, k.load_sectors_per_request),
        ("stores", M.ST_BYTES_USED, k.store_sectors_per_request),
    ):
        mine = sectors[what]
        if mine is not None and total and mine < COALESCING_MIN_SHARE * total:
            continue
        used = k.get(used_name)
        per = f"{spr:.1f} sectors per request, {IDEAL_SECTORS_32BIT} ideal for 32-bit" if spr is not None else ""
        if used is not None and used < COALESCED_PCT and spr is not None and spr > IDEAL_SECTORS_32BIT:
            out.append(
                Finding(
                    f"uncoalesced_{what}",
                    f"uncoalesced global {what}: {used:.0f}% of each 32-byte sector used"
                    + (f" ({per})" if per else "")
                    + "; make neighbouring threads touch neighbouring addresses (stage through shared memory)",
                    k.launch,
                )
            )
        elif used is None and spr is not None and spr > SECTORS_PER_REQUEST_MAX:
            out.append(
                Finding(
                    f"uncoalesced_{what}",
                    f"uncoalesced global {what}: {per}; make neighbouring threads touch neighbouring addresses",
                    k.launch,
                )
            )
    return out


def _conflicts(k: KernelCounters) -> Finding | None:
    worst = None
    for what, conflicts, wavefronts in (
        ("loads", M.SHARED_LD_CONFLICTS, M.SHARED_LD_WAVEFRONTS),
        ("stores", M.SHARED_ST_CONFLICTS, M.SHARED_ST_WAVEFRONTS),
    ):
        share = k.ratio(conflicts, wavefronts)
        if share is not None and share >= CONFLICT_SHARE and (worst is None or share > worst[1]):
            worst = (what, share)
    if worst is None:
        return None
    return Finding(
        "bank_conflicts",
        f"shared-memory bank conflicts: {worst[1]:.0%} of shared {worst[0]}' wavefronts are replays; pad or "
        "swizzle the tile (e.g. [32][33])",
        k.launch,
    )


def _occupancy(k: KernelCounters, sm_count: int | None) -> Finding | None:
    theoretical, achieved = k.get(M.THEORETICAL_OCC), k.get(M.ACHIEVED_OCC)
    if theoretical is not None and theoretical <= LOW_OCCUPANCY_PCT:
        limits = {label: v for name, label in _LIMITERS.items() if (v := k.get(name)) is not None}
        cap = ""
        if limits:
            label, blocks = min(limits.items(), key=lambda lv: lv[1])
            cap = f", capped by {label} ({blocks:.0f} blocks per SM)"
        return Finding("low_occupancy", f"theoretical occupancy {theoretical:.0f}%{cap}", k.launch)
    if theoretical and achieved is not None and achieved < ACHIEVED_SHARE * theoretical:
        grid = k.get(M.GRID_SIZE)
        if grid is not None and sm_count and grid < sm_count:
            why = f": a grid of {grid:.0f} blocks leaves SMs of the {sm_count} idle"
        else:
            why = ": blocks are too few per SM, short-lived or uneven (a tail)"
        return Finding(
            "low_achieved_occupancy",
            f"achieved occupancy {achieved:.0f}% of {theoretical:.0f}% theoretical{why}",
            k.launch,
        )
    return None


def _stalls(k: KernelCounters) -> Finding | None:
    top = [(r, v) for r, v in k.stalls() if v >= STALL_MIN_CYCLES][:STALLS_SHOWN]
    if not top:
        return None
    parts = [f"{r.replace('_', ' ')} {v:.1f} ({M.STALLS[r]})" for r, v in top]
    return Finding("stalls", "top stalls (cycles per instruction): " + ", ".join(parts), k.launch)


def _rereads(kernels: tuple[KernelCounters, ...], min_bytes: int) -> tuple[Finding | None, float | None]:
    known = [b for k in kernels if (b := k.dram_bytes) is not None]
    if not known or min_bytes <= 0:
        return None, None
    total = sum(known)
    factor = total / min_bytes
    if factor <= REREAD_FACTOR:
        return None, factor
    return (
        Finding(
            "rereads",
            f"DRAM traffic {factor:.1f}x the task's minimum ({_bytes(total)} for {_bytes(min_bytes)}): data is "
            "re-read from DRAM; reuse it through shared memory or registers (tiling)",
        ),
        factor,
    )


def load_bytes_from_l1(k: KernelCounters) -> float | None:
    """The bytes the kernel's global loads used of what they fetched from the L1: its sectors x 32 x the
    share of each sector used (so uncoalesced loads do not count as re-reads), all sectors when the
    share is unknown."""
    sectors = k.get(M.LD_SECTORS)
    if sectors is None:
        return None
    used = k.get(M.LD_BYTES_USED)
    return sectors * SECTOR_BYTES * (used / 100.0 if used is not None else 1.0)


def _cache_rereads(k: KernelCounters, min_bytes: int, share: float, uncoalesced: bool) -> Finding | None:
    """Global loads fetching far more than the minimum from the caches: data re-read (no reuse within the
    SM). `share`: the kernel's part of the plan's time, so a plan of several launches compares its own
    part. From the L1's load traffic where ncu gave it; else from the L2's, unless uncoalesced accesses
    explain that."""
    if min_bytes <= 0:
        return None
    part = min_bytes * max(share, 1e-9)
    l1, l2 = load_bytes_from_l1(k), k.get(M.L2_BYTES)
    if l1 is not None:
        factor = l1 / part
        if factor < L1_REREAD_FACTOR:
            return None
        fetched = (k.get(M.LD_SECTORS) or 0.0) * SECTOR_BYTES
        also = f"; L2 traffic {l2 / part:.0f}x" if l2 is not None else ""
        return Finding(
            "cache_rereads",
            f"cache re-reads: global loads use {factor:.0f}x the task's minimum from the L1/L2 caches "
            f"({_bytes(l1)} used of {_bytes(fetched)} fetched, for {_bytes(min_bytes)}{also}): each element is "
            "fetched again and again; tile it through shared memory (and registers) so each is loaded once per tile",
            k.launch,
        )
    if l2 is None or uncoalesced or l2 / part < L2_REREAD_FACTOR:
        return None
    return Finding(
        "cache_rereads",
        f"L2 traffic {l2 / part:.0f}x the task's minimum: the same data is fetched from the L2 again and again; "
        "keep it in shared memory or registers (tiling, register blocking)",
        k.launch,
    )


def derive(kernels: tuple[KernelCounters, ...], min_bytes: int, sm_count: int | None = None) -> CountersReport:
    """The report: every finding, most telling first, and the one-line summary of the first few."""
    if not kernels:
        return CountersReport(min_bytes=min_bytes)
    total_us = sum(k.duration_us for k in kernels)
    reread, factor = _rereads(kernels, min_bytes)
    main = [k for k in kernels if total_us <= 0 or k.duration_us >= MAIN_SHARE * total_us] or [
        max(kernels, key=lambda k: k.duration_us)
    ]
    main.sort(key=lambda k: -k.duration_us)
    several = len(kernels) > 1
    classes: list[Finding] = []
    details: list[Finding] = []
    for k in main:
        cls = _throughput(k, factor)
        if cls is not None:
            classes.append(cls)
        uncoalesced = _coalescing(k)
        details += uncoalesced
        share = k.duration_us / total_us if total_us else 1.0
        details += [f for f in (_cache_rereads(k, min_bytes, share, bool(uncoalesced)),) if f is not None]
        details += [f for f in (_conflicts(k), _occupancy(k, sm_count), _stalls(k)) if f is not None]
    findings: list[Finding] = []
    if total_us and total_us < TOO_SHORT_US:
        short = f"too short to profile well ({total_us:.1f} us): the counters describe start-up"
        findings.append(Finding("too_short", short))
    findings += classes[:1] + ([reread] if reread else []) + classes[1:] + details
    summary_parts = []
    if several:
        names = {
            k.launch: f"{k.kernel} ({k.duration_us / total_us:.0%} of the time)" if total_us else k.kernel
            for k in kernels
        }
        seen: set[int] = set()
        for f in findings[:SUMMARY_FINDINGS]:
            if f.launch is not None and f.launch not in seen:  # the kernel is named once, at its first finding
                seen.add(f.launch)
                summary_parts.append(f"{names[f.launch]}: {f.text}")
            else:
                summary_parts.append(f.text)
        findings = [
            Finding(f.kind, f"{names[f.launch]}: {f.text}", f.launch) if f.launch is not None else f for f in findings
        ]
    else:
        summary_parts = [f.text for f in findings[:SUMMARY_FINDINGS]]
    return CountersReport(kernels, tuple(findings), "; ".join(summary_parts), min_bytes=min_bytes)
