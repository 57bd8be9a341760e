"""Every environment variable and option a command depends on is checked before any work: one line in
the user's terms, exit 2, no traceback, no session (issue 47). The environment's cases run the real
command in a child process, since what failed there was a library import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import cli, one_line

ROOT = Path(__file__).resolve().parents[1]


def child(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cuda_llm", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
    )


# ---- the environment ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["localhost:abc", "localhost:70000", "::::"])
@pytest.mark.parametrize(
    "argv",
    [
        ["run", "vector_add", "--model", "ollama:m", "--host", "127.0.0.1:9", "--headless"],
        ["bench", "--tasks", "vector_add", "--model", "ollama:m"],
        [],  # the TUI
    ],
    ids=["run", "bench", "tui"],
)
def test_a_bad_ollama_host_variable_is_one_line_whatever_the_command(tmp_path, argv, value):
    done = child(*argv, "--db", str(tmp_path / "s.db"), env={"OLLAMA_HOST": value})
    assert done.returncode == 2
    line = one_line(done.stderr)
    assert f"OLLAMA_HOST {value!r} is not a server address" in line and "unset it" in line
    assert not (tmp_path / "s.db").exists(), "nothing was recorded"


def test_a_bad_openai_base_url_variable_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000/v1")
    code, _, err = cli(capsys, "run", "vector_add", "--model", "openai:m", "--headless", "--db", str(tmp_path / "s.db"))
    assert code == 2 and "OPENAI_BASE_URL 'localhost:8000/v1' is not a server URL" in one_line(err)


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--host", "gpu-box:port", "argument --host: 'gpu-box:port' is not a server address"),
        ("--host", "[::1", "argument --host: '[::1' is not a server address"),
        ("--base-url", "api.example.com/v1", "argument --base-url: 'api.example.com/v1' is not a server URL"),
    ],
)
def test_a_bad_server_option_is_a_usage_error(capsys, flag, value, message):
    code, out, err = cli(capsys, "run", "vector_add", "--model", "ollama:m", flag, value, "--headless")
    assert code == 2 and out == "" and message in one_line(err)


# ---- options accepted without a word -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "vector_add", "--model", "ollama:m", "--gpu", "abc", "--headless"], "'abc' names a GPU model"),
        (["run", "vector_add", "--model", "ollama:m", "--gpus", "0,x", "--headless"], "mixes GPU numbers and names"),
        (["bench", "--model", "ollama:m", "--gpus", "abc"], "which only --cluster takes"),
        (["eval", "vector_add", "baseline", "--gpu", "abc"], "'abc' is not a GPU number"),
        (["run", "vector_add", "--model", "ollama:m", "--target-roofline", "2", "--headless"], "between 0 and 1"),
        (["run", "vector_add", "--resume", "3", "--headless"], "--resume 3 goes on with the session's own task"),
    ],
)
def test_options_the_run_cannot_honour_are_usage_errors(capsys, argv, message):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == "" and message in one_line(err)


def test_a_gpu_asked_for_where_there_is_none_is_refused_not_compiled_only(capsys, monkeypatch):
    from cuda_llm.engine.judge import judge_environment

    monkeypatch.setattr(judge_environment, "gpu_unavailable_reason", lambda: "no CUDA driver")
    code, _, err = cli(capsys, "eval", "vector_add", "baseline", "--gpu", "7")
    assert code == 2 and "--gpus 7 asks for a GPU, but no CUDA driver" in one_line(err)
    # Without --gpu, the same machine compiles only, as before.
    code, _out, err = cli(capsys, "eval", "vector_add", "baseline", "--no-profile")
    assert code == 0, err


# ---- found in the parser's pass, before the task or a model is looked at ------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-N", "0"], "argument --candidates/-N: must be between 1 and 32, got 0"),
        (["--rounds", "0"], "argument --rounds/-D: must be at least 1, got 0"),
        (["--patience", "-1"], "argument --patience/-K: -1 is negative"),
    ],
)
def test_a_knob_out_of_range_is_found_before_the_task_is_read(capsys, argv, message):
    # The task does not exist: a check made after reading it would say so instead.
    code, _out, err = cli(capsys, "run", "no_such_task", "--model", "ollama:m", "--headless", *argv)
    assert code == 2 and message in one_line(err)


def test_an_unknown_model_is_found_before_the_task_is_read(capsys):
    code, _out, err = cli(capsys, "run", "no_such_task", "--model", "foo:bar", "--headless")
    assert code == 2 and "argument --model: unknown model spec 'foo:bar'" in one_line(err)


# ---- the TUI's own options ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--config", "/no/such/tui.toml"], "--config /no/such/tui.toml: no such file"),
        (["--model", "foo:bar"], "argument --model: unknown model spec 'foo:bar'"),
        (["--gpus", "abc"], "'abc' names a GPU model"),
        (["-N", "0"], "must be between 1 and 32"),
    ],
)
def test_the_tui_s_options_are_checked_before_the_app(capsys, monkeypatch, argv, message):
    from cuda_llm.app import main as tui_main
    from cuda_llm.app.app import CudaLlmApp
    from cuda_llm.app.launcher import main as launcher

    monkeypatch.setattr(tui_main, "terminal_missing", lambda: None)
    monkeypatch.setattr(CudaLlmApp, "run", lambda self, *a, **k: pytest.fail("the app was started"))
    with pytest.raises(SystemExit) as exit_:
        launcher(argv)
    assert exit_.value.code == 2 and message in one_line(capsys.readouterr().err)


def test_help_has_one_options_section(capsys):
    from cuda_llm.app.launcher import main as launcher

    assert launcher(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.count("\noptions:\n") == 1 and "terminal UI options:" in out
    assert out.count("-h, --help") == 1


# ---- wrong messages ----------------------------------------------------------------------------------------


# Root reads any file whatever its mode; without these capabilities it is refused as anyone else is.
DROP_FILE_CAPS = [
    "setpriv",
    "--bounding-set=-dac_override,-dac_read_search",
    "--inh-caps=-dac_override,-dac_read_search",
    "--",
]


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None, reason="root, and no setpriv(1)")
def test_an_unreadable_database_is_not_sent_to_the_command_that_just_failed(tmp_path):
    folder = tmp_path
    db = folder / "sessions.db"
    from cuda_llm.engine.store.sessions import SessionStore

    SessionStore(db).close()
    db.chmod(0)
    done = subprocess.run(
        [*(DROP_FILE_CAPS if os.geteuid() == 0 else []), sys.executable, "-m", "cuda_llm", "sessions", "--db", str(db)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CUDA_LLM_HOME": str(folder)},
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert f"cannot read the session database {db}: permission denied" in line
    assert "`cuda-llm sessions`" not in line


# ---- hangs --------------------------------------------------------------------------------------------------


def test_a_named_pipe_given_as_the_reply_file_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "reply.md"
    os.mkfifo(fifo)  # nobody will ever write it: opening it to read would wait forever
    done = child("eval", "vector_add", str(fifo), "--compile-only")
    assert done.returncode == 2
    assert f"reply {fifo} is a named pipe (FIFO), not a file" in one_line(done.stderr)


def test_a_compile_only_summary_counts_the_tasks_whose_candidates_compiled():
    from cuda_llm.app.cli.bench_table import BenchRow, summaries, summary_lines

    rows = [
        BenchRow(f"t{i}", i, "ollama:m", "finished", validated=False, candidates=4, compiled=2 if i == 0 else 0)
        for i in range(3)
    ]
    (line,) = summary_lines(summaries(rows))
    assert line.endswith("a candidate compiled and bound on 1 of 3 task(s).")


# ---- sessions created by a mistake ---------------------------------------------------------------------------


def test_an_openai_base_url_without_v1_starts_no_session(tmp_path, capsys, llm_server):
    db = tmp_path / "s.db"
    code, _, err = cli(
        capsys,
        *("run", "vector_add", "--model", "openai:loop-model", "--base-url", llm_server.url),
        *("--headless", "--compile-only", "--db", str(db)),
    )
    assert code == 2
    line = one_line(err)
    assert f"answers at {llm_server.openai_url}: use --base-url {llm_server.openai_url}" in line
    assert "is not set" not in line, "not about the key"
    assert not db.exists() or session_count(db) == 0
    assert not llm_server.chat_requests


def session_count(db: Path) -> int:
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(db, read_only=True)
    try:
        return len(store.sessions(1000))
    finally:
        store.close()


def test_a_replay_of_a_session_without_replies_starts_no_session(tmp_path, capsys):
    from cuda_llm.engine.core.settings import LoopSettings
    from cuda_llm.engine.store.sessions import SessionStore
    from cuda_llm.engine.task import TaskLibrary

    db = tmp_path / "s.db"
    task = TaskLibrary().get("vector_add")
    store = SessionStore(db)
    sid = store.create_session(task.name, str(task.folder), task.fingerprint, "ollama:m", LoopSettings(), "x", "sm_90")
    store.close()
    for argv in (["replay", str(sid)], ["run", "vector_add", "--model", f"replay:{sid}", "--headless"]):
        code, _, err = cli(capsys, *argv, "--compile-only", "--db", str(db))
        assert code == 2 and f"session {sid} has no recorded model replies" in one_line(err)
    assert session_count(db) == 1, "no replay session was recorded"


def test_the_resumed_line_names_the_server(tmp_path, capsys, llm_server):
    from scripted import chunked, reply

    db = tmp_path / "s.db"
    llm_server.default = chunked(reply())
    run = ("--host", llm_server.url, "--headless", "--compile-only", "--db", str(db))
    code, _, err = cli(capsys, "run", "vector_add", "--model", "ollama:loop-model", "-N", "1", "-D", "1", *run)
    assert code == 0, err
    code, _, err = cli(capsys, "run", "--resume", "1", "-D", "2", *run)
    assert code == 0, err
    assert f"session 1 resumed: vector_add with ollama:loop-model at {llm_server.url}" in err


# ---- a newcomer's further mistakes (the second pass of issue 47, docs/testing.md) -----------------------


@pytest.mark.parametrize(
    ("argv", "number"),
    [
        (["run", "--resume", "99999999999999999999999", "--headless"], "99999999999999999999999"),  # OverflowError
        (["export", "0"], "0"),
        (["replay", "-3"], "-3"),
        (["sessions", "rm", "1", "abc"], "abc"),
    ],
)
def test_a_session_number_out_of_range_is_a_usage_error(tmp_path, capsys, argv, number):
    code, out, err = cli(capsys, *argv, "--db", str(tmp_path / "s.db"))
    assert code == 2 and out == ""
    assert f"{number!r} is not a session number" in one_line(err)


def test_a_replay_spec_past_the_session_numbers_is_one_line(tmp_path, capsys):
    db = tmp_path / "s.db"
    code, _, err = cli(
        capsys,
        "run",
        "vector_add",
        "--model",
        "replay:99999999999999999999",
        "--headless",
        "--compile-only",
        "--db",
        str(db),
    )
    assert code == 2 and "'99999999999999999999' is not a session number" in one_line(err)
    assert not db.exists() or session_count(db) == 0


@pytest.mark.parametrize(
    ("argv", "argument"),
    [
        (["eval", "vector_add", ""], "file"),  # read as a path, '' was '.', "a folder"
        (["eval", "", "baseline"], "task"),
        (["export", "1", "--out", ""], "--out"),  # the export went into the current folder
        (["tasks", "import", "m.py", "--name", ""], "--name"),  # the file's name was used instead
        (["sessions", "--db", " "], "--db"),
    ],
)
def test_an_empty_value_is_a_usage_error_naming_its_argument(capsys, argv, argument):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert f"argument {argument}: " in one_line(err) and "is empty: give a value" in err


def test_a_file_where_the_task_folder_goes_names_the_option_given(tmp_path, capsys):
    file = tmp_path / "notes.txt"
    file.write_text("x", encoding="utf-8")
    code, _, err = cli(capsys, "tasks", "new", "okname", "--dir", str(file))
    assert code == 2 and one_line(err).endswith(f"{file} exists and is not a folder: choose another --dir")


def test_a_folder_or_device_given_as_the_database_is_said_to_be_one(tmp_path, capsys):
    code, _, err = cli(capsys, "sessions", "--db", str(tmp_path))
    assert code == 2 and f"{tmp_path} is a folder, not a session database" in one_line(err)
    assert "recorded there once one runs" not in err
    code, _, err = cli(capsys, "sessions", "--db", os.devnull)
    assert code == 2 and f"{os.devnull} is a device or special file, not a session database" in one_line(err)
    # CUDA_LLM_HOME=/dev/null puts the database below a file: it can never be made there either.
    code, _, err = cli(capsys, "sessions", "--db", f"{os.devnull}/data/s.db")
    assert code == 2 and f"{os.devnull} is a file, not a folder (check --db, or CUDA_LLM_HOME)" in one_line(err)


def test_a_folder_given_as_the_tui_config_is_said_to_be_one(tmp_path, capsys, monkeypatch):
    from cuda_llm.app import main as tui_main
    from cuda_llm.app.launcher import main as launcher

    monkeypatch.setattr(tui_main, "terminal_missing", lambda: None)
    with pytest.raises(SystemExit) as exit_:
        launcher(["--config", str(tmp_path)])
    assert exit_.value.code == 2
    assert f"--config {tmp_path}: a folder, not a file" in one_line(capsys.readouterr().err)


def test_a_plan_beside_the_baseline_word_is_refused_not_ignored(tmp_path, capsys):
    code, out, err = cli(capsys, "eval", "vector_add", "baseline", "--plan", str(tmp_path), "--compile-only")
    assert code == 2 and out == ""
    assert "--plan goes with a kernel file" in one_line(err)


def test_a_ctrl_c_while_the_session_closes_still_prints_how_it_ended(tmp_path, capsys, monkeypatch, llm_server):
    # A second Ctrl-C a moment after the first lands once the session has returned, while it closes
    # (found by pressing twice 0.1 s apart): it fell to Python's own handler ("interrupted", exit
    # 130) and the lines that say how the session ended were lost. The press is made here inside
    # close(): where no handler of ours takes it, it is what a real press would be there.
    import signal

    from scripted import chunked, reply

    from cuda_llm.engine.fsr.session import Session

    close = Session.close

    async def close_under_a_press(self):
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGINT)
        await close(self)

    monkeypatch.setattr(Session, "close", close_under_a_press)
    llm_server.default = chunked(reply())
    db = tmp_path / "s.db"
    code, out, err = cli(
        capsys,
        *("run", "vector_add", "--model", "ollama:loop-model", "--host", llm_server.url, "-N", "1", "-D", "1"),
        *("--headless", "--compile-only", "--db", str(db)),
    )
    assert "interrupted" not in err
    assert code == 0 and "session 1: finished" in out, (out, err)
