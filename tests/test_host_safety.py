"""Files next to the tool (issue 43, items 5, 9 and 10): every file a task names stays in its folder,
an export compiles to the same program, and a configuration that cannot be parsed is one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_run import cli, one_line

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def task_copy(tmp_path) -> Path:
    folder = tmp_path / "tasks" / "vector_add"
    shutil.copytree(ROOT / "tasks" / "vector_add", folder)
    return folder


def _edit(folder: Path, old: str, new: str) -> None:
    toml = folder / "task.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new))


# ---- item 5: files a task names ----------------------------------------------------------------------


def test_a_baseline_named_outside_the_folder_is_refused(capsys, task_copy, tmp_path):
    secret = tmp_path / "credentials"
    secret.write_text("API_KEY=do-not-send\n")
    (task_copy / "task.toml").write_text((task_copy / "task.toml").read_text() + f'\n[baseline]\nsource = "{secret}"\n')
    code, out, err = cli(capsys, "eval", str(task_copy), "baseline", "--compile-only")
    assert code == 2 and "do-not-send" not in out + err
    assert f"baseline.source: {str(secret)!r} is outside the task folder" in one_line(err)


@pytest.mark.parametrize("how", ["dotdot", "link"])
def test_a_pytorch_module_outside_the_folder_is_refused(capsys, task_copy, tmp_path, how):
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN PRIVATE KEY-----\n")
    if how == "link":  # a name inside the folder that leads out of it
        (task_copy / "model.py").symlink_to(secret)
        name = "model.py"
    else:
        name = "../../id_rsa"
    (task_copy / "task.toml").write_text(
        (task_copy / "task.toml").read_text()
        + f'\n[pytorch]\nmodule = "{name}"\ninputs = ["a", "b"]\noutputs = ["c"]\n'
    )
    code, out, err = cli(capsys, "eval", str(task_copy), "baseline", "--compile-only")
    assert code == 2 and "PRIVATE KEY" not in out + err
    assert f"pytorch.module: {name!r} is outside the task folder" in one_line(err)


# ---- item 10: a configuration that cannot be parsed ------------------------------------------------------

DEEP = "[" * 5000 + "]" * 5000


def test_a_task_toml_nested_thousands_deep_is_one_line(capsys, task_copy):
    (task_copy / "task.toml").write_text(f"deep = {DEEP}\n" + (task_copy / "task.toml").read_text())
    code, _, err = cli(capsys, "eval", str(task_copy), "baseline", "--compile-only")
    assert code == 2 and "task.toml: not valid TOML: nested too deeply" in one_line(err)


def test_a_tui_toml_nested_thousands_deep_falls_back_to_the_defaults(tmp_path):
    from cuda_llm.app.config import AppConfig, load_config

    path = tmp_path / "tui.toml"
    path.write_text(f"theme = {DEEP}\n")
    loaded = load_config(path)
    assert loaded.config == AppConfig() and "nested too deeply" in (loaded.warning or "")


def test_a_model_name_that_is_not_unicode_does_not_break_saving_the_state(tmp_path):
    from cuda_llm.app.config import AppConfig, load_config, save_state

    path = tmp_path / "tui.toml"
    assert save_state(AppConfig(model="ollama:bad\ud800name", candidates=7), path) is None
    loaded = load_config(path)
    assert loaded.warning is None and loaded.config.candidates == 7, "the other choices are remembered"
    assert loaded.config.model != "ollama:bad\ud800name"
