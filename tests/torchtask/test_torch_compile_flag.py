"""torch.compile as an optional second figure beside eager (`--torch-compile`), on the CPU: the flag
reaches the settings of eval, run and bench (and a bench's rerun), the judge compiles in a request of
its own before timing, its figure gives every later judgement 'x torch.compile' beside 'x eager', and
a compile that fails or runs out of time is one line while everything goes on without it. The real
compile and timing on a GPU: tests/torchtask/test_gpu_import.py's torch.compile test."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from pathlib import Path

from fakes.fake_gpu import FakeGpu, fake_environment
from scripted import chunked, reply
from session_driver import options, run_session

from cuda_llm.app.cli import eval_cmd
from cuda_llm.app.cli.bench_cmd import BenchRequest, _options, request_from_args, request_from_bench
from cuda_llm.app.cli.bench_table import BenchRow, bench_document, cells, markdown
from cuda_llm.app.cli.main import build_parser
from cuda_llm.app.cli.run_cmd import session_options
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.fsr import events as ev
from cuda_llm.engine.gpu.protocol import ProfileReport, ProgramRef
from cuda_llm.engine.gpu.torch_compile import TORCH_COMPILE_LABEL
from cuda_llm.engine.judge.judgement import Candidate
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.model import Task

ROOT = Path(__file__).resolve().parents[2]
ON = dataclasses.replace(Settings(), profile=dataclasses.replace(Settings().profile, torch_compile=True))


class CompilingGpu(FakeGpu):
    """The fake GPU with the worker's torch.compile request: `compile_note` is its answer (None: ready),
    `compile_us` the compiled module's time in a profile that asks for it."""

    def __init__(self, compile_note: str | None = None, compile_us: float = 80.0) -> None:
        super().__init__()
        self.compile_note = compile_note
        self.compile_us = compile_us
        self.compiles: list[str] = []
        self.asked: list[bool] = []

    async def torch_compile(self, task: Task) -> str | None:
        self.compiles.append(task.name)
        return self.compile_note

    async def profile(
        self, task: Task, programs: list[ProgramRef], library: bool = False, torch_compile: bool = False
    ) -> ProfileReport:
        self.asked.append(torch_compile)
        report = await super().profile(task, programs, library)
        if not torch_compile:
            return report
        timing = self._timing(TORCH_COMPILE_LABEL, f"_us{self.compile_us:g}")
        return dataclasses.replace(report, timings=(*report.timings, timing))


def _imported_vector_add(tmp_path: Path) -> Path:
    """vector_add as `tasks import` would describe it: a [pytorch] table and the module's file (the
    fake GPU runs neither; the judge only reads that the baseline is eager)."""
    folder = tmp_path / "imported" / "vector_add"
    shutil.copytree(ROOT / "tasks" / "vector_add", folder)
    (folder / "library.py").unlink()
    (folder / "module.py").write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, a, b):\n        return a + b\n"
    )
    toml = folder / "task.toml"
    toml.write_text(toml.read_text() + '\n[pytorch]\nmodule = "module.py"\ninputs = ["a", "b"]\noutputs = ["c"]\n')
    return folder


def _fast_candidate(judge) -> Candidate:
    """The task's own baseline renamed so the fake GPU times it at 40 us."""
    plan = judge.task.baseline_plan
    kernel = plan.launches[0].kernel
    source = judge.task.baseline_source.replace(f"{kernel}(", f"{kernel}_us40(")
    first = dataclasses.replace(plan.launches[0], kernel=f"{kernel}_us40")
    return Candidate("r1-1", source, dataclasses.replace(plan, launches=(first, *plan.launches[1:])), origin="user")


async def _judge_with(gpu: CompilingGpu, task: Task):
    env = fake_environment(gpu)
    try:
        judge = env.judge(task, ON)
        compiled = await judge.torch_compile()
        judged = await judge.judge(_fast_candidate(judge))
        again = await judge.torch_compile()
        return compiled, judged, again
    finally:
        await env.close()


def test_the_flag_reaches_eval_run_and_bench():
    parser = build_parser()
    for argv in (["eval", "vector_add", "baseline"], ["run", "vector_add"], ["bench", "--tasks", "vector_add"]):
        assert parser.parse_args(argv).torch_compile is False
        assert parser.parse_args([*argv, "--torch-compile"]).torch_compile is True
    args = parser.parse_args(["run", "vector_add", "--model", "ollama:m", "--torch-compile"])
    assert session_options(args, "vector_add").torch_compile is True
    assert Settings().profile.torch_compile is False  # off unless asked for
    # bench keeps it in bench.json's request, so a --rerun compiles again
    args = parser.parse_args(["bench", "--tasks", "vector_add", "--model", "ollama:m", "--torch-compile"])
    request = request_from_args(args)
    assert request.torch_compile and request.to_json()["torch_compile"] is True
    assert _options(request, "vector_add", "ollama:m").torch_compile is True
    rerun = request_from_bench({"request": request.to_json()}, "bench.json", args)
    assert rerun.torch_compile is True
    assert BenchRequest(tasks=("x",), model="m").torch_compile is False


def test_an_imported_task_gets_x_torch_compile_beside_x_eager(tmp_path):
    task = TaskLibrary().get(str(_imported_vector_add(tmp_path)))
    gpu = CompilingGpu(compile_us=80.0)
    compiled, judged, again = asyncio.run(_judge_with(gpu, task))
    assert gpu.compiles == [task.name]  # compiled once per judge, in its own request
    assert again is compiled
    assert compiled.timing is not None and compiled.timing.median_us == 80.0
    assert compiled.figures is not None and compiled.figures.speedup == 100.0 / 80.0  # eager at 100 us
    assert judged.figures.torch_compile_speedup == 2.0  # 80 us over the candidate's 40
    assert "2.50x eager, 2.00x torch.compile" in judged.message
    text = eval_cmd.render(judged, "Fake H100 (sm_90)", torch_compile=compiled)
    assert "compiled: torch.compile: 80.0 us (IQR 1.6), 1.25x eager" in text
    assert "2.50x eager, 2.00x torch.compile" in next(x for x in text.splitlines() if x.startswith("profile:"))


def test_a_failed_compile_is_one_line_and_eager_goes_on(tmp_path):
    task = TaskLibrary().get(str(_imported_vector_add(tmp_path)))
    why = "torch.compile did not finish within 600 s (settings: profile.torch_compile_timeout_s)"
    gpu = CompilingGpu(compile_note=why)
    compiled, judged, _ = asyncio.run(_judge_with(gpu, task))
    assert compiled.timing is None and compiled.note == why
    assert True not in gpu.asked  # nothing asks the worker to time what it could not compile
    assert judged.status == "correct" and judged.figures.torch_compile_speedup is None
    assert judged.message.endswith("2.50x eager") or "2.50x eager," in judged.message
    assert "torch.compile" not in judged.message
    text = eval_cmd.render(judged, "Fake H100 (sm_90)", torch_compile=compiled)
    (line,) = [x for x in text.splitlines() if "torch.compile" in x]
    assert line == f"compiled: torch.compile: not timed: {why}"


def test_a_hand_written_task_says_why_there_is_no_compile():
    gpu = CompilingGpu()
    compiled, judged, _ = asyncio.run(_judge_with(gpu, TaskLibrary().get("vector_add")))
    assert compiled.timing is None and compiled.note == "task 'vector_add' is not imported from a PyTorch module"
    assert gpu.compiles == []
    assert "2.50x the baseline" in judged.message


async def test_a_session_says_it_once_and_goes_on(tmp_path, llm_server):
    llm_server.default = chunked(reply())
    task = str(_imported_vector_add(tmp_path))
    opts = dataclasses.replace(
        options(tmp_path, "ollama:loop-model", candidates=1, rounds=1), compile_only=False, task=task
    )
    gpu = CompilingGpu(compile_note="torch.compile failed: no triton")
    result, rec = await run_session(
        dataclasses.replace(opts, torch_compile=True), host=llm_server.url, environment=fake_environment(gpu)
    )
    notices = [n for n in rec.of(ev.Notice) if "torch.compile" in n.message]
    assert [(n.message, n.level) for n in notices] == [
        (
            "torch.compile: no figure, going on with eager alone: torch.compile failed: no triton",
            "warning",
        )
    ]
    assert result.rounds == 1 and rec.of(ev.RoundFinished)
    # and with it compiled: the round's line carries both speedups
    gpu = CompilingGpu(compile_us=80.0)
    result, rec = await run_session(
        dataclasses.replace(opts, torch_compile=True, db=str(tmp_path / "second.db")),
        host=llm_server.url,
        environment=fake_environment(gpu),
    )
    (done,) = rec.of(ev.RoundFinished)
    assert done.best_speedup_text is not None and done.best_speedup_text.endswith("x torch.compile")
    assert any(n.message.startswith("torch.compile: 80.0 us on Fake H100") for n in rec.of(ev.Notice))


def test_the_bench_row_shows_both():
    row = BenchRow(
        task="t",
        session=1,
        model="m",
        status="finished",
        validated=True,
        speedup=2.5,
        torch_compile_speedup=2.0,
        baseline_kind="eager",
        torch_compile={"asked": True, "median_us": 80.0},
    )
    assert "2.50x eager, 2.00x torch.compile" in cells(row)
    plain = dataclasses.replace(row, torch_compile_speedup=None, torch_compile={})
    assert "2.50x" in cells(plain)
    assert BenchRow.from_json(dataclasses.asdict(row)) == row
    failed = dataclasses.replace(plain, torch_compile={"asked": True, "median_us": None, "note": "it failed"})
    document = bench_document([failed], {"model": "m", "tasks": ["t"]}, "2026-01-01", "0", ["cuda-llm", "bench"])
    assert "- torch.compile: no figure for t: it failed" in markdown(document)
