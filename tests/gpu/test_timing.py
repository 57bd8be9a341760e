"""The profiler's figures repeat, and agree with an independent timer (triton's do_bench on CuPy
launches of the same cubin)."""

import importlib.util

import pytest

from engine.judge.judgement import Candidate, Compiled

pytestmark = pytest.mark.gpu


def _compiled(gpu, name: str) -> Compiled:
    task = gpu.task(name)
    judge = gpu.env.judge(task, gpu.settings)
    compiled = gpu.run(judge.compile(Candidate("baseline-check", task.baseline_source, task.baseline_plan)))
    assert isinstance(compiled, Compiled)
    return compiled


@pytest.mark.parametrize("name", ["vector_add", "reduction_sum", "matmul"])
def test_repeated_profiles_agree_within_two_percent(gpu, name):
    medians = [gpu.judge(name, profile=True).timing.median_us for _ in range(3)]
    spread = (max(medians) - min(medians)) / min(medians)
    assert spread <= 0.02, f"{name}: medians {medians} spread {spread:.1%}"


@pytest.mark.skipif(
    not (importlib.util.find_spec("cupy") and importlib.util.find_spec("triton")),
    reason="the independent timer needs cupy and triton",
)
@pytest.mark.parametrize("name", ["vector_add", "matrix_transpose", "matmul"])
def test_agrees_with_an_independent_timer(gpu, name):
    from bench.independent import do_bench_us

    ours = gpu.judge(name, profile=True).timing.median_us
    theirs = do_bench_us(gpu.task(name), _compiled(gpu, name))
    assert abs(ours - theirs) / theirs <= 0.05, f"{name}: profiler {ours:.1f} us, do_bench {theirs:.1f} us"
