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


# ---- item 9: an export compiles to the program that was judged -----------------------------------------

# A string literal whose ESC is followed by a hex digit ('A'), a C1 control (U+009B) in it, a form feed
# between two tokens, and an ESC in a comment: each is the same program only if escaped as C source.
ESCAPING_KERNEL = (
    '__device__ const char tag[] = "\x1bA\u009b";  // tagged \x1b[31m\n'
    'extern "C" __global__ void tagged(const float* a, const float* b, float* c, int n)\f{\n'
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) c[i] = a[i] + b[i] + tag[i % 3];\n"
    "}\n"
)
TAGGED_PLAN = {
    "launches": [{"kernel": "tagged", "grid": ["cdiv(n, 256)"], "block": [256], "args": ["a", "b", "c", "n"]}]
}


def _ptx(source: str) -> list[str]:
    from cuda_llm.engine.compile.nvrtc import compile_in_process

    result = compile_in_process(source, "sm_90")
    assert result.ok, result.error
    return [line for line in (result.ptx or "").splitlines() if not line.startswith("//")]


def test_an_exported_kernel_compiles_to_the_program_that_was_judged(tmp_path, capsys, llm_server):
    from scripted import chunked, reply

    db, out = tmp_path / "s.db", tmp_path / "export"
    llm_server.default = chunked(reply(ESCAPING_KERNEL, TAGGED_PLAN))
    run = ("run", "vector_add", "--model", "ollama:loop-model", "--host", llm_server.url, "-N", "1", "-D", "1")
    code, _, err = cli(capsys, *run, "--headless", "--compile-only", "--db", str(db))
    assert code == 0, err
    code, _, err = cli(capsys, "export", "1", "--candidate", "r1-1", "--out", str(out), "--db", str(db))
    assert code == 0, err
    exported = (out / "kernel.cu").read_text(encoding="utf-8")
    from cuda_llm.app.terminal import has_controls

    assert not has_controls(exported), "the file is still safe to cat"
    assert _ptx(exported) == _ptx(ESCAPING_KERNEL)
