"""Launch plans at every validation and timing size against what a GPU can launch
(engine/contract/limits.py): the rules the judge applies before anything runs, in compile-only mode
with the target arch's limits, and the GPU worker again with the device's."""

from __future__ import annotations

from typing import Any

import pytest

from cuda_llm.engine.contract import limits
from cuda_llm.engine.contract.limits import (
    ARCH_LIMITS,
    PlanError,
    SizedPlan,
    arch_limits,
    check_every_size,
    device_limits,
    size_plan,
)
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.plan import parse_plan

from .test_binding import VECTOR_ADD, bind, vadd

H90 = ARCH_LIMITS["sm_90"]


def vector_add_plan(**launch: Any):
    args = launch.pop("args", ["a", "b", "c", "n"])
    scratch = launch.pop("scratch", None)
    return bind(VECTOR_ADD, [vadd(args, **launch)], scratch=scratch)


def error_at(plan, env: dict[str, int], lim=H90, task_bytes: int = 12, static=None) -> str:
    with pytest.raises(PlanError) as info:
        size_plan(plan, env, lim, task_bytes, static)
    return str(info.value)


# ---- the table of per-arch limits ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("arch", "optin_kib"),
    [("sm_75", 64), ("sm_80", 163), ("sm_86", 99), ("sm_89", 99), ("sm_90", 227), ("sm_100", 227), ("sm_120", 99)],
)
def test_the_table_holds_each_archs_shared_memory_opt_in(arch, optin_kib):
    lim = arch_limits(arch)
    assert lim.shared_per_block_optin == optin_kib * 1024
    assert lim.max_threads_per_block == 1024 and lim.max_block_dims == (1024, 1024, 64)
    assert lim.max_grid_dims == (2**31 - 1, 65535, 65535) and lim.shared_per_block == 48 * 1024
    assert lim.where == arch


def test_an_arch_variant_or_one_the_table_lacks_gets_limits_that_say_where_they_come_from():
    assert arch_limits("sm_90a").shared_per_block_optin == 227 * 1024 and arch_limits("sm_90a").where == "sm_90a"
    near = arch_limits("sm_88")
    assert near.shared_per_block_optin == 163 * 1024 and "limits of sm_87" in near.where
    unknown = arch_limits("sm_130")
    assert unknown.shared_per_block_optin == 64 * 1024 and "not in the table" in unknown.where


def test_a_devices_own_limits_are_used_as_it_reports_them():
    from fakes.fake_gpu import FAKE_DEVICE

    lim = device_limits(FAKE_DEVICE)
    assert lim.where == "Fake H100" and lim.shared_per_block_optin == FAKE_DEVICE.shared_per_block_optin


# ---- one size ------------------------------------------------------------------------------------


def test_a_good_plan_is_sized():
    sized = size_plan(vector_add_plan(), {"n": 1000}, H90, 12_000)
    assert isinstance(sized, SizedPlan)
    (la,) = sized.launches
    assert la.grid == (4, 1, 1) and la.block == (256, 1, 1) and la.threads == 256 and la.shared == 0


@pytest.mark.parametrize(
    ("launch", "words"),
    [
        ({"block": [2048]}, ["launches[0].block.x = 2048", "limit of 1024 on sm_90"]),
        ({"block": [64, 64]}, ["a block of 4096 threads", "limit of 1024 threads per block"]),
        ({"grid": [1, 70000]}, ["launches[0].grid.y = 70000", "limit of 65535"]),
        ({"block": [1, 1, 128]}, ["block.z = 128", "limit of 64"]),
        ({"shared_bytes": 1_000_000_000}, ["1000000000 bytes of dynamic shared memory", "232448 bytes per block"]),
        ({"grid": ["n - n"]}, ["at n=1000: launches[0].grid.x = n - n is 0", "at least 1"]),
        ({"grid": ["n // 0"]}, ["at n=1000: launches[0].grid.x", "division by zero"]),
        ({"grid": ["cdiv(n, 0)"]}, ["cdiv by zero"]),
        ({"shared_bytes": "1 - n"}, ["shared_bytes = 1 - n is -999", "negative"]),
        ({"grid": ["n * n * n * 4"]}, ["grid.x = n * n * n * 4 is 4000000000", "limit of 2147483647"]),
    ],
)
def test_what_no_gpu_can_launch_is_refused_with_a_message_for_the_model(launch, words):
    message = error_at(vector_add_plan(**launch), {"n": 1000})
    for w in words:
        assert w in message, message


def test_static_shared_memory_counts_toward_the_limit():
    plan = vector_add_plan(shared_bytes=200 * 1024)
    size_plan(plan, {"n": 10}, H90, 120)
    message = error_at(plan, {"n": 10}, static={"vector_add": 40 * 1024})
    assert "40960 bytes of static plus 204800 bytes of dynamic" in message
    assert "over the limit of 101376 bytes per block on sm_86" in error_at(plan, {"n": 10}, arch_limits("sm_86"))


@pytest.mark.parametrize(
    ("count", "words"),
    [
        ("4000000000000000000", ["the scratch buffers need", "over the limit of 256 MiB"]),
        ("n - 2000", ['scratch[0] "tmp": count = n - 2000 is -1000', "negative size"]),
    ],
)
def test_scratch_that_no_gpu_can_allocate_is_refused(count, words):
    plan = vector_add_plan(scratch=[{"name": "tmp", "dtype": "float32", "count": count}])
    message = error_at(plan, {"n": 1000}, task_bytes=12_000)
    for w in words:
        assert w in message, message


def test_scratch_grows_with_the_task():
    """Twice the task's buffers plus 256 MiB: a partial-sum buffer the size of the input fits."""
    plan = vector_add_plan(scratch=[{"name": "tmp", "dtype": "float32", "count": "n"}])
    n = 100_000_000
    sized = size_plan(plan, {"n": n}, H90, 12 * n)
    assert sized.scratch_bytes == (("tmp", 4 * n),)


def test_an_integer_argument_that_overflows_its_parameter_at_a_size_is_refused():
    plan = vector_add_plan(args=["a", "b", "c", "n * n"])
    size_plan(plan, {"n": 1000}, H90, 12_000)
    assert "does not fit the kernel's int32 parameter" in error_at(plan, {"n": 100_000}, task_bytes=1_200_000)


# ---- every size of a task ------------------------------------------------------------------------


def _task_plan(task, plan_json: dict[str, Any]):
    from cuda_llm.engine.contract.binding import bind_plan
    from cuda_llm.engine.contract.signature import parse_kernels

    return bind_plan(parse_plan(plan_json), task, parse_kernels(task.baseline_source))


@pytest.mark.parametrize("name", TaskLibrary().names())
def test_every_baseline_fits_every_listed_arch(name):
    task = TaskLibrary().get(name)
    bound = _task_plan(task, task.baseline_plan.to_json())
    for lim in ARCH_LIMITS.values():
        check_every_size(bound, task, lim)  # raises PlanError at the first size that cannot run
    # Every size was looked at: the timing size, the largest, is sized with a launch per plan launch.
    sized = size_plan(bound, task.env(task.timing), H90, task.buffer_bytes(task.timing))
    assert len(sized.launches) == len(bound.launches) and all(g >= 1 for la in sized.launches for g in la.grid)


def test_a_plan_wrong_only_at_a_small_size_is_found_and_the_size_named():
    task = TaskLibrary().get("vector_add")
    bound = _task_plan(
        task,
        {
            "launches": [
                {"kernel": "vector_add", "grid": ["cdiv(n, 256) - 1"], "block": [256], "args": ["a", "b", "c", "n"]}
            ]
        },
    )
    with pytest.raises(PlanError, match=r"^at n=1: launches\[0\]\.grid\.x = cdiv\(n, 256\) - 1 is 0"):
        check_every_size(bound, task, H90)


def test_a_plan_wrong_only_at_the_timing_size_says_so():
    task = TaskLibrary().get("vector_add")
    # Blocks along y: 4096 of them at the largest validation size, 131072 at the timing size.
    bound = _task_plan(
        task,
        {
            "launches": [
                {"kernel": "vector_add", "grid": [1, "cdiv(n, 256)"], "block": [256], "args": ["a", "b", "c", "n"]}
            ]
        },
    )
    with pytest.raises(PlanError) as info:
        check_every_size(bound, task, H90)
    assert str(info.value).startswith("at the timing size (n=33554432): launches[0].grid.y = cdiv(n, 256) is 131072")


def test_the_gpu_worker_applies_the_same_rules():
    """engine/gpu/runner.py sizes a plan with size_plan and raises the contract's PlanError (the
    worker turns it into a launch error); the rules are not written twice."""
    from cuda_llm.engine.gpu import runner

    assert runner.PlanError is limits.PlanError and runner.size_plan is limits.size_plan
