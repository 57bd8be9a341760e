"""bf16 modules imported on the CPU (examples/pytorch/*_bf16.py: an RMSNorm that computes in fp32
inside, a SwiGLU MLP in native bf16, attention with its scores and softmax in fp32): their buffers
are bf16, the reference is the module's math in float64 whatever its own casts, PyTorch's CPU
eager at the module's dtype passes the task's tolerance, and a bf16 accumulation fails it. The GPU
judges eager, the hand-written replies and the bf16-accumulating ones (test_gpu_import.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cuda_llm.engine.gpu.compare import compare_output
from cuda_llm.engine.task import bfloat16
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.loader import load_task
from cuda_llm.engine.task.reference import load_reference

from .conftest import EXAMPLES

BF16_EXAMPLES = sorted(p.stem for p in EXAMPLES.glob("*_bf16.py"))


def test_the_three_bf16_examples_are_there():
    assert BF16_EXAMPLES == ["attention_bf16", "rms_norm_bf16", "swiglu_mlp_bf16"]


@pytest.mark.parametrize("name", BF16_EXAMPLES)
def test_a_bf16_module_imports_with_bf16_buffers(imported, name):
    task = load_task(imported[name])
    assert {b.dtype for b in task.buffers} == {"bfloat16"}
    assert "#include <cuda_bf16.h>" in task.baseline_source and "const __nv_bfloat16*" in task.baseline_source
    rule = DTYPES["bfloat16"].output_rule
    assert (task.tolerance.scale, task.tolerance.rtol) == (rule.scale, rule.rtol)
    assert "__nv_bfloat16" in task.dtype_contract and "fp32" in task.dtype_contract


def test_a_bf16_matrix_product_is_measured_against_the_tensor_cores(imported):
    assert load_task(imported["swiglu_mlp_bf16"]).roofline.peak == "fp16_tensor"


def _case(task):
    """The largest validation case under the timing size: long enough reductions to tell bf16 apart."""
    return task.validation[-2]


def _eager(folder, task, inputs, case):
    """The module at its own dtype (bf16) on PyTorch's CPU: the outputs as their bf16 bits."""
    import torch

    from cuda_llm.engine.torchtask.runtime import ImportedModule, to_numpy, to_torch

    mod = ImportedModule(folder)
    sizes = task.params(case)
    dtypes = mod.binding.dtypes
    args = [to_torch(torch, inputs[n], dtypes[n]) for n in mod.binding.inputs]
    params = {p: to_torch(torch, inputs[n], dtypes[n]) for n, p in mod.binding.parameters.items()}
    outs = mod.forward(mod.build(sizes), sizes, args, params)
    return {name: to_numpy(torch, o) for name, o in zip(mod.binding.outputs, outs, strict=True)}


@pytest.mark.parametrize("name", BF16_EXAMPLES)
def test_eager_at_the_modules_own_dtype_passes(imported, name):
    task = load_task(imported[name])
    ref = load_reference(task)
    case = _case(task)
    inputs = ref.inputs(case, 3)
    assert all(a.dtype == np.uint16 for a in inputs.values()), "bf16 travels as its bits"
    expected = ref.outputs(inputs, case)
    got = _eager(imported[name], task, inputs, case)
    for b in task.outputs:
        assert got[b.name].dtype == np.uint16
        result = compare_output(b.name, expected[b.name], got[b.name], task.tolerance, None, 5, dtype=b.dtype)
        assert result.passed, (name, result.worst_ratio)
        assert result.worst_ratio > 0.02, "a bf16 output is never this close: the comparison reads its values"


def test_the_reference_is_float64_through_the_modules_own_casts(imported):
    """attention_bf16 computes in fp32 and rounds its output to bf16; its reference does neither."""
    task = load_task(imported["attention_bf16"])
    ref = load_reference(task)
    case = _case(task)
    inputs = ref.inputs(case, 5)
    got = ref.outputs(inputs, case)["out"]
    q, k, v = (bfloat16.to_float32(inputs[n]).astype(np.float64) for n in ("q", "k", "v"))
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    want = (p / p.sum(axis=-1, keepdims=True)) @ v
    assert np.allclose(got, want, rtol=1e-12, atol=1e-14)
    assert not np.array_equal(bfloat16.to_float32(bfloat16.to_bits(got)), got), "not rounded to bf16"


def test_a_bf16_sum_of_squares_fails_the_rms_norm(imported):
    """rms_norm_bf16 by a kernel whose sum of squares is a bf16 register (the bf16acc reply's math)."""
    task = load_task(imported["rms_norm_bf16"])
    ref = load_reference(task)
    case = _case(task)
    inputs = ref.inputs(case, 3)
    expected = ref.outputs(inputs, case)["out"]
    x = bfloat16.to_float32(inputs["x"])
    w = bfloat16.to_float32(inputs["weight"])
    ss = np.zeros(x.shape[0], dtype=np.float32)
    for c in range(x.shape[1]):
        ss = bfloat16.round_to_bf16(ss + x[:, c] * x[:, c])
    got = bfloat16.to_bits(x / np.sqrt(ss / x.shape[1] + np.float32(1e-6))[:, None] * w)
    result = compare_output("out", expected, got, task.tolerance, None, 5, dtype="bfloat16")
    assert not result.passed and result.worst_ratio > 2.0, result.worst_ratio


FP16_MODULE = '''"""A gated scale in half precision, its constants Python floats, computed in fp32 inside."""

import torch
import torch.nn as nn

rows = 300
cols = 1000


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        return (h * torch.sigmoid(1.702 * h) * self.alpha + 0.5).to(torch.float16)


def get_inputs():
    return [torch.randn(rows, cols, dtype=torch.float16)]


def get_init_inputs():
    return [0.75]
'''


def test_an_fp16_module_with_float_constants_and_casts_inside(tmp_path):
    """The fp16 side of the same rule: the reference is the formula in float64 (not the module's fp32
    and its final fp16 rounding), and eager at fp16 passes the fp16 tolerance."""
    pytest.importorskip("torch")
    from cuda_llm.engine.torchtask.importer import import_module

    source = tmp_path / "gated_fp16.py"
    source.write_text(FP16_MODULE, encoding="utf-8")
    folder = import_module(source, tmp_path / "tasks").folder
    task = load_task(folder)
    assert {b.dtype for b in task.buffers} == {"float16"}
    ref = load_reference(task)
    case = task.validation[-1]
    inputs = ref.inputs(case, 2)
    got = ref.outputs(inputs, case)["out"]
    h = inputs["x"].astype(np.float64)
    assert np.allclose(got, h / (1.0 + np.exp(-1.702 * h)) * 0.75 + 0.5, rtol=1e-12, atol=1e-14)
    eager = _eager(folder, task, inputs, case)["out"]
    assert eager.dtype == np.float16
    result = compare_output("out", got, eager, task.tolerance, None, 5, dtype="float16")
    assert result.passed and result.worst_ratio > 0.0, result.worst_ratio
