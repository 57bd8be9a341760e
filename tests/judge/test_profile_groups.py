"""Timing across several GPUs: each GPU times the baseline and the current best next to its share
of the round's candidates, so every candidate is compared with programs timed on its own GPU."""

from __future__ import annotations

import dataclasses

from fakes.fake_gpu import FakeGpu, fake_environment

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.judge.judgement import Candidate, Compiled
from cuda_llm.engine.task import TaskLibrary

KERNEL = (
    'extern "C" __global__ void vadd_us{us}(const float* a, const float* b, float* c, int n)'
    " {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }}"
)


class FakePool:
    """Two fake GPUs behind the pool interface the Judge uses (size, validate, profile(worker=))."""

    def __init__(self, gpus: list[FakeGpu]) -> None:
        self.gpus = gpus
        self.size = len(gpus)
        self.info = gpus[0].info

    async def validate(self, task, program):
        return await self.gpus[0].validate(task, program)

    async def profile(self, task, programs, worker: int = 0):
        return await self.gpus[worker].profile(task, programs)

    async def peaks(self, force: bool = False):
        return await self.gpus[0].peaks()

    async def close(self) -> None:
        return None


async def test_a_round_is_split_across_gpus_with_the_best_on_each():
    task = TaskLibrary().get("vector_add")
    gpus = [FakeGpu(), FakeGpu(baseline_us=110.0)]  # the second GPU is a little slower
    env = fake_environment(gpus[0])
    env = dataclasses.replace(env, gpu=FakePool(gpus))
    judge = env.judge(task, Settings())
    try:
        compiled = []
        for us in (40, 45, 60, 70):
            plan = dataclasses.replace(
                task.baseline_plan,
                launches=tuple(dataclasses.replace(la, kernel=f"vadd_us{us}") for la in task.baseline_plan.launches),
            )
            c = await judge.compile(Candidate(f"c{us}", KERNEL.format(us=us), plan))
            assert isinstance(c, Compiled), c
            compiled.append((c, await judge.validate(c)))
        best = compiled.pop()  # the 70 us kernel plays the current best
        rt = await judge.profile(compiled, anchor=best)
    finally:
        await env.close()
    groups = [g.profiled[0] for g in gpus]
    assert groups[0] == ("baseline", "c70", "c40", "c60") and groups[1] == ("baseline", "c70", "c45")
    assert set(rt.anchors) == {"c40", "c45", "c60"}, "every candidate knows the best as timed beside it"
    by = {j.label: j for j in rt.judgements}
    assert by["c40"].device.endswith("#0") and by["c45"].device.endswith("#1")
    assert by["c45"].figures.speedup == 110.0 / 45.0, "speedup against the baseline on the same GPU"
    assert rt.anchor is not None and rt.anchor.label == "c70" and rt.anchor.timing.median_us == 70.0
