"""What `tasks import` must refuse or handle rather than accept silently: sizes written as a tuple,
a size of 0, a forward that is random, a problem no GPU could judge, a bad --gpu-memory or --name
told before the module runs, and a load failure told without the staging folder's path."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_run import cli, one_line
from module_files import GOOD, nothing_created, refused, write

from cuda_llm.engine.core.errors import TaskFileError
from cuda_llm.engine.task.loader import load_task
from cuda_llm.engine.task.reference import load_reference


def with_dropout(p: float) -> str:
    """The good module with a dropout layer of probability `p` before its product."""
    return GOOD.replace(
        "class Model(nn.Module):\n    def forward(self, x):\n        return x * 2.0",
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.drop = nn.Dropout({p})\n\n    def forward(self, x):\n        return self.drop(x) * 2.0",
    )


def test_sizes_written_as_a_tuple_are_sizes_validated_at_several_values(tmp_path, capsys):
    pytest.importorskip("torch")
    text = (
        GOOD.replace("n = 4096", "shape = (64, 1000)\nwindow = (3,)")
        .replace("torch.randn(n)", "torch.randn(*shape)")
        .replace("return x * 2.0", "return torch.softmax(x, dim=1) * window[0]")
    )
    path = write(tmp_path, "rows.py", text)
    root = tmp_path / "tasks"
    code, out, err = cli(capsys, "tasks", "import", str(path), "--dir", str(root))
    assert code == 0, err
    assert "sizes shape_0=64 shape_1=1000" in out
    task = load_task(root / "rows")
    assert [b.shape for b in task.buffers] == [("shape_0", "shape_1"), ("shape_0", "shape_1")]
    assert len({c.as_dict()["shape_1"] for c in task.validation}) > 1  # not only the file's size
    assert "shape[1] in rows.py" in (root / "rows" / "task.toml").read_text(encoding="utf-8")
    # The reference runs the module at each case's values: the tuple is rebuilt from them.
    ref = load_reference(task)
    for case in task.validation:
        inputs = ref.inputs(case, 0)
        got = ref.outputs(inputs, case)["out"]
        assert got.shape == tuple(case.as_dict().values())
        assert got.sum(axis=1) == pytest.approx(3.0)


def test_a_size_of_zero_is_refused(tmp_path, capsys):
    pytest.importorskip("torch")
    line = refused(tmp_path, capsys, GOOD.replace("n = 4096", "n = 0"))
    assert "input 0 of m.py has no elements at the file's sizes (shape [0]) (n = 0 in m.py)" in line
    assert "give the sizes positive values" in line


def test_an_active_dropout_is_refused_naming_the_layer(tmp_path, capsys):
    pytest.importorskip("torch")
    text = with_dropout(0.5)
    line = refused(tmp_path, capsys, text)
    # The layer is named before forward runs (engine/torchtask/training.py); a forward random by other
    # means (torch.randn_like) is caught by running it twice (test_random_numbers_in_forward_are_refused).
    assert "forward is random: layer drop (Dropout, p=0.5)" in line and "set its p to 0" in line


def test_a_dropout_of_p_zero_is_not_random(tmp_path, capsys):
    pytest.importorskip("torch")
    text = with_dropout(0.0)
    path = write(tmp_path, "m.py", text)
    code, _out, err = cli(capsys, "tasks", "import", str(path), "--dir", str(tmp_path / "tasks"))
    assert code == 0, err


def test_random_numbers_in_forward_are_refused(tmp_path, capsys):
    pytest.importorskip("torch")
    line = refused(tmp_path, capsys, GOOD.replace("return x * 2.0", "return x + torch.randn_like(x)"))
    assert "forward gives different results on the same inputs" in line
    assert "forward draws random numbers" in line and "get_inputs()" in line


def test_a_problem_no_gpu_could_judge_is_refused_without_a_gpu(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    # 2^40 floats in and out: 8 TiB of tensors, on the meta device it costs nothing to probe.
    text = GOOD.replace("n = 4096", "rows = 1048576\ncols = 1048576").replace(
        "torch.randn(n)", "torch.randn(rows, cols)"
    )
    line = refused(tmp_path, capsys, text)
    assert "m.py does not fit" in line and "lower rows (now 1048576) in m.py" in line
    if not torch.cuda.is_available():
        assert "more than any GPU has (B300: 268.2 GiB)" in line


@pytest.mark.parametrize("value", ["-1", "0", "nan"])
def test_gpu_memory_must_be_a_positive_number(tmp_path, capsys, value):
    path = write(tmp_path, "m.py", GOOD)
    code, _out, err = cli(capsys, "tasks", "import", str(path), "--gpu-memory", value, "--dir", str(tmp_path / "t"))
    assert code == 2
    assert "--gpu-memory" in one_line(err)
    assert nothing_created(tmp_path / "t")


@pytest.mark.parametrize(("name", "expected"), [("bad name", "is not an identifier"), ("taken", "already exists")])
def test_a_bad_name_is_told_before_the_module_runs(tmp_path, capsys, name, expected):
    # The module leaves a mark when it runs: a name refused after running it would leave the mark.
    mark = tmp_path / "ran"
    path = write(tmp_path, "m.py", GOOD, head=f"open({str(mark)!r}, 'w').close()\n")
    root = tmp_path / "tasks"
    (root / "taken").mkdir(parents=True)
    code, _out, err = cli(capsys, "tasks", "import", str(path), "--name", name, "--dir", str(root))
    assert code == 2
    assert expected in one_line(err)
    assert not mark.exists(), "the module ran before the name was checked"


def test_a_task_that_fails_to_load_is_told_without_the_staging_path(tmp_path, capsys, monkeypatch):
    pytest.importorskip("torch")
    from cuda_llm.engine.torchtask import writer

    def fails(folder):
        raise TaskFileError(Path(folder) / "task.toml", "buffers.out.shape", "an example fault")

    monkeypatch.setattr(writer, "load_task", fails)
    line = refused(tmp_path, capsys, GOOD)
    assert line.endswith(
        "m.py cannot become a task: forward's result cannot be expressed (an example fault); "
        "change that in the file, or report it as an importer limitation"
    )
    assert "task.toml" not in line and str(tmp_path) not in line
