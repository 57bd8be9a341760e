"""The task `tasks import` writes: its files load as a task, its reference separates correct fp32
from reduced precision, the prompt shows the module, and every example reply compiles and binds
against it (compile-only: NVRTC needs no GPU).

The writer's own test runs everywhere (hand-made facts, no PyTorch); the rest imports the example
modules and needs PyTorch."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from cuda_llm.app.cli.main import main
from cuda_llm.engine.fsr.prompt import PromptBuilder
from cuda_llm.engine.gpu.compare import compare_output
from cuda_llm.engine.task import expr
from cuda_llm.engine.task.loader import load_task
from cuda_llm.engine.torchtask.inspect_module import ModuleFacts, TensorFacts
from cuda_llm.engine.torchtask.writer import write_task

from .conftest import EXAMPLE_NAMES, EXAMPLES, REPLIES


def facts_of(tmp_path: Path) -> ModuleFacts:
    source = tmp_path / "two_outputs.py"
    source.write_text('"""A module with a weight and two results."""\n', encoding="utf-8")
    return ModuleFacts(
        source=source,
        sizes={"rows": 1024, "cols": 300},
        fixed={"kernel_size": 3},
        validation=({"rows": 5, "cols": 5}, {"rows": 13, "cols": 101}),
        inputs=(TensorFacts("x", "float32", ("rows", "cols")),),
        params=(TensorFacts("proj_weight", "float32", ("cols",), "proj.weight"),),
        outputs=(TensorFacts("out0", "float32", ("rows",)), TensorFacts("out1", "float16", ("rows", "cols"))),
        flops="2 * rows * cols",
        returns_tuple=True,
    )


def test_the_written_files_load_as_a_task(tmp_path):
    folder = write_task(facts_of(tmp_path), tmp_path / "tasks")
    task = load_task(folder)
    assert task.name == "two_outputs" and task.pytorch_module == "module.py"
    assert [(b.name, b.role, b.shape) for b in task.buffers] == [
        ("x", "input", ("rows", "cols")),
        ("proj_weight", "input", ("cols",)),
        ("out0", "output", ("rows",)),
        ("out1", "output", ("rows", "cols")),
    ]
    assert [c.as_dict() for c in task.validation] == [
        {"rows": 5, "cols": 5},
        {"rows": 13, "cols": 101},
        {"rows": 1024, "cols": 300},  # the file's own shapes, with several seeds
        {"rows": 1024, "cols": 300},  # and the timing case
    ]
    assert task.validation[-2].seeds > 1
    # The loosest output dtype sets the tolerance: fp16's.
    assert (task.tolerance.scale, task.tolerance.rtol) == ("rms_or_abs", 1e-2)
    data = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    assert data["pytorch"]["parameters"] == {"proj_weight": "proj.weight"}
    assert data["pytorch"]["fixed"] == {"kernel_size": 3}
    assert data["roofline"]["flops"] == "2 * rows * cols"
    assert "#include <cuda_fp16.h>" in task.baseline_source
    assert [a.text for a in task.baseline_plan.launches[0].args] == ["x", "proj_weight", "out0", "out1", "rows", "cols"]


def test_a_pytorch_table_naming_a_wrong_buffer_is_one_line(tmp_path):
    from cuda_llm.engine.core.errors import TaskFileError

    folder = write_task(facts_of(tmp_path), tmp_path / "tasks")
    toml = folder / "task.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('outputs = ["out0", "out1"]', 'outputs = ["x"]'))
    with pytest.raises(TaskFileError, match=r"pytorch.outputs.*'x' is not an output buffer"):
        load_task(folder)


def test_the_stub_baseline_compiles_and_binds(tmp_path, capsys):
    folder = write_task(facts_of(tmp_path), tmp_path / "tasks")
    code = main(["eval", str(folder), "baseline", "--compile-only"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict:  compiled" in out


# ---- with PyTorch: the example modules --------------------------------------------------------


def test_every_example_imports(imported):
    assert sorted(imported) == EXAMPLE_NAMES
    conv = load_task(imported["conv2d_bias"])
    assert [b.name for b in conv.inputs] == ["x", "conv_weight", "conv_bias"]
    assert conv.buffer("conv_weight").shape == ("out_channels", "in_channels", "3", "3")
    sizes = {"batch_size": 3, "in_channels": 5, "out_channels": 7, "height": 11, "width": 13}
    assert expr.evaluate(conv.roofline.flops, sizes) == 2 * 9 * 3 * 5 * 7 * 11 * 13  # a 3x3 window's MACs
    two = load_task(imported["mean_and_max"])
    assert [b.name for b in two.outputs] == ["out0", "out1"]


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_the_reference_passes_fp32_and_refuses_fp16(imported, name):
    from cuda_llm.engine.task.reference import load_reference

    task = load_task(imported[name])
    ref = load_reference(task)
    case = task.validation[1]
    inputs = ref.inputs(case, 7)
    exact = ref.outputs(inputs, case)
    fp32 = ref.outputs(inputs, case, np.float32)
    fp16 = ref.outputs(inputs, case, np.float16)
    for b in task.outputs:
        assert compare_output(b.name, exact[b.name], fp32[b.name], task.tolerance, None, 5).passed
    if any(b.dtype == "bfloat16" for b in task.outputs):
        return  # fp16 math is finer than a bf16 output: bf16 accumulation is its shortcut (test_bf16_modules.py)
    assert not all(
        compare_output(b.name, exact[b.name], fp16[b.name], task.tolerance, None, 5).passed for b in task.outputs
    )


def test_the_seeds_give_different_inputs_and_parameters(imported):
    from cuda_llm.engine.task.reference import load_reference

    task = load_task(imported["conv2d_bias"])
    ref = load_reference(task)
    a, b = ref.inputs(task.validation[0], 1), ref.inputs(task.validation[0], 2)
    assert not np.array_equal(a["x"], b["x"]) and not np.array_equal(a["conv_weight"], b["conv_weight"])


def test_the_prompt_shows_the_module_and_eager(imported):
    task = load_task(imported["softmax_rows"])
    text = PromptBuilder(task, "sm_90", "13.0")._task
    assert (EXAMPLES / "softmax_rows.py").read_text(encoding="utf-8").strip() in text
    assert "The baseline is PyTorch eager" in text
    assert "def generate" not in text  # reference.py's wrapper is not what the model must match


REPLY_FILES = sorted(p.name for p in REPLIES.glob("*.md"))


@pytest.mark.parametrize("reply", REPLY_FILES)
def test_every_reply_compiles_and_binds(imported, capsys, reply):
    task = reply.split(".")[0]
    code = main(["eval", str(imported[task]), str(REPLIES / reply), "--compile-only"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict:  compiled" in out
    if ".fp16." in reply:
        assert "reduced precision" in out  # the compile warning; validation on a GPU refuses it


def test_the_start_screen_lists_an_imported_task_like_the_others(tmp_path):
    from cuda_llm.app.catalog import load_tasks
    from cuda_llm.engine.task import TaskLibrary

    root = tmp_path / "tasks"
    write_task(facts_of(tmp_path), root)
    rows = {r.name: r for r in load_tasks(TaskLibrary(search_path=(root,)))}
    assert rows["two_outputs"].summary == "A module with a weight and two results."
    assert rows["two_outputs"].category == "compute"


def test_files_that_do_not_load_leave_nothing_behind(tmp_path):
    import dataclasses

    from cuda_llm.engine.core.errors import UserError

    facts = facts_of(tmp_path)
    broken = dataclasses.replace(facts, inputs=(TensorFacts("x", "float32", ("rows", "depth")),))
    root = tmp_path / "tasks"
    refusal = r"^two_outputs.py cannot become a task: forward's argument x .*unknown name\(s\) \['depth'\]"
    with pytest.raises(UserError, match=refusal):
        write_task(broken, root)
    assert list(root.iterdir()) == []  # neither the task nor its staging folder
