"""bench/cluster_overhead.py on a real local Ray node with a fake GPU: it measures both paths and the
single calls, and says what it ran on (its figures are the bench's to print, not this test's)."""

from __future__ import annotations

from ray_nodes import require_ray

from bench.cluster_overhead import measure, report


async def test_the_overhead_bench_measures_both_paths_and_says_where():
    require_ray()
    figures = await measure([1], repeats=2)
    assert set(figures) == {"local", "ray 1"}
    assert set(figures["ray 1"]) == {"validate_ms", "profile_ms", "empty_call_ms", "validate_call_ms"}
    assert all(v > 0 for f in figures.values() for v in f.values()), figures
    lines = report(figures, 2)
    assert lines[0].startswith("host: ") and "Ray " in lines[0] and "median of 2" in lines[0], lines
    assert lines[2].lstrip().startswith("ray 1: validations") and "one call: empty" in lines[2], lines
