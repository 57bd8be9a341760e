"""The vendor library on a real GPU: every task that has a library.py gets a library latency, timed
like a candidate and validated against the reference (needs CuPy, present on the GPU image)."""

from __future__ import annotations

import importlib.util

import pytest

from cuda_llm.engine.gpu.library import library_name

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason='the library column needs CuPy ("[library]")'),
]

LIBRARY_TASKS = [
    "vector_add",
    "matrix_copy",
    "matrix_transpose",
    "reverse_array",
    "reduction_sum",
    "dot_product",
    "prefix_sum",
    "softmax",
    "matmul",
    "gemm_fp16",
    "gemm_bf16",
    "histogram",
    "spmv_csr",
]


@pytest.mark.parametrize("name", LIBRARY_TASKS)
def test_the_library_is_timed_and_validated(gpu, name):
    task = gpu.task(name)
    assert library_name(task) is not None
    result = gpu.run(gpu.env.judge(task, gpu.settings).library())
    assert result.note is None, f"{name}: {result.note}"
    assert result.timing is not None and result.timing.samples > 0 and result.timing.state_check is None
    fig = result.figures
    assert fig is not None and fig.suspect is None, fig
    print(
        f"{name}: {result.name} {result.median_us:.1f} us, {fig.speedup:.2f}x the baseline, "
        f"{fig.roofline_pct:.0f}% of the achievable roofline"
    )
