"""The types the field's problems use beyond plain float tensors import as tasks: 0-d tensors
(a loss's output, BatchNorm's num_batches_tracked, a scalar nn.Parameter), Python numbers from
get_inputs() (a constant scalar; an integer given per size case), and bool tensors (inputs and
outputs: one byte each, poisoned with a byte no bool holds, compared byte for byte).

The module files under kb_like/ are shaped like KernelBench's (level 1's 5, 33, 93, 94-100; level
2's 68) at small sizes; kb_like/replies/ holds a correct and a wrong hand-written reply for the
losses, the matrix-scalar and the masked cumsum, judged on a GPU by test_gpu_import_types.py."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from cuda_llm.app.cli.main import main
from cuda_llm.engine.fsr.prompt import PromptBuilder
from cuda_llm.engine.gpu.compare import compare_output
from cuda_llm.engine.gpu.validate import poison
from cuda_llm.engine.task.dtypes import BOOL_POISON
from cuda_llm.engine.task.loader import load_task
from cuda_llm.engine.task.model import Tolerance
from cuda_llm.engine.task.reference import load_reference

from .conftest import KB_NAMES, KB_REPLIES

LOSSES = ["cross_entropy_loss", "hinge_loss", "huber_loss", "kl_div_loss", "mse_loss", "triplet_margin_loss"]


def shapes(folder: Path) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    return {b.name: (b.role, b.dtype, b.shape) for b in load_task(folder).buffers}


@pytest.mark.parametrize("name", LOSSES)
def test_a_loss_is_a_0d_output(kb_imported, name):
    assert shapes(kb_imported[name])["out"] == ("output", "float32", ())


def test_batchnorm_s_0d_buffer_and_a_scalar_parameter_are_0d_inputs(kb_imported):
    assert shapes(kb_imported["batch_norm"])["bn_num_batches_tracked"] == ("input", "int64", ())
    assert shapes(kb_imported["scalar_parameter"])["constant"] == ("input", "float32", ())


def test_a_number_from_get_inputs_is_a_constant_scalar_of_the_task(kb_imported):
    task = load_task(kb_imported["matrix_scalar"])
    s = task.scalar("s")
    assert s is not None and s.type == "float64" and s.value == 3.14
    assert "s is the number get_inputs() passes as item 1: the scalar 3.14." in task.description
    assert "double s" in task.baseline_source
    text = (kb_imported["matrix_scalar"] / "task.toml").read_text(encoding="utf-8")
    assert 'inputs = ["A", "s"]' in text  # forward's arguments in order, the number among them


def test_a_number_that_follows_the_sizes_is_given_per_case(kb_imported):
    task = load_task(kb_imported["scale_per_size"])
    assert [c.as_dict() for c in task.validation] == [
        {"n": 5, "k": 2},
        {"n": 13, "k": 6},
        {"n": 1365, "k": 682},
        {"n": 4096, "k": 2048},
        {"n": 4096, "k": 2048},
    ]


def test_bool_tensors_are_bool_buffers_and_the_prompt_states_their_layout(kb_imported):
    assert shapes(kb_imported["masked_cumsum"])["mask"] == ("input", "bool", ("batch_size", "input_shape_0"))
    assert shapes(kb_imported["bool_output"])["out"] == ("output", "bool", ("n",))
    task = load_task(kb_imported["masked_cumsum"])
    text = PromptBuilder(task, "sm_90", "13.0")._task
    assert "bool tensors (mask): one byte per element holding 0 (false) or 1 (true), C++ bool" in text
    assert "const bool* __restrict__ mask" in task.baseline_source
    loss = PromptBuilder(load_task(kb_imported["mse_loss"]), "sm_90", "13.0")._task
    assert "0-d tensors (one element; a pointer to it in the kernel, as every buffer): out." in loss


@pytest.mark.parametrize("name", KB_NAMES)
def test_the_reference_computes_every_case_at_the_declared_shapes(kb_imported, name):
    task = load_task(kb_imported[name])
    ref = load_reference(task)
    for case in task.validation:
        inputs = ref.inputs(case, 0)  # checks every input's dtype and shape against the task
        outputs = ref.outputs(inputs, case)  # and every output's element count
        for b in task.outputs:
            assert outputs[b.name].shape == b.shape_for(task.env(case))
            assert np.isfinite(outputs[b.name].astype(np.float64)).all()


def test_the_reference_uses_the_number_and_the_mask(kb_imported):
    task = load_task(kb_imported["matrix_scalar"])
    ref = load_reference(task)
    case = task.validation[0]
    inputs = ref.inputs(case, 0)
    assert np.allclose(ref.outputs(inputs, case)["out"], inputs["A"].astype(np.float64) * 3.14)
    task = load_task(kb_imported["masked_cumsum"])
    ref = load_reference(task)
    case = task.validation[1]
    inputs = ref.inputs(case, 0)
    assert inputs["mask"].dtype == np.bool_ and 0 < inputs["mask"].mean() < 1
    expected = np.cumsum(inputs["x"].astype(np.float64) * inputs["mask"], axis=1)
    assert np.allclose(ref.outputs(inputs, case)["out"], expected)


REPLIES = sorted(p.name for p in KB_REPLIES.glob("*.md"))


@pytest.mark.parametrize("reply", REPLIES)
def test_every_reply_compiles_and_binds(kb_imported, capsys, reply):
    code = main(["eval", str(kb_imported[reply.split(".")[0]]), str(KB_REPLIES / reply), "--compile-only"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict:  compiled" in out


@pytest.mark.parametrize("name", KB_NAMES)
def test_the_calling_convention_kernel_compiles(kb_imported, capsys, name):
    code = main(["eval", str(kb_imported[name]), "baseline", "--compile-only"])
    assert code == 0, capsys.readouterr().out


def test_a_bool_output_is_compared_byte_for_byte():
    exact = Tolerance("exact", 0.0, 0.0)
    expected = np.array([True, False, True, True])
    good = np.array([1, 0, 1, 1], dtype=np.uint8).view(np.bool_)
    assert compare_output("out", expected, good, exact).passed
    # NumPy reads any non-zero byte as True: the poison and a stray byte must still be caught.
    unwritten = np.array([1, 0, BOOL_POISON, 1], dtype=np.uint8).view(np.bool_)
    c = compare_output("out", expected, unwritten, exact)
    assert (c.wrong, c.unwritten) == (1, 1)
    stray = np.array([1, 0, 2, 1], dtype=np.uint8).view(np.bool_)
    c = compare_output("out", expected, stray, exact)
    assert (c.wrong, c.unwritten) == (1, 0)


def test_a_bool_output_is_poisoned_with_a_byte_no_bool_holds():
    ctx = mock.MagicMock()
    buf = mock.MagicMock(nbytes=7)
    poison(ctx, buf, "bool")
    ctx.fill32.assert_called_once_with(buf, BOOL_POISON * 0x01010101)
    assert BOOL_POISON not in (0, 1)
