"""The counters runner end to end on this machine, with recorded ncu output replayed where ncu would
run (tests/counters/replay_ncu.py): the command it gives ncu, the report it makes, and each way it
degrades to one line (no ncu, not permitted, a sandbox, an unknown metric, a failed probe, a timeout)."""

from __future__ import annotations

import json
import os
import pickle
import stat
import sys
from pathlib import Path

import pytest
from fakes.fake_gpu import FAKE_DEVICE
from recorded_outputs import RECORDED

from cuda_llm.engine.contract.binding import bind_plan
from cuda_llm.engine.contract.signature import parse_kernels
from cuda_llm.engine.core.settings import CountersSettings, ValidationSettings
from cuda_llm.engine.counters import metrics as M
from cuda_llm.engine.counters import runner
from cuda_llm.engine.counters.probe import ProbeSpec
from cuda_llm.engine.gpu.protocol import ProgramRef
from cuda_llm.engine.task.library import TaskLibrary

REPLAY = Path(__file__).parent / "replay_ncu.py"


@pytest.fixture
def fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An executable named ncu that replays the recorded logs given to it."""
    exe = tmp_path / "ncu"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{REPLAY}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    state = tmp_path / "runs"
    monkeypatch.setenv("REPLAY_NCU_STATE", str(state))

    def use(*logs: str, **env: str) -> tuple[Path, Path]:
        monkeypatch.setenv("REPLAY_NCU_LOGS", os.pathsep.join(str(RECORDED / name) for name in logs))
        for key, value in env.items():
            monkeypatch.setenv(f"REPLAY_NCU_{key.upper()}", value)
        return exe, state

    return use


def baseline_program(task_name: str) -> tuple[object, ProgramRef]:
    task = TaskLibrary().get(task_name)
    bound = bind_plan(task.baseline_plan, task, parse_kernels(task.baseline_source))
    return task, ProgramRef("r1-1", b"not a cubin: ncu is replayed", bound)


async def collect(exe: Path | str, task_name: str = "reduction_sum", timeout_s: float = 60.0):
    task, program = baseline_program(task_name)
    counters = runner.NcuCounters(CountersSettings(ncu_path=str(exe), timeout_s=timeout_s), ValidationSettings())
    return await counters.collect(task, program, FAKE_DEVICE)  # type: ignore[arg-type]


async def test_a_recorded_run_becomes_a_report_with_each_launch_kept(fake_ncu):
    exe, state = fake_ncu("h200_reduction_sum_baseline.csv")
    report = await collect(exe)
    assert report.ok and report.unavailable is None
    assert [(k.launch, k.kernel) for k in report.kernels] == [(0, "block_sums"), (1, "final_sum")]
    assert report.min_bytes == 4 * 134_217_728 + 4
    assert report.summary.startswith("block_sums (89% of the time): compute-bound")
    assert report.elapsed_s > 0
    args = json.loads(Path(f"{state}.args").read_text())
    assert args[args.index("--clock-control") + 1] == "none"  # clocks left alone
    assert args[args.index("--metrics") + 1].split(",") == list(M.METRICS)
    assert args[-3:-1] == ["-m", "cuda_llm.engine.counters.probe"]
    spec = pickle.loads(Path(args[-1]).read_bytes()) if Path(args[-1]).exists() else None
    assert spec is None  # the spec lived in a temporary folder that is gone with the run


async def test_the_probe_is_given_the_task_program_and_device(fake_ncu, tmp_path):
    exe, _state = fake_ncu("h200_reduction_sum_baseline.csv")
    keep = tmp_path / "spec.pkl"
    # The replayed ncu copies the spec it was given before the runner's folder goes away.
    wrapper = tmp_path / "ncu-keep"
    wrapper.write_text(f'#!/bin/sh\nfor a; do last="$a"; done\ncp "$last" "{keep}"\nexec "{exe}" "$@"\n')
    wrapper.chmod(0o755)
    await collect(wrapper)
    spec = pickle.loads(keep.read_bytes())
    assert isinstance(spec, ProbeSpec)
    assert Path(spec.task_folder).name == "reduction_sum"
    assert [la.kernel for la in spec.program.plan.launches] == ["block_sums", "final_sum"]
    assert spec.device == FAKE_DEVICE


async def test_no_ncu_is_one_line(tmp_path):
    report = await collect(tmp_path / "no-such-ncu")
    assert report.unavailable == runner.NO_NCU
    assert report.line().startswith("counters unavailable: ncu (Nsight Compute) was not found")


async def test_counters_not_permitted_say_how_an_administrator_allows_them(fake_ncu):
    exe, _ = fake_ncu("not_permitted.log")
    report = await collect(exe)
    assert report.unavailable == runner.NOT_PERMITTED
    assert "NVreg_RestrictProfilingToAdminUsers=0" in report.line() and "root" in report.line()


async def test_a_sandbox_without_the_profiling_interface_is_one_line(fake_ncu):
    exe, _ = fake_ncu("sandboxed.log")
    report = await collect(exe)
    assert report.unavailable == runner.SANDBOXED


async def test_no_kernel_profiled_is_one_line(fake_ncu):
    exe, _ = fake_ncu("no_kernels.log")
    report = await collect(exe)
    assert report.unavailable == "ncu profiled no kernel of the plan"


async def test_a_metric_this_ncu_does_not_know_is_dropped_and_the_run_repeated(fake_ncu):
    exe, state = fake_ncu("unknown_metric.log", "h200_vector_add_baseline.csv")
    report = await collect(exe, "vector_add")
    assert report.ok
    assert report.dropped_metrics == (M.ST_BYTES_USED,)
    assert state.read_text() == "2"
    args = json.loads(Path(f"{state}.args").read_text())
    assert M.ST_BYTES_USED not in args[args.index("--metrics") + 1].split(",")


async def test_a_probe_that_fails_gives_its_own_line(fake_ncu):
    exe, _ = fake_ncu("no_kernels.log", exit="3", stderr="CudaError: CUDA_ERROR_OUT_OF_MEMORY in cuMemAlloc")
    report = await collect(exe)
    assert (
        report.unavailable
        == "the plan could not be run for counters: CudaError: CUDA_ERROR_OUT_OF_MEMORY in cuMemAlloc"
    )


async def test_a_run_past_its_time_limit_is_stopped(fake_ncu):
    exe, _state = fake_ncu("h200_vector_add_baseline.csv", sleep="60")
    report = await collect(exe, "vector_add", timeout_s=1.0)
    assert report.unavailable == "ncu took longer than 1 s and was stopped"
    assert not report.kernels


async def test_keep_logs_keeps_what_ncu_wrote(fake_ncu, tmp_path):
    exe, _ = fake_ncu("h200_vector_add_baseline.csv")
    task, program = baseline_program("vector_add")
    kept = tmp_path / "kept"
    settings = CountersSettings(ncu_path=str(exe), keep_logs=str(kept))
    report = await runner.NcuCounters(settings, ValidationSettings()).collect(task, program, FAKE_DEVICE)  # type: ignore[arg-type]
    assert report.ok
    (log,) = kept.iterdir()
    assert (
        log.name.startswith("vector_add-r1-1-")
        and log.read_text() == (RECORDED / "h200_vector_add_baseline.csv").read_text()
    )


async def test_a_metric_refused_without_its_name_falls_back_to_the_core_set(fake_ncu):
    exe, state = fake_ncu("metric_refused.log", "h200_vector_add_baseline.csv")
    report = await collect(exe, "vector_add")
    assert report.ok and state.read_text() == "2"
    args = json.loads(Path(f"{state}.args").read_text())
    assert args[args.index("--metrics") + 1].split(",") == list(M.CORE_METRICS)
    assert set(report.dropped_metrics) == set(M.METRICS) - set(M.CORE_METRICS)
