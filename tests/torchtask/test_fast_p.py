"""fast_p and the speedup over eager in bench's table and bench.json (app/cli/bench_table.py): only
rows of tasks imported from PyTorch modules count; a correct kernel slower than eager counts for
fast_0 and the geometric mean, not for fast_1."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from cuda_llm.app.cli.bench_cmd import build_row
from cuda_llm.app.cli.bench_table import EAGER, BenchRow, bench_document, markdown


def row(task: str, correct: int, fastest: float | None, kind: str = EAGER) -> BenchRow:
    speedup = max(1.0, fastest or 1.0)
    return BenchRow(
        task=task,
        session=1,
        model="m",
        status="finished",
        validated=True,
        candidates=4,
        compiled=4,
        correct=correct,
        baseline_us=100.0,
        best_label="r1-1" if speedup > 1 else "baseline",
        best_us=100.0 / speedup,
        speedup=speedup,
        baseline_kind=kind,
        fastest_correct_speedup=fastest,
    )


ROWS = [
    row("wrong_only", 0, None),
    row("slower_than_eager", 2, 0.8),
    row("faster", 1, 1.5),
    row("much_faster", 3, 3.0),
    row("vector_add", 1, 9.0, kind="cuda"),  # a hand-written task: not one of the field's problems
]


def test_fast_p_counts_the_imported_problems_only():
    doc = bench_document(ROWS, {"model": "m"}, "now", "0", ["bench"])
    f = doc["summary"]["fast_p"]
    assert f["problems"] == 4
    assert f["counts"] == {"fast_0": 3, "fast_1": 2, "fast_2": 1}
    assert f["fast"]["fast_0"] == pytest.approx(0.75)
    assert f["geomean_vs_eager"] == pytest.approx(math.exp((math.log(0.8) + math.log(1.5) + math.log(3.0)) / 3))


def test_the_table_prints_fast_p_and_names_eager_as_the_baseline():
    text = markdown(bench_document(ROWS, {"model": "m"}, "now", "0", ["bench"]))
    assert "fast_0 = 0.75 (3/4), fast_1 = 0.50 (2/4), fast_2 = 0.25 (1/4)" in text
    assert "geometric mean speedup over eager of the correct problems' fastest kernels (3): 1.53x" in text
    assert (
        "baseline: PyTorch eager" in text
        and "vector_add" not in text.split("baseline: PyTorch eager")[1].split("\n")[0]
    )


def test_a_bench_without_imported_tasks_has_no_fast_p():
    doc = bench_document([ROWS[-1]], {"model": "m"}, "now", "0", ["bench"])
    assert doc["summary"]["fast_p"] is None
    assert "fast_0" not in markdown(doc)


def test_a_row_takes_the_fastest_correct_kernel_even_below_eager(tmp_path):
    report = {
        "history": [
            {"label": "baseline", "status": "correct", "speedup": 1.0},
            {"label": "r1-1", "status": "correct", "speedup": 0.6},
            {"label": "r1-2", "status": "correct", "speedup": 0.9},
            {"label": "r1-3", "status": "wrong", "speedup": None},
        ],
        "compile_only": False,
        "best": None,  # nothing beat eager
        "baseline_us": 50.0,
        "session": 3,
        "rounds": [1],
        "tokens_used": 10,
        "settings": {},
        "task_folder": str(tmp_path / "gone"),  # a folder no longer there reads as a plain task
    }
    r = build_row("t", "m", SimpleNamespace(status="finished", reason="done"), report, None, 1.0)
    assert r.fastest_correct_speedup == 0.9 and r.speedup == 1.0 and r.baseline_kind == "cuda"


def test_a_row_of_an_imported_task_is_against_eager(imported):
    report = {
        "history": [{"label": "r1-1", "status": "correct", "speedup": 2.5}],
        "compile_only": False,
        "best": None,
        "baseline_us": 50.0,
        "session": 3,
        "rounds": [1],
        "tokens_used": 10,
        "settings": {},
        "task_folder": str(imported["scale_add_relu"]),
    }
    r = build_row("scale_add_relu", "m", SimpleNamespace(status="finished", reason="done"), report, None, 1.0)
    assert r.baseline_kind == EAGER and r.fastest_correct_speedup == 2.5
