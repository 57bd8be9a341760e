"""A careless command is one line and exit code 2 before any work starts, and leaves nothing behind:
no traceback, no session recorded for a mistake (issue 25's items 7-14). In process through the
CLI's `main` where that shows everything; as a child process where the terminal or the imports
matter. Ctrl-C in a headless run (exit 130 and the resume line) is tests/faults/test_process.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import cli, one_line
from scripted import chunked, reply

from cuda_llm.app.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tasks" / "vector_add"


def child(*argv: str, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cuda_llm", *argv],
        cwd=ROOT,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
        **kwargs,
    )


def session_ids(db: Path) -> list[int]:
    """The sessions a database holds (none when it was never made)."""
    if not db.exists():
        return []
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(db, read_only=True)
    try:
        return [s.id for s in store.sessions(1000)]
    finally:
        store.close()


@pytest.fixture
def broken_task(tmp_path) -> Path:
    """A user task (scaffolded as `tasks new` makes one) whose baseline.cu has a syntax error on line 5."""
    from cuda_llm.engine.task.scaffold import scaffold_task

    folder = scaffold_task("my_broken_task", tmp_path / "tasks")
    lines = (folder / "baseline.cu").read_text().splitlines()
    lines[4] += " this is not C++"
    (folder / "baseline.cu").write_text("\n".join(lines) + "\n")
    return folder


# ---- item 7: tracebacks -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "eval", "bench"])
def test_an_arch_this_nvrtc_lacks_is_a_usage_error(tmp_path, capsys, command):
    db = tmp_path / "s.db"
    argv = {
        "run": ["run", "vector_add", "--model", "ollama:m", "--headless", "--db", str(db)],
        "eval": ["eval", "vector_add", str(BASELINE / "baseline.cu"), "--plan", str(BASELINE / "baseline.json")],
        "bench": ["bench", "--model", "ollama:m", "--tasks", "vector_add", "--db", str(db)],
    }[command]
    code, out, err = cli(capsys, *argv, "--arch", "sm_999")
    assert code == 2 and out == ""
    assert "cannot compile for sm_999 (it knows sm_" in one_line(err)
    assert not db.exists()


@pytest.mark.parametrize("command", ["run", "bench"])
def test_a_baseline_that_does_not_compile_is_one_line_naming_file_and_line(
    tmp_path, capsys, llm_server, broken_task, command
):
    db = tmp_path / "s.db"
    model = ["--model", "ollama:loop-model", "--host", llm_server.url, "--compile-only", "--db", str(db)]
    argv = (
        ["run", str(broken_task), *model, "--headless"]
        if command == "run"
        else ["bench", "--tasks", str(broken_task), *model]
    )
    code, _, err = cli(capsys, *argv)
    assert code == 2
    assert f"{broken_task / 'baseline.cu'}:5: the baseline of task 'my_broken_task' does not compile" in one_line(err)
    assert session_ids(db) == [], "no session for a task that cannot run"
    assert not llm_server.chat_requests, "nothing was asked of the model"


# ---- item 8: mistakes judged as candidates ------------------------------------------------------------


def test_a_plan_that_is_not_json_is_a_usage_error_naming_the_line(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text('{"launches": [\n  {"kernel": "vector_add",}\n]}\n')
    code, out, err = cli(capsys, "eval", "vector_add", str(BASELINE / "baseline.cu"), "--plan", str(plan))
    assert code == 2 and out == ""
    line = one_line(err)
    assert f"launch plan {plan} is not JSON" in line and "line 2" in line


# ---- item 9: sessions created for nothing ---------------------------------------------------------------


def test_an_unreachable_server_starts_no_session(tmp_path, capsys, refused_url):
    db = tmp_path / "s.db"
    code, _, err = cli(
        capsys, "run", "vector_add", "--model", "ollama:m", "--host", refused_url, "--headless", "--compile-only",
        "--db", str(db),
    )  # fmt: skip
    assert code == 2 and f"cannot reach the ollama server at {refused_url}" in one_line(err)
    assert session_ids(db) == []


def test_an_unknown_host_name_starts_no_session(tmp_path, capsys):
    db = tmp_path / "s.db"
    host = "http://no-such-host.invalid:11434"
    code, _, err = cli(
        capsys, "run", "vector_add", "--model", "ollama:m", "--host", host, "--headless", "--compile-only",
        "--db", str(db),
    )  # fmt: skip
    assert code == 2 and "cannot resolve the host name of the ollama server" in one_line(err)
    assert session_ids(db) == []


def test_an_openai_model_without_its_key_says_the_key_is_unset(tmp_path, capsys, monkeypatch, refused_url):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = tmp_path / "s.db"
    code, _, err = cli(
        capsys, "run", "vector_add", "--model", "openai:gpt-4o", "--base-url", refused_url + "/v1", "--headless",
        "--compile-only", "--db", str(db),
    )  # fmt: skip
    assert code == 2 and "(OPENAI_API_KEY is not set)" in one_line(err)
    assert session_ids(db) == []


def test_a_model_the_server_lacks_starts_no_session(tmp_path, capsys, llm_server):
    db = tmp_path / "s.db"
    code, _, err = cli(
        capsys, "run", "vector_add", "--model", "ollama:loop-modle", "--host", llm_server.url, "--headless",
        "--compile-only", "--db", str(db),
    )  # fmt: skip
    line = one_line(err)
    assert code == 2 and "model 'loop-modle' is not on" in line and "did you mean 'loop-model'" in line
    assert session_ids(db) == [] and not llm_server.chat_requests


def test_a_model_listed_with_its_latest_tag_is_the_model(tmp_path, capsys, llm_server):
    llm_server.models = ("qwen:latest",)
    llm_server.default = chunked(reply())
    db = tmp_path / "s.db"
    code, _, err = cli(
        capsys, "run", "vector_add", "--model", "ollama:qwen", "--host", llm_server.url, "--headless",
        "--compile-only", "-N", "1", "-D", "1", "--db", str(db),
    )  # fmt: skip
    assert code == 0, err
    assert session_ids(db) == [1]


def _three_sessions(tmp_path, capsys, llm_server) -> Path:
    llm_server.default = chunked(reply())
    db = tmp_path / "s.db"
    for _ in range(3):
        code, _, err = cli(
            capsys, "run", "vector_add", "--model", "ollama:loop-model", "--host", llm_server.url, "--headless",
            "--compile-only", "-N", "1", "-D", "1", "--db", str(db),
        )  # fmt: skip
        assert code == 0, err
    return db


def test_sessions_rm_removes_sessions_and_everything_recorded_for_them(tmp_path, capsys, llm_server):
    import sqlite3

    db = _three_sessions(tmp_path, capsys, llm_server)
    code, out, err = cli(capsys, "sessions", "rm", "1", "3", "--db", str(db))
    assert code == 0 and out.strip() == "removed session(s) 1, 3", err
    assert session_ids(db) == [2]
    with sqlite3.connect(db) as con:
        for table in ("candidates", "prompts", "rounds"):
            left = {r[0] for r in con.execute(f"SELECT DISTINCT session_id FROM {table}")}
            assert left == {2}, table
    code, _, err = cli(capsys, "sessions", "rm", "2", "9", "--db", str(db))
    assert code == 2 and "no session 9" in one_line(err)
    assert session_ids(db) == []


def test_sessions_prune_removes_those_older_than_an_age(tmp_path, capsys, llm_server):
    import sqlite3
    import time

    db = _three_sessions(tmp_path, capsys, llm_server)
    with sqlite3.connect(db) as con:  # session 1 last written two days ago
        con.execute("UPDATE sessions SET updated_at = ? WHERE id = 1", (time.time() - 2 * 86400,))
    code, out, _ = cli(capsys, "sessions", "prune", "--older-than", "1d", "--dry-run", "--db", str(db))
    assert code == 0 and out.strip() == "would remove 1 session(s): 1"
    assert session_ids(db) == [3, 2, 1]
    code, out, _ = cli(capsys, "sessions", "prune", "--older-than", "36h", "--db", str(db))
    assert code == 0 and out.strip() == "removed 1 session(s): 1"
    assert session_ids(db) == [3, 2]
    code, _, err = cli(capsys, "sessions", "prune", "--older-than", "soon", "--db", str(db))
    assert code == 2 and "is not an age" in one_line(err)


# ---- item 11: the TUI without a terminal ---------------------------------------------------------------


@pytest.mark.parametrize("argv", [[], ["run", "vector_add", "--model", "manual"]])
def test_the_tui_without_a_terminal_is_refused_in_one_line(argv):
    done = child(*argv, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    line = one_line(done.stderr.decode())
    assert "the terminal UI needs a terminal" in line and "--headless" in line
    assert done.stdout == b"", "no escape codes written"


def test_run_with_an_unknown_task_in_the_tui_is_one_line_before_the_app(capsys, monkeypatch):
    from cuda_llm.app import main as tui_main
    from cuda_llm.app.app import CudaLlmApp
    from cuda_llm.app.launcher import main as launcher

    monkeypatch.setattr(tui_main, "terminal_missing", lambda: None)
    monkeypatch.setattr(CudaLlmApp, "run", lambda self, *a, **k: pytest.fail("the app was started"))
    code = launcher(["run", "vector_ad", "--model", "manual"])
    err = capsys.readouterr().err
    assert code == 2 and "unknown task 'vector_ad' (did you mean 'vector_add'?)" in one_line(err)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["run", "vector_add"],
            "run needs --model SPEC (use ollama:MODEL, openai:MODEL or replay:SESSION), or --resume ID",
        ),
        (["run"], "run needs TASK and --model SPEC (or --resume ID); `cuda-llm tasks` lists the tasks"),
    ],
)
def test_run_in_the_tui_without_a_model_or_task_says_which_before_the_app(capsys, monkeypatch, argv, line):
    """The TUI's `run` and the headless one say the same line (app/cli/run_cmd.py, missing_to_run)."""
    from cuda_llm.app import main as tui_main
    from cuda_llm.app.app import CudaLlmApp
    from cuda_llm.app.launcher import main as launcher

    monkeypatch.setattr(tui_main, "terminal_missing", lambda: None)
    monkeypatch.setattr(CudaLlmApp, "run", lambda self, *a, **k: pytest.fail("the app was started"))
    code = launcher(argv)
    assert code == 2 and one_line(capsys.readouterr().err) == f"cuda-llm: {line}"


# ---- item 12: tasks new with a built-in name --------------------------------------------------------------


def test_tasks_new_refuses_a_builtin_name_unless_forced_and_tasks_marks_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CUDA_LLM_HOME", str(tmp_path / "home"))
    code, out, err = cli(capsys, "tasks", "new", "vector_add")
    assert code == 2 and out == ""
    assert "'vector_add' is a built-in task" in one_line(err) and "--force" in err
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("vector_add"))
    code, _, _ = cli(capsys, "tasks")
    assert code == 0
    code, out, err = cli(capsys, "tasks", "new", "vector_add", "--force")
    assert code == 0, err
    code, out, _ = cli(capsys, "tasks")
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "vector_add*" in rows and "reverse_array" in rows
    assert "* your task replaces the built-in one of that name in every command: vector_add: " in out
    code, out, _ = cli(capsys, "tasks", "--json")
    shadows = {t["name"]: t["shadows_builtin"] for t in json.loads(out) if "name" in t}
    assert shadows["vector_add"] is True and shadows["reverse_array"] is False


# ---- item 13: --help imports nothing heavy --------------------------------------------------------------


def test_help_imports_no_numpy_no_bench_table_no_gpu_protocol():
    code = (
        "import sys, io, contextlib\n"
        "from cuda_llm.app.launcher import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['--help']) == 0\n"
        "heavy = [m for m in ('numpy', 'cuda_llm.app.cli.bench_table', 'cuda_llm.engine.judge.metrics',\n"
        "         'cuda_llm.engine.gpu.protocol', 'textual', 'httpx') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"--help imported {done.stdout.strip()}"


# ---- item 14: the small ones ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sessions", "--limit", "0"], "argument --limit: 0 is not a positive integer"),
        (["sessions", "--limit", "-5"], "argument --limit: -5 is not a positive integer"),
        (["run", "vector_add", "--model", "ollama:m", "--temperature", "-3", "--headless"], "-3 is negative"),
        (["run", "vector_add", "--model", "ollama:m", "--max-tokens", "0", "--headless"], "0 is not a positive"),
        (["run", "vector_add", "--model", "ollama:m", "--time-budget", "nan", "--headless"], "not a finite number"),
    ],
)
def test_numbers_out_of_range_are_usage_errors(capsys, argv, message):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == "" and message in one_line(err)


def test_bench_compare_writes_its_out_folder(tmp_path, capsys):
    doc = {
        "model": "ollama:a",
        "rows": [],
        "request": {},
        "device": "d",
        "date": "2026-11-26",
        "version": "0",
        "command": ["cuda-llm", "bench"],
    }
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    b.write_text(json.dumps({**doc, "model": "ollama:b"}))
    code, out, err = cli(capsys, "bench", "--compare", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert code == 0, err
    written = tmp_path / "cmp"
    assert (written / "compare.md").read_text() == out
    assert json.loads((written / "compare.json").read_text())
    assert f"wrote {written / 'compare.md'}" in err


async def test_doctor_warns_on_a_server_with_no_models(llm_server):
    from cuda_llm.app.cli.doctor_cmd import check_servers

    llm_server.models = ()
    checks = {c.name: c for c in await check_servers(llm_server.url, llm_server.openai_url)}
    assert checks["ollama"].status == "warn" and "no models" in checks["ollama"].detail
    assert checks["openai"].status == "warn" and "no models" in checks["openai"].detail


def test_task_rows_fit_the_width(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = cli(capsys, "tasks")
    assert code == 0
    assert any(line.endswith("...") for line in out.splitlines()), "long summaries are cut"
    # The fixed columns take about 95 of them; a summary keeps 20 characters at least.
    assert max(len(line) for line in out.splitlines()) <= 120


@pytest.mark.parametrize(
    ("command", "options"),
    [("sessions", ["--limit", "--json"]), ("export", ["id", "--db", "--json"]), ("doctor", ["--json"])],
)
def test_every_option_has_help_text(command, options):
    import argparse

    from cuda_llm.app.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    for option in options:
        action = next(a for a in sub._actions if option in a.option_strings or a.dest == option)
        assert action.help, f"{command} {option} has no help text"


@pytest.mark.parametrize(("command", "actions"), [("tasks", "[new | import]"), ("sessions", "[rm | prune]")])
def test_a_command_s_help_names_its_subcommands_in_the_usage(capsys, command, actions):
    """`tasks` and `sessions` do something alone and have subcommands: the usage line names them (an
    empty name left `[--json]  ...` and an empty row under the positional arguments)."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    usage = " ".join(out.split("\n\n")[0].split())
    assert usage.endswith(f"{actions} ..."), usage
    assert "\n  \n" not in out, out


def test_python_m_cuda_llm_is_the_command():
    done = child("--version")
    assert done.returncode == 0 and done.stdout.decode().startswith("cuda-llm ")


# ---- items 7-12 together: no session is created by a mistake ----------------------------------------------


def test_a_scripted_run_of_every_mistake_leaves_no_session(tmp_path, capsys, monkeypatch, llm_server, refused_url,
                                                          broken_task):  # fmt: skip
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    db = str(tmp_path / "s.db")
    run = ["run", "vector_add", "--headless", "--compile-only", "--db", db]
    mistakes = [
        [*run, "--model", "ollama:loop-model", "--host", llm_server.url, "--arch", "sm_999"],
        ["run", str(broken_task), "--headless", "--compile-only", "--db", db, "--model", "ollama:loop-model",
         "--host", llm_server.url],
        ["bench", "--tasks", str(broken_task), "--compile-only", "--db", db, "--model", "ollama:loop-model",
         "--host", llm_server.url],
        ["eval", "vector_add", str(BASELINE / "baseline.cu"), "--plan", str(broken_task / "task.toml")],
        ["eval", "vector_add", str(BASELINE / "baseline.cu"), "--plan", str(BASELINE / "baseline.json"),
         "--arch", "sm_999"],
        [*run, "--model", "ollama:loop-model", "--host", refused_url],
        [*run, "--model", "ollama:loop-model", "--host", "http://no-such-host.invalid:11434"],
        [*run, "--model", "openai:gpt-4o", "--base-url", refused_url + "/v1"],
        [*run, "--model", "ollama:no-such-model", "--host", llm_server.url],
        [*run, "--model", "ollama:loop-model", "--host", llm_server.url, "--temperature", "-3"],
        ["tasks", "new", "vector_add"],
    ]  # fmt: skip
    for argv in mistakes:
        code, _, err = cli(capsys, *argv)
        assert code == 2, (argv, err)
        one_line(err)
    for argv in ([], ["run", "vector_add", "--model", "ollama:loop-model", "--host", llm_server.url, "--db", db]):
        done = child(*argv, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, done.stderr
    code, out, err = cli(capsys, "sessions", "--db", db)
    assert code == 2 or out.startswith("no sessions yet"), out
    assert session_ids(Path(db)) == []
    assert not llm_server.chat_requests, "no mistake reached the model"
