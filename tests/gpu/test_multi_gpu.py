"""Several GPUs of one host, on real ones: a round split across every GPU the session has, a worker
killed on one GPU while the others go on, and device buffers reused between candidates without one
candidate ever finding another's output. The multi-GPU tests skip on a host with one GPU; the
`gpu` session fixture judges on every GPU of the host."""

from __future__ import annotations

import asyncio
import os
import signal

import numpy as np
import pytest

from cuda_llm.engine.gpu.client import ProfileFailure
from cuda_llm.engine.gpu.protocol import ProfileReport
from cuda_llm.engine.judge.judgement import Candidate, Compiled

pytestmark = pytest.mark.gpu

NOOP = 'extern "C" __global__ void k(const float* a, const float* b, float* c, int n) { }'
# How often the test looks whether a GPU's worker has begun its timing job (it takes 100 ms or more).
BUSY_POLL_S = 0.001


def round_of_8():
    from bench.round_gpus import candidates

    return candidates()


def several(gpu) -> int:
    size = gpu.env.gpu.size
    if size < 2:
        pytest.skip("needs a host with two GPUs or more")
    return size


async def validated_round(judge, cands: list[Candidate]):
    async def one(c: Candidate):
        compiled = await judge.compile(c)
        assert isinstance(compiled, Compiled), compiled
        return compiled, await judge.validate(compiled)

    judged = await asyncio.gather(*(one(c) for c in cands))
    assert all(j.status == "correct" for _c, j in judged), [j.message for _c, j in judged]
    return judged


def test_a_round_is_split_across_every_gpu(gpu):
    size = several(gpu)
    judge = gpu.env.judge(gpu.task("vector_add"), gpu.settings)

    async def round_():
        return await judge.profile(await validated_round(judge, round_of_8()))

    timing = gpu.run(round_())
    assert len(timing.judgements) == 8 and all(j.timing is not None for j in timing.judgements), [
        j.message for j in timing.judgements
    ]
    used = {j.ran_on.gpu_index for j in timing.judgements}
    assert used == set(range(min(size, 8))), f"the round was timed on GPUs {sorted(used)} of {size}"
    assert len(timing.profile_phases_s) == min(size, 8), "one timing job per GPU"
    for j in timing.judgements:
        # The speedup is against the baseline timed on the candidate's own GPU.
        assert j.device.endswith(f"#{j.ran_on.gpu_index}"), j.device


def test_a_worker_killed_on_one_gpu_while_the_others_go_on(gpu):
    several(gpu)
    pool = gpu.env.gpu
    victim = pool.workers[1]
    restarts = victim.restarts
    judge = gpu.env.judge(gpu.task("vector_add"), gpu.settings)

    async def round_with_a_kill():
        judged = await validated_round(judge, round_of_8())
        timing = asyncio.ensure_future(judge.profile(judged))
        while not victim._lock.locked() and not timing.done():  # its timing job has begun
            await asyncio.sleep(BUSY_POLL_S)
        assert not timing.done(), "the round was timed before GPU 1's worker could be killed"
        os.kill(victim._proc.pid, signal.SIGKILL)
        return await timing

    timing = gpu.run(round_with_a_kill())
    assert all(j.timing is not None for j in timing.judgements), [j.message for j in timing.judgements]
    assert all(j.status == "correct" for j in timing.judgements), "no candidate is blamed for the kill"
    assert any("timing was interrupted" in n for n in timing.notes), timing.notes
    assert victim.restarts == restarts + 1, "GPU 1's worker was started again"
    assert {j.ran_on.gpu_index for j in timing.judgements} >= {0, 1}


def test_a_reused_buffer_holds_nothing_of_the_last_candidate_on_any_gpu(gpu):
    """Each GPU validates a correct kernel and then one that writes nothing, at the same sizes: its
    buffers come back from the arena, and the second must still find only poison."""
    task = gpu.task("vector_add")
    judge = gpu.env.judge(task, gpu.settings)

    async def pairs():
        good = await judge.compile(Candidate("good", task.baseline_source, task.baseline_plan))
        noop_plan = round_of_8()[0].plan
        noop = await judge.compile(Candidate("noop", NOOP, noop_plan))
        assert isinstance(good, Compiled) and isinstance(noop, Compiled)
        out = []
        for worker in gpu.env.gpu.workers:
            first = await worker.validate(task, good.program())
            second = await worker.validate(task, noop.program())
            out.append((worker.device_index, first, second))
        return out

    for index, first, second in gpu.run(pairs()):
        assert first.verdict == "correct", (index, first.summary)
        assert second.verdict == "wrong", (index, second.summary)
        assert all(c.unwritten == c.checked for c in second.cases), (index, second.cases)


def test_the_driver_wipes_a_freed_buffer_before_handing_it_out_again(cuda_context):
    ctx = cuda_context
    nbytes = 3 * 2**20 + 5
    first = ctx.alloc(nbytes)
    ctx.fill32(first, 0x12345678)
    ctx.wait(5.0)
    ctx.free(first)
    again = ctx.alloc(nbytes)
    try:
        assert (again.ptr, again.base) == (first.ptr, first.base), "a buffer of the same size is reused"
        host = np.ones(nbytes, dtype=np.uint8)
        ctx.download(again, host, 5.0)
        assert not host.any(), "a reused buffer holds nothing of its last user"
    finally:
        ctx.free(again)


def test_the_pool_times_on_the_gpu_asked_for(gpu):
    """pool.profile(worker=i) runs on GPU i (the Judge's split relies on it)."""
    size = several(gpu)
    task = gpu.task("vector_add")
    judge = gpu.env.judge(task, gpu.settings)

    async def on_each():
        baseline = await judge.baseline()
        return [await gpu.env.gpu.profile(task, [baseline.program()], worker=i) for i in range(size)]

    reports = gpu.run(on_each())
    assert not any(isinstance(r, ProfileFailure) for r in reports), reports
    assert [r.ran_on.gpu_index for r in reports if isinstance(r, ProfileReport)] == list(range(size))
