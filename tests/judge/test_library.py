"""The vendor library as a second yardstick (engine/gpu/library.py), without a GPU: which tasks have
one, what a judge says when it cannot time it (no CuPy, no GPU, no library.py), and the figures it
derives when a (fake) GPU does time it."""

from __future__ import annotations

import shutil

import pytest
from fakes.fake_gpu import BASELINE_US, FakeGpu, fake_environment

from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.library import INSTALL_HINT, cupy_missing, library_name
from cuda_llm.engine.judge.judge_environment import JudgeEnvironment
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.loader import load_task

# The list: cuBLAS for the matrix products, CUB-class reductions and scans, a library
# transpose and copy, softmax where a library has one (layernorm has none in CuPy).
WITH_LIBRARY = {
    "matmul": "cuBLAS",
    "gemm_fp16": "cuBLAS",
    "reduction_sum": "CUB",
    "dot_product": "cuBLAS",
    "prefix_sum": "CUB",
    "matrix_transpose": "cuBLAS",
    "matrix_copy": "cudaMemcpy",
    "softmax": "softmax",
    "histogram": "CUB",
    "spmv_csr": "cuSPARSE",
    "vector_add": "CuPy",
    "reverse_array": "CuPy",
}


@pytest.mark.parametrize(("task", "vendor"), sorted(WITH_LIBRARY.items()))
def test_the_library_tasks_name_what_is_timed(task, vendor):
    name = library_name(TaskLibrary().get(task))
    assert name is not None and vendor in name


def test_tasks_without_a_library_say_so():
    library = TaskLibrary()
    without = {t.name for t in library.load_all() if not isinstance(t, Exception) and library_name(t) is None}
    assert "layernorm" in without and not without & set(WITH_LIBRARY)


def test_library_py_is_not_part_of_the_task_fingerprint(tmp_path):
    """Adding a yardstick must not make the task's recorded sessions unresumable."""
    src = TaskLibrary().get("layernorm").folder
    folder = shutil.copytree(src, tmp_path / "layernorm")
    before = load_task(folder, Settings().validation).fingerprint
    (folder / "library.py").write_text('NAME = "a library"\n\ndef bind(cp, bufs, params, stream):\n    pass\n')
    assert load_task(folder, Settings().validation).fingerprint == before
    (folder / "reference.py").write_text((folder / "reference.py").read_text() + "\n# changed\n")
    assert load_task(folder, Settings().validation).fingerprint != before, "the task's own files still count"


async def test_without_a_gpu_the_library_is_not_timed_and_says_why():
    env = JudgeEnvironment(fake_environment().compiler, None, None, None, "sm_90", None)
    try:
        result = await env.judge(TaskLibrary().get("matmul"), Settings()).library()
    finally:
        await env.close()
    assert result.name and "cuBLAS" in result.name and result.timing is None
    assert result.note == "compile-only: no GPU to time it on"


async def test_a_task_without_a_library_has_no_figure():
    env = fake_environment(FakeGpu(library_us=50))
    try:
        result = await env.judge(TaskLibrary().get("layernorm"), Settings()).library()
    finally:
        await env.close()
    assert result.name is None and result.timing is None and "no vendor-library reference" in result.note


async def test_without_cupy_the_note_says_how_to_get_it():
    if cupy_missing() is None:
        pytest.skip("CuPy is installed here")
    env = fake_environment(FakeGpu())  # the fake answers as the worker does: the real reason
    try:
        result = await env.judge(TaskLibrary().get("reduction_sum"), Settings()).library()
    finally:
        await env.close()
    assert result.timing is None and INSTALL_HINT in result.note


async def test_a_timed_library_gives_figures_against_the_baseline_once_per_judge():
    gpu = FakeGpu(library_us=40)
    env = fake_environment(gpu)
    try:
        judge = env.judge(TaskLibrary().get("vector_add"), Settings())
        result = await judge.library()
        again = await judge.library()
    finally:
        await env.close()
    assert result.note is None and result.median_us == 40
    assert result.figures.speedup == pytest.approx(BASELINE_US / 40)
    assert result.of_library(80.0) == pytest.approx(0.5) and result.of_library(20.0) == pytest.approx(2.0)
    assert again is result and len(gpu.profiled) == 1, "timed once, with the baseline beside it"
    assert gpu.profiled[0] == ("baseline",)
