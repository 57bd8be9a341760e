"""`tasks import` refuses a bad module file with one line and creates no task folder.

The tests of file errors and of a missing PyTorch run everywhere (CI has no PyTorch); the ones
that run the module need it (pytest.importorskip)."""

from __future__ import annotations

import shutil

import pytest
from cli_run import cli, one_line
from module_files import GOOD, nothing_created, refused, write

from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.torchtask import inspect_module


def test_without_pytorch_the_import_says_how_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(inspect_module.importlib.util, "find_spec", lambda name: None)
    path = write(tmp_path, "m.py", GOOD)
    code, _out, err = cli(capsys, "tasks", "import", str(path), "--dir", str(tmp_path / "tasks"))
    assert code == 2
    assert 'pip install ".[torch]" in the cuda-llm checkout' in one_line(err)
    assert nothing_created(tmp_path / "tasks")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("missing.py", "no such file"), ("notes.txt", "not a Python file")],
)
def test_a_file_that_is_not_a_module_file_is_one_line(tmp_path, capsys, name, expected):
    if name.endswith(".txt"):
        (tmp_path / name).write_text("hello", encoding="utf-8")
    code, _out, err = cli(capsys, "tasks", "import", str(tmp_path / name), "--dir", str(tmp_path / "tasks"))
    assert code == 2
    assert expected in one_line(err)
    assert nothing_created(tmp_path / "tasks")


def test_name_with_several_files_is_refused(tmp_path, capsys):
    a, b = write(tmp_path, "a.py", GOOD), write(tmp_path, "b.py", GOOD)
    code, _out, err = cli(capsys, "tasks", "import", str(a), str(b), "--name", "x", "--dir", str(tmp_path / "t"))
    assert code == 2
    assert "--name names one task" in one_line(err)


BAD_MODULES = {
    "no Model": (
        """
        import torch
        def get_inputs():
            return [torch.randn(8)]
        """,
        "defines no Model class",
    ),
    "get_inputs raising": (
        GOOD.replace("return [torch.randn(n)]", "raise ValueError('no data here')"),
        "get_inputs() raised ValueError: no data here",
    ),
    "a forward returning a non-tensor": (
        GOOD.replace("return x * 2.0", "return float(x.sum())"),
        "not a tensor or a tuple of tensors",
    ),
    "a tuple holding a non-tensor": (
        GOOD.replace("return x * 2.0", "return x, 3"),
        "holding a int (item 1)",
    ),
    "get_init_inputs raising": (
        GOOD.replace("def get_init_inputs():\n    return []", "def get_init_inputs():\n    return [1 / 0]"),
        "get_init_inputs() raised ZeroDivisionError",
    ),
    "a syntax error": (GOOD.replace("class Model", "class Model Model"), "fails to import: SyntaxError"),
    "a non-tensor input": (GOOD.replace("[torch.randn(n)]", "[torch.randn(n), 'abc']"), "get_inputs() item 1 is a str"),
    "an unsupported dtype": (GOOD.replace("torch.randn(n)", "torch.ones(n, dtype=torch.complex64)"), "is complex64"),
    "an exit while loading": ("import sys\nsys.exit(3)\n", "fails to import: SystemExit"),
}


@pytest.mark.parametrize("case", sorted(BAD_MODULES))
def test_a_bad_module_is_one_line_and_creates_nothing(tmp_path, capsys, case):
    pytest.importorskip("torch")
    text, expected = BAD_MODULES[case]
    assert expected in refused(tmp_path, capsys, text, name="bad.py")


def test_a_problem_too_large_for_the_gpu_names_the_size_to_lower(tmp_path, capsys):
    pytest.importorskip("torch")
    # 2^31 floats in and out: 16 GiB of tensors, far more than the 4 GiB card it is checked against.
    text = GOOD.replace("n = 4096", "rows = 65536\ncols = 32768").replace("torch.randn(n)", "torch.randn(rows, cols)")
    path = write(tmp_path, "big.py", text)
    root = tmp_path / "tasks"
    code, _out, err = cli(capsys, "tasks", "import", str(path), "--dir", str(root), "--gpu-memory", "4")
    assert code == 2
    line = one_line(err)
    assert "does not fit" in line and "lower rows (now 65536) in big.py" in line
    assert nothing_created(root)
    # The same file fits a card large enough: the check is the only thing that refused it.
    code, _out, _err = cli(capsys, "tasks", "import", str(path), "--dir", str(root), "--gpu-memory", "200")
    assert code == 0, _err
    assert (root / "big" / "task.toml").is_file()


def test_a_module_that_hangs_is_stopped(tmp_path):
    pytest.importorskip("torch")
    path = write(tmp_path, "slow.py", "import time\ntime.sleep(60)\n")
    with pytest.raises(inspect_module.ImportRefused, match="did not finish loading within 3 s"):
        inspect_module.inspect_module(path, timeout_s=3)


def test_an_existing_task_is_not_overwritten(tmp_path, capsys):
    pytest.importorskip("torch")
    path = write(tmp_path, "twice.py", GOOD)
    root = tmp_path / "tasks"
    # The task there already: a built-in one under the module's name (importing the module a first
    # time would make one as well, at the cost of a second PyTorch child).
    shutil.copytree(TaskLibrary().get("vector_add").folder, root / "twice")
    before = (root / "twice" / "task.toml").read_text(encoding="utf-8")
    code, _out, err = cli(capsys, "tasks", "import", str(path), "--dir", str(root))
    assert code == 2
    assert "already exists" in one_line(err)
    assert (root / "twice" / "task.toml").read_text(encoding="utf-8") == before
    assert sorted(p.name for p in root.iterdir()) == ["twice"]  # no staging folder left behind


def test_tasks_new_from_a_module_file_imports_it(tmp_path, capsys):
    pytest.importorskip("torch")
    path = write(tmp_path, "doubler.py", GOOD)
    root = tmp_path / "tasks"
    code, out, err = cli(capsys, "tasks", "new", "twice_x", "--from", str(path), "--dir", str(root))
    assert code == 0, err
    module = (root / "twice_x" / "module.py").read_text(encoding="utf-8")
    assert "created" in out and module == path.read_text(encoding="utf-8")
