"""Parsing ncu's CSV: both table shapes, units, thousands separators, n/a, ncu's own message lines."""

from __future__ import annotations

import pytest
from recorded_outputs import text

from cuda_llm.engine.counters import metrics as M
from cuda_llm.engine.counters import ncu_csv


def test_the_details_page_gives_one_row_per_launch_in_base_units():
    out = ncu_csv.parse(text("h200_reduction_sum_baseline.csv"))
    assert [(r.id, r.kernel) for r in out.rows] == [(0, "block_sums"), (1, "final_sum")]
    values = out.rows[0].values
    assert values[M.DRAM_READ] == 536_881_152  # "536,881,152" in the file
    assert values[M.DURATION] == 1_466_816  # nanoseconds
    assert values[M.SM_PCT] == pytest.approx(79.06)
    assert set(M.METRICS) <= set(values)
    assert out.errors == ()
    assert out.warnings == (
        "Note: Running with unmodified GPU clocks. If not controlled otherwise, profiling results may be inconsistent.",
    )


def test_the_raw_page_gives_the_same_shape_with_its_units_row_skipped():
    out = ncu_csv.parse(text("h200_sections_raw.csv"))
    assert [(r.id, r.kernel) for r in out.rows] == [
        (0, "transpose_naive"),
        (1, "add_scalar"),
        (2, "add_vec4"),
        (3, "matmul_naive"),
    ]
    matmul = out.rows[3].values
    assert matmul[M.LD_SECTORS] == 1_073_741_824 and matmul[M.GRID_SIZE] == 16_384
    assert len(out.warnings) == 2 and out.warnings[1].startswith("Unable to access the following 6 metrics")


def test_the_sections_names_of_our_counters_fill_ours():
    """SpeedOfLight's DRAM figure, the L2's sectors and SourceCounters' bytes per sector (of 32) are the
    set's DRAM share, L2 bytes and share of each sector used."""
    matmul = ncu_csv.parse(text("h200_sections_raw.csv")).rows[3].values
    assert matmul[M.DRAM_PCT] == matmul["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"]
    assert matmul[M.L2_BYTES] == 32 * matmul["lts__t_sectors.sum"]
    assert matmul[M.LD_BYTES_USED] == pytest.approx(56.25)  # 18 bytes of 32
    details = ncu_csv.parse(text("h200_matmul_baseline.csv")).rows[0].values
    assert details[M.LD_BYTES_USED] == pytest.approx(56.25)  # the same counter asked for by our name


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        ("1.5", "Mbyte", 1.5e6),
        ("2,048", "Kbyte", 2.048e6),
        ("12.5", "usecond", 12_500.0),
        ("3", "msecond", 3e6),
        ("87.5", "%", 87.5),
        ("n/a", "byte", None),
        ("", "", None),
        ("not a number", "", None),
    ],
)
def test_values_become_base_units(value, unit, expected):
    assert ncu_csv.number(value, unit) == expected


def test_a_prefixed_unit_in_the_details_page_is_scaled():
    csv_text = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",'
        '"Metric Name","Metric Unit","Metric Value"\n'
        '"0","7","python3.12","h","k(float*, int)","1","7","s","dram__bytes_read.sum","Mbyte","33.55"\n'
        '"0","7","python3.12","h","k(float*, int)","1","7","s","gpu__time_duration.sum","usecond","12.29"\n'
        '"0","7","python3.12","h","k(float*, int)","1","7","s","lts__t_sector_hit_rate.pct","%","n/a"\n'
    )
    (row,) = ncu_csv.parse(csv_text).rows
    assert row.values == {M.DRAM_READ: pytest.approx(33.55e6), M.DURATION: pytest.approx(12_290.0)}
    assert ncu_csv.kernel_base(row.kernel) == "k"


@pytest.mark.parametrize(
    ("name", "base"),
    [("vector_add", "vector_add"), ("void tiled<32>(const float *, float *)", "tiled"), ("k(int)", "k")],
)
def test_kernel_names_lose_their_signature(name, base):
    assert ncu_csv.kernel_base(name) == base


def test_errors_and_warnings_are_kept_and_no_table_is_no_rows():
    out = ncu_csv.parse(text("not_permitted.log"))
    assert out.rows == ()
    assert out.errors and out.errors[0].startswith("ERR_NVGPUCTRPERM")
    assert out.warnings == ("No kernels were profiled.",)


def test_an_unknown_metric_is_named_so_it_can_be_dropped():
    out = ncu_csv.parse(text("unknown_metric.log"))
    assert ncu_csv.unknown_metrics(out.errors, M.METRICS) == (M.ST_BYTES_USED,)
    assert ncu_csv.unknown_metrics(ncu_csv.parse(text("not_permitted.log")).errors, M.METRICS) == ()
    sentence = (f"Failed to find metric {M.L2_BYTES}.",)  # a name at the end of a sentence
    assert ncu_csv.unknown_metrics(sentence, M.METRICS) == (M.L2_BYTES,)
