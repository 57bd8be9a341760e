"""The headless commands as a user runs them: the installed `cuda-llm` script from outside the
checkout (so the installed package, not the source tree, is what runs), and one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALLED = shutil.which("cuda-llm")


def _editable_install() -> bool:
    """An editable install runs the checkout itself: there is no separate installed copy to test."""
    from importlib.metadata import distributions

    urls = (d.read_text("direct_url.json") for d in distributions(name="cuda-llm"))
    return any(json.loads(url).get("dir_info", {}).get("editable") for url in urls if url)


def run(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CUDA_LLM_HOME"] = str(home)
    return subprocess.run(
        [INSTALLED or "cuda-llm", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.skipif(INSTALLED is None, reason="cuda-llm is not installed in this environment (CI installs it)")
@pytest.mark.skipif(_editable_install(), reason="an editable install has no installed copy apart from the checkout")
def test_eval_compile_only_json_from_the_installed_package(tmp_path):
    probe = subprocess.run(
        [str(Path(INSTALLED).parent / "python"), "-c", "import cuda_llm.engine; print(cuda_llm.engine.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0 and str(ROOT / "engine") not in probe.stdout, "the installed copy runs"
    src, plan = tmp_path / "k.cu", tmp_path / "plan.json"
    shutil.copy(ROOT / "tasks/vector_add/baseline.cu", src)
    shutil.copy(ROOT / "tasks/vector_add/baseline.json", plan)
    done = run(
        "eval",
        "vector_add",
        str(src),
        "--plan",
        str(plan),
        "--compile-only",
        "--arch",
        "sm_90",
        "--json",
        cwd=tmp_path,
        home=tmp_path / "home",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["compile_only"] and report["arch"] == "sm_90"
    assert report["judgement"]["status"] == "compiled" and report["judgement"]["compile"]["ok"]
    assert report["judgement"]["compile"]["kernels"][0]["name"] == "vector_add"
    assert list(report["phases_s"]) == ["compile"] and report["phases_s"]["compile"] > 0, "where the time went"


def test_eval_of_a_reply_with_a_compile_error_exits_1_and_names_the_line(tmp_path):
    reply = tmp_path / "reply.md"
    reply.write_text(
        'Here.\n\n```cuda\nextern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)\n'
        "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x\n    if (i < n) c[i] = a[i] + b[i];\n}\n```\n\n"
        "```json\n" + (ROOT / "tasks/vector_add/baseline.json").read_text() + "```\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "cuda_llm.app.launcher", "eval", "vector_add", str(reply), "--compile-only"],
        cwd=ROOT,
        env={**os.environ, "CUDA_LLM_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "compile error" in done.stdout and "line 4" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "no_such_task", "x.md"], "unknown task 'no_such_task'"),
        (["run", "vector_add", "--model", "gopher:7b", "--headless", "--compile-only"], "unknown model spec"),
        (
            ["run", "vector_add", "--headless"],
            "run needs --model SPEC (use ollama:MODEL, openai:MODEL or replay:SESSION)",
        ),
        (["run", "--model", "ollama:x", "--headless"], "run needs TASK (or --resume ID)"),
        (["run", "--headless"], "run needs TASK and --model SPEC (or --resume ID)"),
        (["export", "999"], "no session database at"),
    ],
)
def test_user_mistakes_are_one_line_and_exit_2(tmp_path, args, message):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cuda_llm.app.launcher",
            *args,
            *(["--db", str(tmp_path / "s.db")] if args[0] in ("run", "export") else []),
        ],
        cwd=ROOT,
        env={**os.environ, "CUDA_LLM_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], done.stderr


@pytest.mark.parametrize(("flags", "compilers"), [(["--compile-only"], 1), (["--no-profile"], 1), ([], 2)])
def test_eval_starts_only_the_compiler_processes_it_needs(tmp_path, monkeypatch, capsys, flags, compilers):
    """One candidate needs one compile, and the baseline's beside it when it is timed: a compiler
    process per core, or four per GPU as a round wants, would cost each eval seconds of start-up."""
    import cuda_llm.engine.judge.judge_environment as judge_environment
    from cuda_llm.app.cli.main import main
    from cuda_llm.engine.compile.compiler_pool import CompilerPool

    sizes: list[int] = []

    class CountedPool(CompilerPool):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            sizes.append(self.size)

    monkeypatch.setattr(judge_environment, "CompilerPool", CountedPool)
    monkeypatch.setenv("CUDA_LLM_HOME", str(tmp_path / "home"))
    reply = tmp_path / "reply.md"
    reply.write_text("no code here\n")
    main(["eval", "vector_add", str(reply), *flags])
    assert "format error" in capsys.readouterr().out
    assert sizes == [compilers]
