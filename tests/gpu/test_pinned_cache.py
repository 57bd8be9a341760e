"""The reference cache page-locks its large arrays through the driver, within its pinned budget,
and unlocks them when a case leaves the cache or makes room for a newer one. Whether an array is
registered is asked of the driver itself: it refuses to register the same memory twice."""

import pytest

from cuda_llm.engine.gpu.driver import Context
from cuda_llm.engine.gpu.reference_cache import ReferenceCache
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.reference import case_seed

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def ctx(cuda_context):
    return cuda_context


def _registered(ctx: Context, arrays) -> list[bool]:
    """For each array, whether the driver already holds it page-locked (left as it was found)."""
    out = []
    for a in arrays:
        if ctx.pin(a):
            ctx.unpin(a)
            out.append(False)
        else:
            out.append(True)
    return out


def _inputs(cache: ReferenceCache, k: int):
    task = TaskLibrary().get("vector_add")  # at the timing size: two 134 MB inputs a case
    return cache.get(task, task.timing, case_seed(task, task.timing, k, "profile"), with_expected=False)


def test_newest_cases_are_pinned_within_the_budget_and_older_ones_unpinned_for_room(ctx):
    one_case = 2 * 33554432 * 4
    cache = ReferenceCache(pinner=ctx, pinned_budget_bytes=int(2.5 * one_case))
    try:
        first = _inputs(cache, 0)
        assert cache.pinned_bytes == first.nbytes == one_case
        assert _registered(ctx, first.arrays) == [True, True]
        second = _inputs(cache, 1)
        assert cache.pinned_bytes == 2 * one_case
        third = _inputs(cache, 2)  # no room for three: the least recently used is unpinned
        assert cache.pinned_bytes == 2 * one_case
        assert _registered(ctx, first.arrays) == [False, False]
        assert _registered(ctx, [*second.arrays, *third.arrays]) == [True] * 4
        # Used again, the first case is still cached; it is pinned again only when there is room.
        assert _inputs(cache, 0) is first
        assert _registered(ctx, first.arrays) == [False, False]
    finally:
        cache.unpin_all()
    assert cache.pinned_bytes == 0
    assert _registered(ctx, [*second.arrays, *third.arrays]) == [False] * 4


def test_a_case_evicted_from_the_cache_is_unpinned(ctx):
    one_case = 2 * 33554432 * 4
    cache = ReferenceCache(budget_bytes=int(1.5 * one_case), pinner=ctx)
    try:
        first = _inputs(cache, 0)
        second = _inputs(cache, 1)  # over the cache's budget: the first case leaves it
        assert _registered(ctx, first.arrays) == [False, False]
        assert _registered(ctx, second.arrays) == [True, True]
        assert cache.pinned_bytes == one_case
    finally:
        cache.unpin_all()


def test_small_arrays_are_not_pinned(ctx):
    cache = ReferenceCache(pinner=ctx)
    task = TaskLibrary().get("vector_add")
    case = task.validation[0]
    entry = cache.get(task, case, case_seed(task, case, 0))
    assert max(a.nbytes for a in entry.arrays) < 8 * 2**20
    assert cache.pinned_bytes == 0
