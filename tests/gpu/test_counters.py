"""Hardware counters on a real GPU (ncu): what limits each kernel, as a CUDA engineer would say it, for
the library's baselines and for good kernels of our own (bench/heldout), and the counters line in a
real session's next prompt. Skipped without a GPU; on a machine whose counters cannot be read (no ncu,
ERR_NVGPUCTRPERM, a gVisor sandbox) every test skips with the one line the step gives."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from llm_servers import Reply
from session_driver import options, run_session

from cuda_llm.engine.contract.reply import parse_reply
from cuda_llm.engine.counters import metrics as M
from cuda_llm.engine.counters.model import CountersReport
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.judge.judgement import Candidate, Compiled

pytestmark = pytest.mark.gpu

HELDOUT = Path(__file__).resolve().parents[2] / "bench" / "heldout"
_TASKS = sorted(
    p.name for p in (Path(__file__).resolve().parents[2] / "tasks").iterdir() if (p / "task.toml").is_file()
)


def counters(gpu, task_name: str, source: str | None = None, plan=None, label: str = "candidate") -> CountersReport:
    """Compile the kernel (the task's baseline by default) and read its counters; skip where the
    machine cannot read any."""
    task = gpu.task(task_name)
    judge = gpu.env.judge(task, gpu.settings)
    cand = Candidate(label, source or task.baseline_source, plan or task.baseline_plan, origin="user")
    compiled = gpu.run(judge.compile(cand))
    assert isinstance(compiled, Compiled), compiled
    report = gpu.run(judge.read_counters(compiled))
    if report.unavailable is not None:
        pytest.skip(report.line())
    print(f"{task_name} {label}: {report.line()} ({report.elapsed_s:.1f} s)")
    for k in report.kernels:
        print(f"  {k.kernel}: {k.duration_us:.1f} us, DRAM {k.get(M.DRAM_PCT)}%, SM {k.get(M.SM_PCT)}%")
    return report


def heldout(gpu, name: str, task: str, edit=lambda s: s) -> CountersReport:
    reply = parse_reply((HELDOUT / f"{name}.md").read_text())
    return counters(gpu, task, edit(reply.source), reply.plan, label=name)


def kinds(report: CountersReport) -> list[str]:
    return [f.kind for f in report.findings]


@pytest.mark.parametrize("task_name", _TASKS)
def test_every_baseline_has_counters_for_each_launch_and_a_line(gpu, task_name):
    task = gpu.task(task_name)
    if getattr(task, "pytorch_module", None):
        pytest.skip("an imported task's baseline is PyTorch eager, not a launch plan")
    report = counters(gpu, task_name, label="baseline")
    assert [k.launch for k in report.kernels] == list(range(len(task.baseline_plan.launches)))
    assert [k.kernel for k in report.kernels] == [la.kernel for la in task.baseline_plan.launches]
    for k in report.kernels:
        assert k.duration_us > 0 and k.get(M.DRAM_PCT) is not None and k.get(M.SM_PCT) is not None
    assert report.line().startswith("what limits it: ") and report.summary


def test_vector_adds_are_dram_bound_near_peak_moving_the_minimum(gpu):
    for report in (counters(gpu, "vector_add", label="baseline"), heldout(gpu, "vector_add_float4", "vector_add")):
        assert kinds(report)[0] in ("near_peak", "memory_bound"), report.summary
        assert report.reread_factor is not None and 0.9 < report.reread_factor < 1.3
        assert not {"uncoalesced_loads", "uncoalesced_stores", "rereads"} & set(kinds(report))
    assert kinds(report)[0] == "near_peak", report.summary  # the float4 kernel


def test_the_naive_transpose_is_uncoalesced_and_the_tiled_one_is_not(gpu):
    naive = counters(gpu, "matrix_transpose", label="baseline")
    assert {"uncoalesced_stores", "uncoalesced_loads"} & set(kinds(naive)), naive.summary
    tiled = heldout(gpu, "matrix_transpose_tiled", "matrix_transpose")
    assert not {"uncoalesced_stores", "uncoalesced_loads", "bank_conflicts"} & set(kinds(tiled)), tiled.summary
    assert tiled.kernels[0].duration_us < naive.kernels[0].duration_us


def test_a_tile_without_padding_has_bank_conflicts(gpu):
    unpadded = heldout(
        gpu,
        "matrix_transpose_tiled",
        "matrix_transpose",
        lambda s: s.replace("tile[TILE][TILE + 1]", "tile[TILE][TILE]"),
    )
    assert "bank_conflicts" in kinds(unpadded), unpadded.summary


def test_the_naive_matmul_re_reads_and_the_tiled_one_reads_far_less(gpu):
    naive = counters(gpu, "matmul", label="baseline")
    assert {"rereads", "cache_rereads"} & set(kinds(naive)), naive.summary
    tiled = heldout(gpu, "matmul_tiled64", "matmul")
    assert tiled.kernels[0].get(M.L2_BYTES) < naive.kernels[0].get(M.L2_BYTES) / 2
    assert tiled.kernels[0].duration_us < naive.kernels[0].duration_us


def test_the_two_pass_reductions_describe_their_first_kernel(gpu):
    for report in (
        counters(gpu, "reduction_sum", label="baseline"),
        heldout(gpu, "reduction_sum_two_pass", "reduction_sum"),
    ):
        assert len(report.kernels) == 2
        assert {f.launch for f in report.findings if f.launch is not None} == {0}, report.findings
        assert report.summary.startswith(report.kernels[0].kernel)
    assert kinds(report)[0] in ("near_peak", "memory_bound"), report.summary  # the grid-stride float4 one


def test_eval_counters_prints_the_line_and_each_launch(gpu):
    done = subprocess.run(
        [sys.executable, "-m", "cuda_llm.app.launcher", "eval", "matrix_transpose", "baseline", "--counters"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("counters:")]
    assert len(lines) == 1, done.stdout
    if "counters unavailable" in lines[0]:
        pytest.skip(lines[0])
    assert "uncoalesced global" in done.stdout and "matrix_transpose:" in done.stdout
    print(done.stdout)


async def test_a_headless_session_s_next_prompt_carries_the_counters_line(gpu, tmp_path, llm_server):
    """A real session on this GPU with the scripted model server: round 1's float4 kernel becomes the
    best, its counters are read, and round 2's request (the server's log) carries what limits it."""
    llm_server.default = Reply.text((HELDOUT / "vector_add_float4.md").read_text())
    opts = dataclasses.replace(options(tmp_path, "ollama:loop-model", candidates=1, rounds=2), compile_only=False)
    result, rec = await run_session(opts, host=llm_server.url)
    assert result.status == "finished"
    reads = rec.of(ev.CountersRead)
    assert reads and reads[0].is_best
    if reads[0].judgement.counters.unavailable is not None:
        pytest.skip(reads[0].judgement.counters.line())
    assert len(llm_server.chat_requests) == 2, result.reason  # options() runs both rounds (no roofline stop)
    second = llm_server.chat_requests[1].messages[-1]["content"]
    assert "Hardware counters of this kernel" in second and "- what limits it: " in second
    print(next(line for line in second.splitlines() if line.startswith("- what limits it: ")))
