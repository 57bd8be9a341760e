"""The compiler pool: every baseline through warm processes, time and memory limits, refusals
before any process starts, cancellation and closing."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from cuda_llm.engine.compile.compiler_pool import CompilerPool, PoolClosedError, compile_once
from cuda_llm.engine.core.errors import FormatError, TaskFileError
from cuda_llm.engine.core.settings import CompileSettings
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.model import Task
from tests.compile import kernels
from tests.compile.attacks import ATTACKS, attack
from tests.compile.conftest import needs_nvrtc

pytestmark = needs_nvrtc
# One event loop for the module, so the shared pool fixture outlives each test.
in_module_loop = pytest.mark.asyncio(loop_scope="module")

# Short enough for a test, far longer than any real kernel takes (vector_add: 40 ms).
BOMB_TIMEOUT = CompileSettings(timeout_s=2.0)


def _tasks() -> list[Task | TaskFileError]:
    return list(TaskLibrary().load_all())


def _task_params() -> list[object]:
    params: list[object] = []
    for item in _tasks():
        if isinstance(item, TaskFileError):
            # Another test suite owns the task files; here a broken one is only reported.
            params.append(pytest.param(item, id=str(item.path), marks=pytest.mark.skip(str(item))))
        else:
            params.append(pytest.param(item, id=item.name))
    return params


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool() -> AsyncIterator[CompilerPool]:
    async with CompilerPool(CompileSettings(), workers=2) as p:
        yield p


def test_there_are_tasks_to_compile() -> None:
    assert any(isinstance(t, Task) for t in _tasks())


@in_module_loop
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("task", _task_params())
async def test_every_baseline_compiles(pool: CompilerPool, task: Task, arch: str) -> None:
    result = await pool.compile(task.baseline_source, arch)
    assert result.ok, f"{task.name}: {result.error}\n{result.log}"
    assert result.cubin is not None and result.arch == arch
    assert result.errors == ()
    kernel_names = {launch.kernel for launch in task.baseline_plan.launches}
    assert kernel_names <= set(result.ptx_entries), result.ptx_entries
    assert kernel_names <= {k.name for k in result.kernels}
    assert not result.writes_device_globals


@in_module_loop
async def test_more_compiles_than_processes_queue_up(pool: CompilerPool) -> None:
    results = await asyncio.gather(*(pool.compile(kernels.TRIVIAL, "sm_90") for _ in range(7)))
    assert all(r.ok for r in results)


@in_module_loop
async def test_compile_errors_come_back_as_results(pool: CompilerPool) -> None:
    result = await pool.compile(kernels.BROKEN, "sm_90")
    assert not result.ok and not result.timed_out
    assert [(d.line, d.column) for d in result.errors] == [(4, 20), (5, 15)]


@in_module_loop
async def test_a_template_bomb_times_out_and_the_next_compile_works() -> None:
    async with CompilerPool(BOMB_TIMEOUT, workers=1) as pool:
        assert pool.processes_started == 1
        result = await pool.compile(kernels.TEMPLATE_BOMB, "sm_90")
        assert result.timed_out and not result.ok and result.cubin is None
        assert result.error == "compile timed out after 2 s (template recursion?)"
        assert pool.processes_started == 2  # the killed process was replaced
        after = await pool.compile(kernels.TRIVIAL, "sm_90")
        assert after.ok and not after.timed_out


@in_module_loop
async def test_the_memory_cap_stops_a_memory_bomb() -> None:
    # The time limit far above what the bomb takes to reach the cap, even on a busy machine (20 s
    # fired first there): this test is about the cap, and a time-out would hide whether it works.
    capped = dataclasses.replace(BOMB_TIMEOUT, timeout_s=150.0, memory_limit_bytes=1024**3)
    async with CompilerPool(capped, workers=1) as pool:
        result = await pool.compile(kernels.MEMORY_BOMB, "sm_90")
        assert not result.ok and not result.timed_out
        assert result.error is not None and "out of memory" in result.error
        assert (await pool.compile(kernels.TRIVIAL, "sm_90")).ok


async def _child_memory_limit(pool: CompilerPool) -> int:
    """What the child process reports as its memory limit (RLIMIT_DATA)."""
    (process,) = pool._processes
    return (await asyncio.to_thread(process.wait_ready, 60))["memory_limit_bytes"]


@in_module_loop
async def test_the_memory_cap_is_the_setting() -> None:
    capped = dataclasses.replace(CompileSettings(), memory_limit_bytes=3 * 1024**3)
    async with CompilerPool(capped, workers=1) as pool:
        assert await _child_memory_limit(pool) == 3 * 1024**3


@in_module_loop
async def test_refusals_start_no_process() -> None:
    pool = CompilerPool(CompileSettings(), workers=1)
    try:
        bad_sources: list[str | bytes] = [
            kernels.TRIVIAL + "// " + "x" * (5 * 1024 * 1024),
            kernels.TRIVIAL + "\0",
            kernels.TRIVIAL.encode() + b"// \xff\n",
            *(attack(name) for name in ATTACKS),
        ]
        for source in bad_sources:
            with pytest.raises(FormatError):
                await pool.compile(source, "sm_90")
        assert pool.processes_started == 0
    finally:
        pool.close()


@in_module_loop
async def test_a_cancelled_compile_does_not_poison_the_pool() -> None:
    async with CompilerPool(CompileSettings(), workers=1) as pool:
        # Cancelled once its process has the bomb: the process is then busy, and must not be reused.
        (process,) = pool._processes
        handed = asyncio.Event()
        loop = asyncio.get_running_loop()
        compile_in_process = process.compile

        def compile_and_say(*args):
            loop.call_soon_threadsafe(handed.set)
            return compile_in_process(*args)

        process.compile = compile_and_say  # type: ignore[method-assign]
        task = asyncio.create_task(pool.compile(kernels.TEMPLATE_BOMB, "sm_90"))
        await asyncio.wait_for(handed.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        result = await asyncio.wait_for(pool.compile(kernels.TRIVIAL, "sm_90"), 30)
        assert result.ok
        assert pool.processes_started == 2


@in_module_loop
async def test_a_closed_pool_refuses_work() -> None:
    pool = CompilerPool(CompileSettings(), workers=1)
    assert (await pool.compile(kernels.TRIVIAL, "sm_90")).ok
    pool.close()
    pool.close()  # closing twice is harmless
    with pytest.raises(PoolClosedError):
        await pool.compile(kernels.TRIVIAL, "sm_90")


def test_compile_once_compiles() -> None:
    result = compile_once(kernels.SHARED_TILE, "sm_90")
    assert result.ok
    kernel = result.kernel("transpose_tile")
    assert kernel is not None and kernel.shared_bytes == 4224


def test_compile_once_has_the_same_time_limit() -> None:
    result = compile_once(kernels.TEMPLATE_BOMB, "sm_90", BOMB_TIMEOUT)
    assert result.timed_out
    assert result.error == "compile timed out after 2 s (template recursion?)"


def test_compile_once_refuses_before_starting() -> None:
    with pytest.raises(FormatError, match="NUL byte"):
        compile_once(kernels.TRIVIAL + "\0", "sm_90")


async def _straight_to_the_child(pool: CompilerPool, source: str) -> str:
    """What the one child of `pool` says of `source` sent past the parent's own check: the child's
    check alone (its analysis of the header macros) stands between the source and NVRTC."""
    (process,) = pool._processes
    result = await asyncio.to_thread(process.compile, source, "sm_90", 30.0)
    assert not result.ok, "the child compiled a header-macro attack"
    return result.error or ""


# Refused only by the analysis of the header macros (an empty one lets it through to NVRTC).
MACRO_ATTACK = attack("header_macro_pragma")
REFUSED = "rejected before compiling"


@in_module_loop
async def test_a_child_takes_the_parents_analysis_of_the_header_macros() -> None:
    from cuda_llm.engine.compile import header_macros

    header_macros.current()  # the engine checks a source before it starts a process: it has made it
    async with CompilerPool(CompileSettings(), workers=1) as pool:
        (process,) = pool._processes
        assert process.info is not None and process.info["header_macros"] == "from the parent"
        assert REFUSED in await _straight_to_the_child(pool, MACRO_ATTACK)


@in_module_loop
async def test_a_child_scans_for_itself_when_the_parents_analysis_is_of_other_folders(monkeypatch) -> None:
    # An analysis that refuses nothing, said to be of a folder the child does not use: were it taken,
    # the child's check would let the attack through to NVRTC.
    from cuda_llm.engine.compile import header_macros

    nothing_refused = header_macros.KnownMacros((("/no/such/headers", 1, 2, 3),), header_macros.NO_HEADERS)
    monkeypatch.setattr(header_macros, "known", lambda: nothing_refused)
    async with CompilerPool(CompileSettings(), workers=1) as pool:
        (process,) = pool._processes
        assert process.info is not None and process.info["header_macros"] == "scanned"
        assert REFUSED in await _straight_to_the_child(pool, MACRO_ATTACK)
