"""`cuda-llm eval --counters` as a user runs it, compile-only here: the counters are one line saying why
there are none, and the verdict stands (the GPU test tests/counters/test_counters_gpu.py reads them)."""

from __future__ import annotations

import subprocess
import sys

from recorded_outputs import kernels, min_bytes

from cuda_llm.app.cli.eval_cmd import counters_lines
from cuda_llm.engine.counters.derive import derive
from cuda_llm.engine.counters.model import unavailable


def test_compile_only_says_why_there_are_no_counters(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cuda_llm.app.launcher",
            "eval",
            "vector_add",
            "baseline",
            "--compile-only",
            "--counters",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "counters: counters unavailable: compile-only: there is no GPU to read counters on" in done.stdout
    assert "verdict:  compiled" in done.stdout


def test_the_eval_report_shows_the_line_each_launch_and_the_other_findings():
    report = derive(
        kernels("h200_reduction_sum_baseline.csv", ("block_sums", "final_sum")), min_bytes("reduction_sum"), 132
    )
    lines = counters_lines(report)
    assert lines[0].startswith("counters: what limits it: block_sums (89% of the time): compute-bound")
    assert lines[1].startswith("          block_sums: 1466.8 us, DRAM 8% / SM 79% of peak, 0.54 GB from DRAM")
    assert lines[2].startswith("          final_sum: 188.3 us")
    assert all(line.startswith(("counters:", "          ")) for line in lines)
    assert not [line for line in lines if "also:" in line]  # its two findings are both in the line
    softmax = derive(kernels("h200_softmax_baseline.csv", ("softmax_rows",)), min_bytes("softmax"), 132)
    assert [line.split("also: ")[1] for line in counters_lines(softmax) if "also:" in line] == [
        f.text for f in softmax.findings[4:]
    ]
    assert counters_lines(unavailable("no ncu here")) == ["counters: counters unavailable: no ncu here"]
    assert counters_lines(None) == []


def test_run_offers_the_engine_s_counters_modes():
    from cuda_llm.app.cli.run_cmd import COUNTERS_CHOICES
    from cuda_llm.engine.core.settings import COUNTERS_MODES

    assert COUNTERS_CHOICES == COUNTERS_MODES


def test_doctor_says_where_ncu_is_or_that_it_is_missing(tmp_path, monkeypatch):
    from cuda_llm.app.cli.doctor_cmd import check_counters

    monkeypatch.setenv("CUDA_LLM_NCU", str(tmp_path / "missing-ncu"))
    missing = check_counters()
    assert missing.status == "warn" and "ncu (Nsight Compute) was not found" in missing.detail
    ncu = tmp_path / "ncu"
    ncu.write_text("#!/bin/sh\n")
    monkeypatch.setenv("CUDA_LLM_NCU", str(ncu))
    found = check_counters()
    assert found.status == "ok" and found.detail.startswith(str(ncu))


def test_the_headless_run_prints_a_counters_line():
    import io

    from cuda_llm.app.cli.progress import ProgressPrinter
    from cuda_llm.engine.fsr import events as ev
    from cuda_llm.engine.judge.judgement import Judgement

    report = derive(
        kernels("h200_matrix_transpose_baseline.csv", ("matrix_transpose",)), min_bytes("matrix_transpose"), 132
    )
    out = io.StringIO()
    printer = ProgressPrinter(out, live=False)
    printer(ev.CountersRead(1, 2, Judgement("r2-1", "correct", "correct", counters=report), True))
    printer(ev.CountersRead(1, 3, Judgement("r3-1", "correct", "correct", counters=unavailable("no ncu here")), True))
    first, second = out.getvalue().splitlines()
    assert first.startswith("  counters of r2-1 (0.0 s): what limits it: memory-bound on the L1/L2 caches")
    assert second == "  counters unavailable: no ncu here; the session goes on without them"
