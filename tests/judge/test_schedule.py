"""A round's timing split across GPUs by expected cost (engine/judge/schedule.py), longest first, so a
slow candidate gets a GPU of its own instead of holding one while another idles. Assignments only:
no wall clock."""

from __future__ import annotations

import dataclasses
import re

from fakes.fake_gpu import FakeGpu, fake_environment

from cuda_llm.engine.core.settings import ProfileSettings, Settings
from cuda_llm.engine.judge.judgement import Candidate, Compiled, Judgement
from cuda_llm.engine.judge.schedule import PROGRAM_OVERHEAD_S, expected_cost_s, split_by_cost
from cuda_llm.engine.task import TaskLibrary

KERNEL = (
    'extern "C" __global__ void vadd_us{us}(const float* a, const float* b, float* c, int n)'
    " {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }}"
)


def test_longest_first_each_to_the_least_loaded_gpu() -> None:
    costs = {"slow": 9.0, "a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0, "f": 1.0, "g": 1.0}
    groups = split_by_cost(list(costs), 2, costs.__getitem__)
    assert groups == [["slow"], ["a", "b", "c", "d", "e", "f", "g"]]
    # Round-robin would have put the slow one with three others: 12 against 4.
    assert [sum(costs[x] for x in g) for g in groups] == [9.0, 7.0]


def test_equal_costs_split_evenly_in_order_and_never_more_groups_than_items() -> None:
    assert split_by_cost(list("abcde"), 2, lambda _x: 1.0) == [["a", "c", "e"], ["b", "d"]]
    assert split_by_cost(list("ab"), 4, lambda _x: 1.0) == [["a"], ["b"]]
    assert split_by_cost([], 4, lambda _x: 1.0) == [[]], "the baseline alone is still timed on one GPU"
    four = split_by_cost(list(range(8)), 4, lambda x: float(8 - x))  # 8, 7, ... 1
    assert sorted(sum(8 - x for x in g) for g in four) == [9, 9, 9, 9]


def test_the_cost_comes_from_the_validations_run_phase_capped_by_the_profilers_limit() -> None:
    settings = ProfileSettings()
    fast = Judgement("fast", "correct", "ok", validation=_report(run_s=0.0002))
    slow = Judgement("slow", "correct", "ok", validation=_report(run_s=0.02))
    endless = Judgement("endless", "correct", "ok", validation=_report(run_s=100.0))
    unknown = Judgement("unknown", "correct", "ok")
    assert expected_cost_s(fast, settings) < expected_cost_s(slow, settings)
    assert expected_cost_s(endless, settings) == PROGRAM_OVERHEAD_S + settings.max_gpu_time_s
    assert expected_cost_s(unknown, settings) == PROGRAM_OVERHEAD_S


def _report(run_s: float):
    from cuda_llm.engine.gpu.protocol import ValidationReport

    return ValidationReport("correct", "ok", phases_s={"run": run_s})


class TimedFakeGpu(FakeGpu):
    """A fake whose validation reports a run phase as long as its kernel's `_usN` marker says, as
    the real worker's does (two runs at the timing size)."""

    async def validate(self, task, program):
        report = await super().validate(task, program)
        us = float(re.search(r"_us(\d+)", program.plan.launches[0].kernel).group(1))
        return dataclasses.replace(report, phases_s={"run": 2 * us / 1e6})


class TwoGpus:
    def __init__(self, gpus: list[FakeGpu]) -> None:
        self.gpus = gpus
        self.size = len(gpus)

    async def validate(self, task, program):
        return await self.gpus[0].validate(task, program)

    async def profile(self, task, programs, worker: int = 0):
        return await self.gpus[worker].profile(task, programs)

    async def peaks(self, force: bool = False):
        return await self.gpus[0].peaks()

    async def close(self) -> None:
        return None


async def test_a_round_gives_its_slow_candidate_a_gpu_of_its_own() -> None:
    task = TaskLibrary().get("vector_add")
    gpus = [TimedFakeGpu(), TimedFakeGpu()]
    env = dataclasses.replace(fake_environment(gpus[0]), gpu=TwoGpus(gpus))
    judge = env.judge(task, Settings())
    try:
        judged = []
        # The first is slow (20 ms a run: 30 samples make 0.6 s), the other seven quick.
        for i, us in enumerate((20000, 100, 110, 120, 130, 140, 150, 160)):
            plan = dataclasses.replace(
                task.baseline_plan,
                launches=tuple(dataclasses.replace(la, kernel=f"vadd_us{us}") for la in task.baseline_plan.launches),
            )
            c = await judge.compile(Candidate(f"c{i}", KERNEL.format(us=us), plan))
            assert isinstance(c, Compiled), c
            judged.append((c, await judge.validate(c)))
        rt = await judge.profile(judged)
    finally:
        await env.close()
    assert [g.profiled[0] for g in gpus] == [
        ("baseline", "c0"),
        ("baseline", "c1", "c2", "c3", "c4", "c5", "c6", "c7"),
    ]
    assert {j.label for j in rt.judgements} == {f"c{i}" for i in range(8)}
    assert all(j.timing is not None for j in rt.judgements)


def test_the_compilers_grow_with_the_gpus_within_the_hosts_cores(monkeypatch) -> None:
    from cuda_llm.engine.judge import judge_environment
    from cuda_llm.engine.judge.judge_environment import COMPILERS_PER_GPU, compile_workers

    settings = Settings()
    monkeypatch.setattr(judge_environment.os, "cpu_count", lambda: 64)
    one, four = compile_workers(settings, 1), compile_workers(settings, 4)
    assert one == max(settings.compile.max_workers, COMPILERS_PER_GPU)
    assert four == 4 * COMPILERS_PER_GPU, "a round of 8 on 4 GPUs compiles in one wave"
    monkeypatch.setattr(judge_environment.os, "cpu_count", lambda: 6)
    assert compile_workers(settings, 4) == 6
