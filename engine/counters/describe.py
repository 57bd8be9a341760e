"""Counters as text: the figures of each launch in one line, and the block a prompt carries."""

from __future__ import annotations

from cuda_llm.engine.counters import metrics as M
from cuda_llm.engine.counters.model import CountersReport, KernelCounters


def kernel_figures(k: KernelCounters) -> str:
    """'block_sums: 623.1 us, DRAM 26% / SM 74% of peak, 0.54 GB from DRAM, L2 hit 4%, occupancy 91%
    achieved of 100%, 4.0 sectors per load request, 1.0 per store'; figures ncu did not give are left out."""
    parts = [f"{k.duration_us:.1f} us"]
    dram, sm = k.get(M.DRAM_PCT), k.get(M.SM_PCT)
    if dram is not None and sm is not None:
        parts.append(f"DRAM {dram:.0f}% / SM {sm:.0f}% of peak")
    if (moved := k.dram_bytes) is not None:
        parts.append(f"{moved / 1e9:.2f} GB from DRAM")
    if (hit := k.get(M.L2_HIT)) is not None:
        parts.append(f"L2 hit {hit:.0f}%")
    achieved, theoretical = k.get(M.ACHIEVED_OCC), k.get(M.THEORETICAL_OCC)
    if achieved is not None and theoretical is not None:
        parts.append(f"occupancy {achieved:.0f}% achieved of {theoretical:.0f}%")
    ld, st = k.load_sectors_per_request, k.store_sectors_per_request
    if ld is not None:
        parts.append(f"{ld:.1f} sectors per load request" + (f", {st:.1f} per store" if st is not None else ""))
    return f"{k.kernel}: " + ", ".join(parts)


def prompt_text(report: CountersReport | None) -> str:
    """The block the next round's prompt carries under the best kernel's figures; empty when there are
    no counters (a model cannot act on a machine without ncu)."""
    if report is None or not report.ok:
        return ""
    lines = ["Hardware counters of this kernel (Nsight Compute, one run at the timing size):"]
    if report.summary:
        lines.append(f"- what limits it: {report.summary}")
    lines += [f"- {kernel_figures(k)}" for k in report.kernels]
    return "\n".join(lines)
