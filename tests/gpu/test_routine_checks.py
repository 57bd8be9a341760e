"""Three checks of the judge that no GPU test pinned before, each with a kernel that only that check
can catch (bench/named_mutants.py --gpu removes each check and must see its test go red):

- the inputs unchanged after validation's runs (engine/gpu/validate.py): a kernel that rewrites its
  inputs consistently, so both runs agree and are right;
- the re-check after timing (engine/gpu/profile.py, `_check_one`): a kernel that passes validation
  and answers the re-check's inputs with a stale result;
- graph-mode timing: a short plan is timed as a CUDA graph of K replays, and each sample is divided by
  K (checked against an independent timer).

The CPU test at the end compiles every kernel here against its task with NVRTC."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.judge.judgement import Candidate, Compiled

from .routine_kernels import REMEMBERS_ITS_INPUTS, SHORT_N, SORTS_ITS_INPUTS, short_vector_add


@pytest.mark.gpu
def test_a_kernel_that_rewrites_its_inputs_consistently_is_wrong(gpu):
    j = gpu.judge("vector_add", SORTS_ITS_INPUTS)
    assert j.status == "wrong", j.message
    cases = j.validation.cases
    # Right in both runs of every case: no other check has anything to say.
    assert cases and all(c.wrong == 0 for c in cases), cases
    assert any((c.problem or "").startswith("the kernel wrote to input 'a'") for c in cases), cases


def _compiled(gpu, task_name: str, source: str, label: str) -> Compiled:
    task = gpu.task(task_name)
    judge = gpu.env.judge(task, gpu.settings)
    compiled = gpu.run(judge.compile(Candidate(label, source, task.baseline_plan)))
    assert isinstance(compiled, Compiled), compiled
    return compiled


@pytest.fixture(scope="module")
def worker_state(gpu):
    """A GPU worker's state in this process, shared by the re-check test's two cases."""
    from cuda_llm.engine.gpu.worker_process import WorkerState

    return WorkerState(0, gpu.settings)


@pytest.mark.gpu
@pytest.mark.parametrize("remembers", [False, True], ids=["baseline", "remembers-its-inputs"])
def test_a_stale_answer_after_timing_fails_the_re_check(gpu, worker_state, remembers):
    """Validated, then timed, in one loaded module, so what the kernel remembers lasts from validation
    to the re-check (in this process: a worker's own reset of module state between runs, where it has
    one, is not what this test is about). The baseline is the control: the same steps, no complaint."""
    from cuda_llm.engine.gpu.validate import validate

    task = gpu.task("vector_add")
    source = REMEMBERS_ITS_INPUTS if remembers else task.baseline_source
    compiled = _compiled(gpu, "vector_add", source, "re-check")
    state = worker_state
    module = state.ctx.load_module(compiled.compile.cubin)
    try:
        report = validate(
            state.ctx,
            state.info,
            state.harness,
            state.refs,
            task,
            module,
            compiled.bound,
            gpu.settings.validation,
            inputs=state.inputs,
            vault=state.vault,
        )
        assert report.verdict == "correct", report.summary
        profile = state.profiler.profile(task, [("re-check", module, compiled.bound, False)])
    finally:
        state.ctx.unload_module(module)
        state.refs.unpin_all()  # the cache's arrays are freed with it: never while page-locked
    (timing,) = profile.timings
    assert timing.fault is None and timing.samples > 0, timing
    if remembers:
        expected = f"after timing, new input values in the same buffers gave {task.timing.as_dict()['n']} wrong"
        assert (timing.state_check or "").startswith(expected), timing.state_check
    else:
        assert timing.state_check is None, timing.state_check


@pytest.mark.gpu
@pytest.mark.skipif(
    not (importlib.util.find_spec("cupy") and importlib.util.find_spec("triton")),
    reason="the independent timer needs cupy and triton",
)
def test_a_short_plan_is_timed_as_a_graph_per_replay(gpu, tmp_path):
    """A plan under graph_threshold_us is timed K replays to a sample; the figure is per replay, as
    triton's do_bench times one run. The bound is loose (a factor of 2: replays in a row and single
    launches do not see the same caches and gaps); not dividing by K (at least 40 here) is far outside
    it. The events-mode agreement to 5% is tests/gpu/test_timing.py's."""
    from bench.independent import do_bench_us

    folder = str(short_vector_add(tmp_path))
    task = gpu.task(folder)
    assert task.timing.as_dict() == {"n": SHORT_N}
    j = gpu.judge(folder, profile=True)
    timing = j.timing
    assert timing is not None and timing.fault is None, j.message
    assert timing.mode == "graph", f"{timing.median_us:.1f} us in {timing.mode} mode: this GPU is too slow for the test"
    assert timing.replays >= 2000 / 50, timing.replays  # graph_target_us over graph_threshold_us
    theirs = do_bench_us(task, _compiled(gpu, folder, task.baseline_source, "independent"))
    assert 0.5 < timing.median_us / theirs < 2.0, (
        f"profiler {timing.median_us:.2f} us per replay, do_bench {theirs:.2f} us"
    )


# ---- on the CPU: the kernels above compile and bind against their tasks ----------------------


def _nvrtc_problem() -> str | None:
    try:
        from cuda_llm.engine.compile.nvrtc_library import version

        version()
    except Exception as exc:  # no cuda-bindings or no libnvrtc: the GPU tests' kernels cannot be compiled
        return str(exc)
    return None


def test_the_kernels_of_these_tests_compile_and_bind(tmp_path):
    problem = _nvrtc_problem()
    if problem:
        pytest.skip(f"NVRTC unavailable: {problem}")
    from cuda_llm.engine.fsr.judging import open_environment
    from cuda_llm.engine.task import TaskLibrary
    from cuda_llm.engine.task.loader import load_task

    settings = Settings()
    library = TaskLibrary()
    short = load_task(short_vector_add(tmp_path))
    assert short.timing.as_dict() == {"n": SHORT_N}
    vector_add = library.get("vector_add")
    programs = [(vector_add, SORTS_ITS_INPUTS), (vector_add, REMEMBERS_ITS_INPUTS), (short, short.baseline_source)]

    async def compile_all() -> list:
        env = await open_environment(settings, "sm_90", compile_only=True, compilers=1)
        try:
            return [
                await env.judge(task, settings).compile(Candidate("routine", source, task.baseline_plan))
                for task, source in programs
            ]
        finally:
            await env.close()

    results = asyncio.run(compile_all())
    for (task, _source), result in zip(programs, results, strict=True):
        assert isinstance(result, Compiled), f"{task.name}: {result.status}: {result.message}"
        assert result.compile.cubin, task.name
