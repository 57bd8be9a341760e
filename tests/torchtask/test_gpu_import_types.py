"""On the GPU: the problems with 0-d outputs (the losses), a Python number among the inputs (the
matrix-scalar) and a bool input (the masked cumsum) judge PyTorch eager and a hand-written reply
as correct and a wrong reply as wrong; eager passes on BatchNorm's 0-d buffer, a scalar
nn.Parameter, a bool output and a number given per size; a kernel that writes nothing to a bool
output is caught by the bool poison. Latencies are printed, never asserted."""

from __future__ import annotations

import pytest

from cuda_llm.engine.judge.judgement import Candidate

from .conftest import KB_REPLIES

pytestmark = pytest.mark.gpu

LOSSES = ["cross_entropy_loss", "hinge_loss", "huber_loss", "kl_div_loss", "mse_loss", "triplet_margin_loss"]
JUDGED = [*LOSSES, "matrix_scalar", "masked_cumsum"]


def _judge(gpu, judge, reply_name: str, profile: bool):
    text = (KB_REPLIES / reply_name).read_text(encoding="utf-8")
    return gpu.run(judge.judge(judge.parse(reply_name, text, origin="user"), profile=profile))


@pytest.mark.parametrize("name", JUDGED)
def test_eager_and_the_correct_reply_pass_and_the_wrong_one_fails(gpu, kb_imported, name):
    task = gpu.task(str(kb_imported[name]))
    judge = gpu.env.judge(task, gpu.settings)
    base = gpu.run(judge.baseline_judgement())
    assert base.status == "correct", base.message
    good = _judge(gpu, judge, f"{name}.md", profile=True)
    assert good.status == "correct", good.message
    bad = _judge(gpu, judge, f"{name}.wrong.md", profile=False)
    assert bad.status == "wrong", (bad.status, bad.message)
    print(f"{name}: eager {base.timing.median_us:.1f} us, reply {good.timing.median_us:.1f} us on {good.device}")
    print(f"{name}.wrong: {bad.message}")


@pytest.mark.parametrize("name", ["batch_norm", "scalar_parameter", "bool_output", "scale_per_size"])
def test_eager_passes_its_own_validation(gpu, kb_imported, name):
    task = gpu.task(str(kb_imported[name]))
    base = gpu.run(gpu.env.judge(task, gpu.settings).baseline_judgement())
    assert base.status == "correct", base.message


def test_a_bool_output_left_unwritten_is_caught(gpu, kb_imported):
    # The calling-convention kernel writes nothing: every element still holds the bool poison.
    task = gpu.task(str(kb_imported["bool_output"]))
    judge = gpu.env.judge(task, gpu.settings)
    j = gpu.run(judge.judge(Candidate("stub", task.baseline_source, task.baseline_plan, origin="user")))
    assert j.status == "wrong" and j.validation is not None
    assert j.validation.cases[0].unwritten == j.validation.cases[0].checked, j.message
