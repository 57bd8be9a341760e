"""The judge's side of isolation between programs timed together (issue 43, item 4): when the GPU
worker reports that a program changed inputs while the group was timed (it ran each alone to find
out), that program is wrong and the others are timed again without it, so nobody is blamed for what
another did and no figure comes from samples taken on changed inputs; when no program did it alone,
each candidate is timed in a group of its own, and one that still sees inputs change gets no figure.
The worker's side is tests/gpu/test_timed_runs_checked.py."""

from __future__ import annotations

import dataclasses

from fakes.fake_gpu import FakeGpu, fake_environment

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.protocol import ProfileReport
from cuda_llm.engine.judge.judgement import Candidate, Compiled
from cuda_llm.engine.task import TaskLibrary

KERNEL = (
    'extern "C" __global__ void vadd_{marker}(const float* a, const float* b, float* c, int n)'
    " {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }}"
)
TAMPERED = "while being timed, the kernel wrote to input 'a' of another program timed with it (r1-1)"


class TamperingGpu(FakeGpu):
    """Answers as the worker does when a kernel named *tamper* is in the group (it is found: the
    culprit), or one named *ghost* (inputs change, and no program does it alone)."""

    async def profile(self, task, programs, library=False, torch_compile=False) -> ProfileReport:
        report = await super().profile(task, programs, library, torch_compile)
        names = {p.label: " ".join(la.kernel for la in p.plan.launches) for p in programs}
        culprits = tuple(label for label, kernels in names.items() if "tamper" in kernels)
        if culprits:
            timings = tuple(
                dataclasses.replace(t, state_check=TAMPERED) if t.label in culprits else t for t in report.timings
            )
            return dataclasses.replace(report, timings=timings, tampering=culprits)
        if any("ghost" in kernels for kernels in names.values()):
            return dataclasses.replace(report, tampering_unexplained="inputs of baseline changed while timed")
        return report


async def judged_round(markers: list[str]):
    task = TaskLibrary().get("vector_add")
    gpu = TamperingGpu()
    env = fake_environment(gpu)
    try:
        judge = env.judge(task, Settings())
        entries = []
        for i, marker in enumerate(markers, 1):
            plan = dataclasses.replace(
                task.baseline_plan,
                launches=tuple(dataclasses.replace(la, kernel=f"vadd_{marker}") for la in task.baseline_plan.launches),
            )
            compiled = await judge.compile(Candidate(f"r1-{i}", KERNEL.format(marker=marker), plan))
            assert isinstance(compiled, Compiled), compiled
            entries.append((compiled, await judge.validate(compiled)))
        return await judge.profile(entries), gpu
    finally:
        await env.close()


async def test_the_culprit_is_wrong_and_the_others_are_timed_again_without_it():
    timing, gpu = await judged_round(["us40", "tamper_us10", "us30"])
    by_label = {j.label: j for j in timing.judgements}
    assert by_label["r1-2"].status == "wrong" and TAMPERED in by_label["r1-2"].message
    assert by_label["r1-1"].status == "correct" and by_label["r1-1"].timing.median_us == 40.0
    assert by_label["r1-3"].status == "correct" and by_label["r1-3"].timing.median_us == 30.0
    assert gpu.profiled == [("baseline", "r1-1", "r1-2", "r1-3"), ("baseline", "r1-1", "r1-3")]
    assert any("r1-2 changed inputs" in n for n in timing.notes), timing.notes


async def test_when_no_program_did_it_alone_each_is_timed_on_its_own():
    timing, gpu = await judged_round(["us40", "ghost_us10", "us30"])
    by_label = {j.label: j for j in timing.judgements}
    assert gpu.profiled[0] == ("baseline", "r1-1", "r1-2", "r1-3")
    assert sorted(gpu.profiled[1:]) == [("baseline", "r1-1"), ("baseline", "r1-2"), ("baseline", "r1-3")]
    # Where inputs still changed, no figure, and no blame: the verdict stays what validation said.
    assert by_label["r1-2"].timing is None and by_label["r1-2"].status == "correct"
    assert any("could not be timed" in w for w in by_label["r1-2"].warnings)
    assert by_label["r1-1"].timing.median_us == 40.0 and by_label["r1-3"].timing.median_us == 30.0
    assert timing.baseline is not None
