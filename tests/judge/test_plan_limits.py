"""The judge checks a plan at every validation and timing size before anything runs: compile-only
mode refuses what no GPU of the target arch could launch, with the message the model gets."""

from __future__ import annotations

import pytest
from fakes.fake_gpu import FakeGpu, fake_environment

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.judge.judge_environment import JudgeEnvironment
from cuda_llm.engine.judge.judgement import Candidate
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.plan import parse_plan

VECTOR_ADD = TaskLibrary().get("vector_add")


def candidate(grid, block, shared=0, scratch=()):
    plan = parse_plan(
        {
            "scratch": list(scratch),
            "launches": [
                {
                    "kernel": "vector_add",
                    "grid": grid,
                    "block": block,
                    "shared_bytes": shared,
                    "args": ["a", "b", "c", "n"],
                }
            ],
        }
    )
    return Candidate("r1-1", VECTOR_ADD.baseline_source, plan)


BAD = [
    (["cdiv(n, 2048)"], [2048], 0, (), "block.x = 2048, over the limit of 1024"),
    ([1, 70000], [256], 0, (), "grid.y = 70000, over the limit of 65535"),
    (["cdiv(n, 256)"], [256], 10**9, (), "over the limit of"),
    (["n - n"], [256], 0, (), "at n=1: launches[0].grid.x = n - n is 0"),
    (["n // 0"], [256], 0, (), "division by zero"),
    (["cdiv(n, 256)"], [256], 0, ({"name": "t", "dtype": "float32", "count": 4 * 10**18},), "scratch buffers need"),
]


@pytest.mark.parametrize(("grid", "block", "shared", "scratch", "words"), BAD)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_120"])
async def test_compile_only_refuses_what_no_gpu_can_launch(grid, block, shared, scratch, words, arch):
    env = JudgeEnvironment(fake_environment().compiler, None, None, None, arch, None)
    try:
        j = await env.judge(VECTOR_ADD, Settings()).judge(candidate(grid, block, shared, scratch))
    finally:
        await env.close()
    assert j.status == "launch_error" and j.failed
    assert words in j.message and words in j.detail
    assert j.compile is not None and j.compile.ok, "it compiled: the plan is what is wrong"


async def test_shared_memory_fits_one_arch_and_not_another():
    plan = candidate(["cdiv(n, 256)"], [256], 150 * 1024)
    verdicts = {}
    for arch in ("sm_80", "sm_86"):
        env = JudgeEnvironment(fake_environment().compiler, None, None, None, arch, None)
        try:
            verdicts[arch] = await env.judge(VECTOR_ADD, Settings()).judge(plan)
        finally:
            await env.close()
    assert verdicts["sm_80"].status == "compiled"
    assert verdicts["sm_86"].status == "launch_error" and "on sm_86" in verdicts["sm_86"].message


async def test_with_a_gpu_the_devices_limits_apply_before_it_runs_anything():
    gpu = FakeGpu()
    env = fake_environment(gpu)
    try:
        j = await env.judge(VECTOR_ADD, Settings()).judge(candidate(["cdiv(n, 2048)"], [2048]))
    finally:
        await env.close()
    assert j.status == "launch_error" and "on Fake H100" in j.message
    assert gpu.validated == [], "refused before the GPU saw it"
