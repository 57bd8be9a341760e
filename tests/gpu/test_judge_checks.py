"""The device-side checks the judge trusts, pinned on a real GPU (the device mutants of
docs/testing.md): the comparison kernel's bound is the task's tolerance, not a multiple of it, and
an output a kernel never writes still holds the validator's poison, so it is counted as never written."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.model import Tolerance

pytestmark = pytest.mark.gpu

RTOL = 1e-4  # far above fp32's rounding, so 0.5x and 1.5x of the bound are what the data says


@pytest.mark.parametrize("scale", ["abs", "rms", "rms_or_abs"])
def test_the_device_bound_is_the_tolerance_itself(harness, scale):
    """Elements off by 1.5x the allowed error are wrong, those off by 0.5x are not: a kernel that
    allowed twice the error (or half) counts another number."""
    rng = np.random.default_rng(3)
    n = 100_003
    got = (rng.standard_normal(n) * 10.0 + 50.0).astype(np.float32)
    expected = got.astype(np.float64)
    tol = Tolerance(scale, RTOL, 1e-30)
    rms_before = np.full(n, np.sqrt(np.mean(expected * expected)))
    base = {"abs": np.abs(expected), "rms": rms_before, "rms_or_abs": np.maximum(np.abs(expected), rms_before)}[scale]
    over, under = rng.choice(n, size=(2, 500), replace=False)
    expected[over] += 1.5 * RTOL * base[over]
    expected[under] -= 0.5 * RTOL * base[under]
    rms = float(np.sqrt(np.mean(expected * expected))) if scale != "abs" else 0.0
    ctx = harness.ctx
    buf, exp_dev = ctx.alloc(got.nbytes), ctx.alloc(expected.nbytes)
    try:
        ctx.upload(buf, got)
        ctx.upload(exp_dev, expected)
        result = harness.compare(buf, "float32", n, exp_dev, None, tol, rms, 10.0)
    finally:
        ctx.free(buf)
        ctx.free(exp_dev)
    assert (result.wrong, result.unwritten) == (500, 0)
    assert 1.3 < result.worst_ratio < 1.7


def test_an_output_never_written_is_wrong_and_counted_unwritten(gpu):
    source = 'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {}'
    j = gpu.judge("vector_add", source)
    assert j.status == "wrong", j.message
    assert j.validation is not None and j.validation.cases
    assert all(c.unwritten == c.checked > 0 for c in j.validation.cases if not c.passed), j.validation.cases
    assert "never written" in j.message


def half_output_task(tmp_path: Path) -> Path:
    """vector_add with its output `c` in fp16 (a copy in tmp_path)."""
    folder = tmp_path / "half" / "vector_add"
    shutil.copytree(TaskLibrary().get("vector_add").folder, folder)
    toml = (folder / "task.toml").read_text()
    assert '[buffers.c]\ndtype = "float32"' in toml, "vector_add's task.toml changed; update this helper"
    toml = toml.replace('[buffers.c]\ndtype = "float32"', '[buffers.c]\ndtype = "float16"')
    (folder / "task.toml").write_text(toml.replace("rtol = 1e-6", "rtol = 1e-3"))
    return folder


def test_an_fp16_output_never_written_is_counted_unwritten(gpu, tmp_path):
    """A 2-byte output is poisoned with the fp16 pattern, not the 4-byte one: filled with the 4-byte
    word, every other element would hold half of it, a finite number, and read as wrong instead of
    never written. No built-in task has an fp16 output (imported PyTorch modules can): vector_add
    with its output in fp16 stands in."""
    folder = half_output_task(tmp_path)
    source = 'extern "C" __global__ void vector_add(const float* a, const float* b, unsigned short* c, int n) {}'
    j = gpu.judge(str(folder), source)
    assert j.status == "wrong", j.message
    failed = [c for c in j.validation.cases if not c.passed]
    assert failed and all(c.unwritten == c.checked > 0 for c in failed), failed
