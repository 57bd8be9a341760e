"""The vendor library's figure as the headless commands show it (`eval`'s library line, `bench`'s
library column): its latency, and a program's latency as "x of library" (the library's time over
the program's: above 1, faster than the library). Without a figure, the reason there is none."""

from __future__ import annotations

from typing import Any

from cuda_llm.engine.judge.judgement import LibraryResult
from cuda_llm.engine.judge.metrics import speedups_text


def of_library(lib: LibraryResult | None, median_us: float | None) -> float | None:
    if lib is None or median_us is None:
        return None
    return lib.of_library(median_us)


def library_record(lib: LibraryResult | None, median_us: float | None = None) -> dict[str, Any]:
    """For --json and bench.json: what was timed, its figures, and `note` when there are none."""
    if lib is None:
        return {"name": None, "median_us": None, "note": "not timed"}
    t, f = lib.timing, lib.figures
    return {
        "name": lib.name,
        "median_us": t.median_us if t else None,
        "iqr_us": t.iqr_us if t else None,
        "speedup_over_baseline": f.speedup if f else None,
        "roofline_share": f.roofline_share if f else None,
        "of_library": of_library(lib, median_us),
        "device": lib.device,
        "note": lib.note,
    }


def library_line(lib: LibraryResult | None, median_us: float | None = None, who: str = "this candidate") -> str:
    """One line: 'cuBLAS SGEMM (through CuPy): 812.3 us (IQR 2.1), 3.10x the baseline; this
    candidate is 0.87x of library', or why there is no figure."""
    if lib is None:
        return "not timed"
    if lib.timing is None:
        what = f"{lib.name}: not timed" if lib.name else "none"
        return f"{what}: {lib.note or 'no reason given'}"
    parts = [f"{lib.name}: {lib.timing.median_us:.1f} us (IQR {lib.timing.iqr_us:.1f})"]
    if lib.figures and lib.figures.speedup is not None:
        parts.append(speedups_text(lib.figures.speedup, lib.figures.baseline_name))
    ratio = of_library(lib, median_us)
    text = ", ".join(parts)
    if ratio is not None:
        text += f"; {who} is {ratio:.2f}x of library"
    return text


def torch_compile_record(result: LibraryResult | None) -> dict[str, Any]:
    """For --json and bench.json: torch.compile's figure beside eager (`--torch-compile`), or why
    there is none; {"asked": False} when it was not asked for."""
    if result is None:
        return {"asked": False}
    t, f = result.timing, result.figures
    return {
        "asked": True,
        "median_us": t.median_us if t else None,
        "iqr_us": t.iqr_us if t else None,
        "speedup_over_eager": f.speedup if f else None,
        "device": result.device,
        "note": result.note,
    }


def torch_compile_line(result: LibraryResult) -> str:
    """'torch.compile: 61.0 us (IQR 0.4), 1.64x eager', or why there is no figure (one line)."""
    if result.timing is None:
        return f"not timed: {result.note or 'no reason given'}"
    text = f"{result.timing.median_us:.1f} us (IQR {result.timing.iqr_us:.1f})"
    if result.figures is not None and result.figures.speedup is not None:
        text += ", " + speedups_text(result.figures.speedup, result.figures.baseline_name)
    return text
