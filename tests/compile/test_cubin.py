"""Module-scope device memory read from the cubin with no GPU (engine/compile/cubin.py), counted
against the plan's memory allowance by the judge, and the CUDA of every judge cheat of issue 43
(tests/judge_cheats.py) proven to compile, so the GPU tests that judge them run the first time."""

from __future__ import annotations

import pytest
from fakes.fake_gpu import FakeGpu, fake_environment
from judge_cheats import (
    CACHED_MATMUL,
    EVERY_CHEAT,
    HUGE_GLOBAL_VADD,
    MODEST_GLOBAL_VADD,
    TAMPERING_VADD,
    VADD_PLAN,
)

from cuda_llm.engine.compile.cubin import (
    ANCHORS,
    CubinError,
    device_variables,
    module_device_bytes,
    module_memory,
    module_variables,
)
from cuda_llm.engine.compile.nvrtc import compile_in_process
from cuda_llm.engine.contract.binding import bind_plan
from cuda_llm.engine.contract.limits import PlanError, arch_limits, check_every_size
from cuda_llm.engine.contract.signature import parse_kernels
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.judge.judgement import Candidate
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.plan import parse_plan
from tests.compile.conftest import needs_nvrtc

pytestmark = needs_nvrtc


def cubin_of(source: str) -> bytes:
    result = compile_in_process(source, "sm_90")
    assert result.ok and result.cubin is not None, result.log
    return result.cubin


@pytest.mark.parametrize("name", sorted(EVERY_CHEAT))
def test_every_judge_cheat_compiles(name):
    cubin_of(EVERY_CHEAT[name])


def test_each_device_variable_is_found_with_its_section_offset_and_size():
    found = {v.name: v for v in device_variables(cubin_of(CACHED_MATMUL))}
    assert found["cache"].size_bytes == 4 * 2048 * 2048 and found["cache"].section == ".nv.global"
    assert found["stored"].size_bytes == 32 and found["stored"].section == ".nv.global"
    assert found["cache"].offset != found["stored"].offset
    # The judge's anchors are in every program, one in each writable section.
    assert {found[a].section for a in ANCHORS} == {".nv.global", ".nv.global.init"}


def test_a_64_gib_array_counts_in_full_though_its_section_header_says_less():
    cubin = cubin_of(HUGE_GLOBAL_VADD)
    assert module_device_bytes(cubin) >= 1 << 36
    memory = module_memory(cubin)
    assert memory.largest[0] == ("big", 1 << 36)
    assert "big 65,536.0 MiB" in memory.describe()


def test_constant_memory_and_shared_memory_are_not_writable_device_variables():
    source = """
    __constant__ float weights[16];
    __device__ const float table[4] = {1, 2, 3, 4};
    static __device__ int hidden[5];
    extern "C" __global__ void k(float* x)
    {
        __shared__ float tile[32];
        tile[threadIdx.x] = weights[threadIdx.x] + table[threadIdx.x & 3];
        hidden[threadIdx.x & 3] += 1;
        x[threadIdx.x] = tile[threadIdx.x] + hidden[0];
    }
    """
    every = {v.name: v for v in module_variables(cubin_of(source))}
    writable = {v.name for v in device_variables(cubin_of(source))}
    assert not every["weights"].writable and every["weights"].section.startswith(".nv.constant")
    # A const table and a static variable are still device memory a kernel could find and write.
    assert {"table", "hidden"} <= writable and "weights" not in writable and "tile" not in writable


def test_bytes_that_are_not_a_cubin_are_refused():
    with pytest.raises(CubinError):
        module_variables(b"not an ELF file at all, not even close to one")
    cubin = cubin_of(TAMPERING_VADD)
    with pytest.raises(CubinError):
        module_variables(cubin[:100])


def bound_vector_add(source: str):
    task = TaskLibrary().get("vector_add")
    result = compile_in_process(source, "sm_90")
    return task, bind_plan(parse_plan(VADD_PLAN), task, parse_kernels(source), result.ptx_entries), result.cubin


def test_module_memory_counts_against_the_scratch_allowance():
    task, bound, cubin = bound_vector_add(HUGE_GLOBAL_VADD)
    with pytest.raises(PlanError) as caught:
        check_every_size(bound, task, arch_limits("sm_90"), None, module_memory(cubin))
    assert "__device__ variables (big 65,536.0 MiB)" in str(caught.value) and "scratch" in str(caught.value)
    check_every_size(bound, task, arch_limits("sm_90"))  # the plan alone was fine: the module is the excess
    task, bound, cubin = bound_vector_add(MODEST_GLOBAL_VADD)
    check_every_size(bound, task, arch_limits("sm_90"), None, module_memory(cubin))


async def test_the_judge_refuses_it_before_any_gpu_sees_it():
    gpu = FakeGpu()
    env = fake_environment(gpu)
    try:
        task = TaskLibrary().get("vector_add")
        j = await env.judge(task, Settings()).judge(Candidate("r1-1", HUGE_GLOBAL_VADD, parse_plan(VADD_PLAN)))
    finally:
        await env.close()
    assert j.status == "launch_error" and "big" in j.message, j.message
    assert gpu.validated == [], "refused before the GPU saw it"
