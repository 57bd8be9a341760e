"""What the headless commands say when a user gets something wrong, and when output is cut short: one
line each, never a traceback; and export / eval / replay as a researcher moves a session between
machines. In process through `cuda_llm.app.cli.main.main`, or as a child process where the pipe
or the terminal matters."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import cli, one_line
from fakes.fake_gpu import FakeGpu, fake_environment
from llm_servers import Reply
from scripted import GOOD_KERNEL, GOOD_PLAN, chunked, reply
from session_driver import options, run_session

from cuda_llm.app.cli import eval_cmd
from cuda_llm.app.cli.main import EXIT_BROKEN_PIPE, main
from cuda_llm.app.cli.output import VERDICT_CHARS
from cuda_llm.app.cli.yardstick import library_record
from cuda_llm.engine.gpu.library import INSTALL_HINT, cupy_missing

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tasks" / "vector_add"


def child(*argv: str, stdout=subprocess.PIPE, env: dict[str, str] | None = None, stdin: bytes | None = None):
    return subprocess.run(
        [sys.executable, "-m", "cuda_llm.app.launcher", *argv],
        cwd=ROOT,
        stdout=stdout,
        stderr=subprocess.PIPE,
        input=stdin,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
    )


# ---- file arguments -----------------------------------------------------------------------------


def test_a_folder_that_is_not_an_export_is_one_line(tmp_path, capsys):
    code, out, err = cli(capsys, "eval", "vector_add", str(tmp_path), "--compile-only")
    assert code == 2 and out == ""
    assert "is a folder: give a reply (.md), a .cu file with --plan, or a folder `cuda-llm export` wrote" in one_line(
        err
    )


@pytest.mark.parametrize("which", ["reply", "plan"])
def test_a_missing_file_is_one_line(tmp_path, capsys, which):
    args = [str(tmp_path / "nope.md")] if which == "reply" else [str(BASELINE / "baseline.cu"), "--plan", "nope.json"]
    code, _, err = cli(capsys, "eval", "vector_add", *args, "--compile-only")
    assert code == 2 and "no such file: " in one_line(err) and "nope" in err


def test_a_binary_plan_is_a_usage_error_naming_the_file(tmp_path, capsys):
    plan = tmp_path / "binary.json"
    plan.write_bytes(bytes(range(256)) * 4)
    code, out, err = cli(
        capsys, "eval", "vector_add", str(BASELINE / "baseline.cu"), "--plan", str(plan), "--compile-only", "--json"
    )
    assert code == 2 and out == ""
    assert one_line(err) == f"cuda-llm: launch plan {plan} is not UTF-8 text"


def test_a_plan_folder_is_one_line(tmp_path, capsys):
    code, _, err = cli(
        capsys, "eval", "vector_add", str(BASELINE / "baseline.cu"), "--plan", str(tmp_path), "--compile-only"
    )
    assert code == 2 and "launch plan" in one_line(err) and "is a folder, not a file" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_an_unreadable_file_is_one_line(tmp_path, capsys):
    secret = tmp_path / "reply.md"
    secret.write_text(reply())
    secret.chmod(0)
    code, _, err = cli(capsys, "eval", "vector_add", str(secret), "--compile-only")
    assert code == 2 and one_line(err).endswith(f"cannot read reply {secret}: permission denied")


def test_a_file_too_large_to_be_a_reply_is_refused_unread(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(eval_cmd, "MAX_FILE_BYTES", 1000)
    big = tmp_path / "big.md"
    big.write_text("x" * 5000)
    code, _, err = cli(capsys, "eval", "vector_add", str(big), "--compile-only")
    assert code == 2 and "is larger than 1,000 bytes" in one_line(err)


def test_a_device_that_cannot_be_read_is_one_line(capsys):
    if not Path("/proc/self/mem").exists():
        pytest.skip("no /proc here")
    code, _, err = cli(capsys, "eval", "vector_add", "/proc/self/mem", "--compile-only")
    assert code == 2 and one_line(err).startswith("cuda-llm: cannot read reply /proc/self/mem: ")


def test_dash_reads_a_reply_from_standard_input(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(reply().encode())))
    code, out, _ = cli(capsys, "eval", "vector_add", "-", "--compile-only", "--json")
    assert code == 0 and json.loads(out)["judgement"]["status"] == "compiled"
    assert json.loads(out)["judgement"]["label"] == "stdin"
    assert list(json.loads(out)["phases_s"]) == ["compile"], "where the time went: here, compiling only"


def test_dash_reads_cuda_source_from_standard_input_with_a_plan(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((BASELINE / "baseline.cu").read_bytes())))
    code, out, _ = cli(capsys, "eval", "vector_add", "-", "--plan", str(BASELINE / "baseline.json"), "--compile-only")
    assert code == 0 and "verdict:  compiled" in out
    assert re.search(r"^took: compile [0-9.]+ s$", out, re.M), out


def test_standard_input_can_be_read_once(capsys):
    code, _, err = cli(capsys, "eval", "vector_add", "-", "--plan", "-", "--compile-only")
    assert code == 2 and "only one of FILE and --plan can be standard input" in one_line(err)


def test_dash_through_a_real_pipe():
    done = child("eval", "vector_add", "-", "--compile-only", stdin=reply().encode())
    assert done.returncode == 0 and b"verdict:  compiled" in done.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "1", "--out", "{file}"],
        ["bench", "--model", "replay:latest", "--tasks", "vector_add", "--out", "{file}/sub"],
        ["tasks", "new", "my_task", "--dir", "{file}"],
    ],
)
def test_an_output_folder_that_is_a_file_is_one_line(tmp_path, capsys, argv, recorded_db):
    target = tmp_path / "a-file"
    target.write_text("not a folder")
    argv = [a.replace("{file}", str(target)) for a in argv]
    if argv[0] in ("export", "bench"):
        argv += ["--db", str(recorded_db)]
    code, _, err = cli(capsys, *argv)
    assert code == 2 and "Traceback" not in err
    assert str(target) in err.strip().splitlines()[-1]


# ---- a closed pipe, typos ------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["tasks"], ["tasks", "--json"], ["--help"], ["eval", "--help"], ["--version"]])
def test_output_into_a_closed_pipe_ends_quietly(argv):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte (`cuda-llm tasks | head -0`)
    try:
        done = child(*argv, stdout=write_end)
    finally:
        os.close(write_end)
    assert done.stderr == b"", done.stderr.decode()
    assert done.returncode in (0, EXIT_BROKEN_PIPE)


def test_tasks_into_head_prints_one_line_and_nothing_else():
    shell = f"{sys.executable} -m cuda_llm.app.launcher tasks --json | head -c 1"
    done = subprocess.run(
        ["bash", "-c", shell], cwd=ROOT, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120
    )
    assert done.stdout == b"[" and done.stderr == b""


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["bnech"],
            "cuda-llm: 'bnech' is not one of: tasks, eval, run, sessions, export, replay, bench, doctor "
            "(did you mean bench?)",
        ),
        (
            ["bench", "--modle", "ollama:x"],
            "cuda-llm bench: unrecognized arguments: --modle ollama:x (did you mean --model?)",
        ),
        (["tasks", "nwe", "x"], "cuda-llm tasks: 'nwe' is not one of: new, import (did you mean new?)"),
        (["eval", "vectr_add", "x.md"], "cuda-llm: unknown task 'vectr_add' (did you mean 'vector_add'?)"),
        (["eval", "vector_add"], "cuda-llm eval: the following arguments are required: file"),
    ],
)
def test_typos_get_one_line_with_a_suggestion(capsys, argv, expected):
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert one_line(err).startswith(expected), err


def test_a_folder_that_is_not_a_task(tmp_path, capsys):
    code, _, err = cli(
        capsys, "eval", str(tmp_path), str(BASELINE / "baseline.cu"), "--plan", str(BASELINE / "baseline.json")
    )
    assert code == 2 and f"{tmp_path} is a folder without a task.toml" in one_line(err)


# ---- format errors: once, short, complete in JSON ----------------------------------------------------


def test_a_format_error_is_printed_once_with_a_short_verdict(tmp_path, capsys):
    bad = tmp_path / "bad.md"
    bad.write_text(
        reply(plan={"launches": [{"kernel": "vadd4", "grid": [1], "block": [256], "args": ["a", "b", "cc", "n"]}]})
    )
    code, out, _ = cli(capsys, "eval", "vector_add", str(bad), "--compile-only")
    assert code == 1
    verdict = next(line for line in out.splitlines() if line.startswith("verdict:"))
    assert len(verdict) <= 130 and 'unknown name "cc" (did you mean "c"?)' in verdict
    for sentence in ('unknown name "cc"', "An argument names a task buffer (a, b, c)"):
        assert out.count(sentence) == 1, out


def test_the_json_message_of_a_rejected_source_is_complete(tmp_path, capsys):
    bad = tmp_path / "include.md"
    bad.write_text(reply(kernel='#include "/etc/passwd"\n' + GOOD_KERNEL))
    code, out, _ = cli(capsys, "eval", "vector_add", str(bad), "--compile-only", "--json")
    j = json.loads(out)["judgement"]
    assert code == 1 and j["status"] == "format_error"
    assert not j["message"].endswith(":") and "line 1" in j["message"], j["message"]
    assert j["message"] in j["detail"].replace("\n  ", " ")


# ---- the headless run's progress lines ---------------------------------------------------------------


def test_a_headless_run_shows_a_reply_without_code_blocks_in_one_short_line(tmp_path, capsys, llm_server):
    llm_server.default = chunked("I would rather explain it in words: add the vectors element by element.")
    code, out, err = cli(
        capsys,
        "run", "vector_add", "--model", "ollama:loop-model", "--host", llm_server.url, "--headless", "--compile-only",
        "--rounds", "1", "--candidates", "1", "--repairs", "0", "--db", str(tmp_path / "s.db"), "--json",
    )  # fmt: skip
    assert code == 0, err
    line = next(x for x in err.splitlines() if x.startswith("  r1-1: ") and "reply received" not in x)
    assert line == "  r1-1: no CUDA code block found: put all the kernels in one fenced ```cuda block."
    assert len(line) <= VERDICT_CHARS + 10 and "no launch plan found" not in err
    full = next(h for h in json.loads(out)["history"] if h["label"] == "r1-1")["message"]
    assert full.startswith(line.strip().removeprefix("r1-1: ")) and "no launch plan found" in full, "whole in --json"
    assert len(full) > 300


def test_progress_names_both_ceilings_and_keeps_a_timed_candidates_figures():
    from cuda_llm.app.cli.progress import ProgressPrinter
    from cuda_llm.engine.fsr import events as ev
    from cuda_llm.engine.judge.judgement import Judgement

    buf = io.StringIO()
    printer = ProgressPrinter(buf, live=False)
    figures = (
        "correct; 40.0 us (IQR 1.0), 2.50x the baseline, 50% of the achievable roofline (memory-bound), "
        "49% of the physical limit, two levels: 38.0 us (47% of samples, SM 1980 MHz) and 42.0 us (53%, SM 1755 MHz)"
    )
    printer(ev.CandidateJudged("1", "validate", Judgement("r1-1", "correct", figures)))
    printer(ev.RoundFinished("1", 1, True, "r1-1", 40.0, 2.5, 0.5, 1200, best_physical_share=0.49))
    printer(ev.RoundFinished("1", 2, False, "r1-1", 40.0, 2.5, 0.5, 2400))  # an older event: no physical share
    assert buf.getvalue().splitlines() == [
        f"  r1-1: {figures}",
        "round 1 done: best r1-1 40.0 us, 2.50x the baseline, 50% of the achievable roofline (49% of the physical "
        "limit); 1200 tokens so far",
        "round 2 done: best r1-1 40.0 us, 2.50x the baseline, 50% of the achievable roofline; 2400 tokens so far",
    ]


def test_eval_names_both_ceilings(tmp_path):
    import asyncio

    j, _ = asyncio.run(_judged_on_the_fake_gpu(library_us=50))
    line = next(x for x in eval_cmd.render(j, "Fake H100 (sm_90)").splitlines() if "GB/s" in x)
    f = j.figures
    assert f"{f.roofline_pct:.0f}% of the achievable roofline (floor {f.floor_us:.1f} us, memory-bound)" in line
    assert f"{f.physical_pct:.0f}% of the physical limit (floor {f.physical_floor_us:.1f} us)" in line
    assert "roofline floor" not in line and "of it" not in line


# ---- export, eval of an export, replay ----------------------------------------------------------------


@pytest.fixture(scope="module")
def _recorded_once(tmp_path_factory) -> Path:
    """A compile-only session of vector_add with two rounds of one candidate, the first broken: run
    once for the module (a whole session, seconds), copied for each test that uses it."""
    import asyncio

    from llm_servers import LoopbackLLMServer
    from scripted import BROKEN_KERNEL

    folder = tmp_path_factory.mktemp("recorded")
    with LoopbackLLMServer() as server:
        server.script(chunked(reply(BROKEN_KERNEL)), chunked(reply()))
        server.default = chunked(reply())
        asyncio.run(
            run_session(options(folder, "ollama:loop-model", candidates=1, rounds=2, repairs=1), host=server.url)
        )
    return folder / "sessions.db"


@pytest.fixture
def recorded_db(tmp_path, _recorded_once) -> Path:
    """This test's own copy of the recorded session (sqlite's backup: the WAL's pages included)."""
    import sqlite3

    copy = tmp_path / "sessions.db"
    source, target = sqlite3.connect(_recorded_once), sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return copy


def test_export_of_any_candidate_and_eval_of_the_export(tmp_path, capsys, recorded_db):
    out = tmp_path / "exp"
    code, text, _ = cli(capsys, "export", "1", "--candidate", "r1-fix1-1", "--db", str(recorded_db), "--out", str(out))
    assert code == 0 and "kernel: r1-fix1-1: r1-fix1-1 as asked (compiled)" in text
    assert f"re-judge it with: cuda-llm eval vector_add {out}" in text
    code, text, _ = cli(capsys, "eval", "vector_add", str(out), "--compile-only")
    assert code == 0 and text.startswith("candidate r1-fix1-1 on no GPU") and "exported from session 1" in text
    code, _, err = cli(capsys, "export", "1", "--candidate", "r1-fix-1", "--db", str(recorded_db))
    assert code == 2 and "has no candidate 'r1-fix-1' (did you mean r1-fix1-1?)" in one_line(err)
    code, _, err = cli(capsys, "export", "1", "--candidate", "r1-1", "--db", str(recorded_db), "--out", str(out))
    assert code == 0, "a candidate that failed to compile still has its source"
    report = json.loads((out / "report.json").read_text())
    assert report["exported"]["status"] == "compile_error" and "undefined_thing" in (out / "kernel.cu").read_text()
    assert f"cuda-llm: {out}/ existed: replaced its kernel.cu, plan.json, report.md, report.json" in one_line(err)


def test_export_into_a_fresh_folder_says_nothing_and_into_an_earlier_export_says_it_replaced_it(
    tmp_path, capsys, recorded_db, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "export", "1", "--db", str(recorded_db))
    assert code == 0 and err == "" and (tmp_path / "cuda-llm-session-1" / "kernel.cu").is_file()
    (tmp_path / "cuda-llm-session-1" / "notes.txt").write_text("mine")
    (tmp_path / "cuda-llm-session-1" / "plan.json").unlink()
    code, out, err = cli(capsys, "export", "1", "--db", str(recorded_db), "--json")
    assert code == 0
    assert one_line(err) == "cuda-llm: cuda-llm-session-1/ existed: replaced its kernel.cu, report.md, report.json"
    assert json.loads(out)["replaced"] == ["kernel.cu", "report.md", "report.json"]
    assert (tmp_path / "cuda-llm-session-1" / "notes.txt").read_text() == "mine", "other files are left alone"


@pytest.mark.parametrize("command", [["sessions"], ["export", "1"], ["replay", "1"], ["doctor"]])
def test_a_mistyped_db_creates_nothing(tmp_path, capsys, command):
    typo = tmp_path / "typo" / "x.db"
    code, _, err = cli(capsys, *command, "--db", str(typo))
    assert not (tmp_path / "typo").exists()
    if command != ["doctor"]:
        assert code == 2 and "no session database at" in one_line(err)


async def test_export_of_a_gpu_session_writes_the_best(tmp_path, llm_server, capsys):
    llm_server.script(chunked(reply(GOOD_KERNEL.replace("vadd4", "vadd_us40"), _plan("vadd_us40"))))
    llm_server.default = chunked(reply(GOOD_KERNEL.replace("vadd4", "vadd_us60"), _plan("vadd_us60")))
    opts = options(tmp_path, "ollama:loop-model", candidates=1, rounds=2)
    await run_session(opts, host=llm_server.url, environment=fake_environment(FakeGpu()))
    code, text, _ = cli(capsys, "export", "1", "--db", str(tmp_path / "sessions.db"), "--out", str(tmp_path / "e"))
    assert code == 0 and "kernel: r1-1: the session's best, 2.50x the baseline" in text
    assert "vadd_us40" in (tmp_path / "e" / "kernel.cu").read_text()
    report = json.loads((tmp_path / "e" / "report.json").read_text())
    assert report["best"]["round"] == 1 and report["environment"]["gpu"]["name"] == "Fake H100"
    md = (tmp_path / "e" / "report.md").read_text()
    assert "- best: r1-1 (round 1)" in md and "driver 13.0" in md
    f = report["best"]["figures"]
    assert f"{f['roofline_share']:.0%} of the achievable roofline (memory-bound), " in md, "each share named"
    assert f"{f['physical_share']:.0%} of the physical limit, " in md and "| achievable roofline |" in md


async def test_export_when_nothing_beat_the_baseline_writes_the_baseline(tmp_path, llm_server, capsys):
    llm_server.default = chunked(reply(GOOD_KERNEL.replace("vadd4", "vadd_wrong"), _plan("vadd_wrong")))
    opts = options(tmp_path, "ollama:loop-model", candidates=1, rounds=1, repairs=0)
    await run_session(opts, host=llm_server.url, environment=fake_environment(FakeGpu()))
    code, text, _ = cli(capsys, "export", "1", "--db", str(tmp_path / "sessions.db"), "--out", str(tmp_path / "e"))
    assert code == 0 and "no candidate beat the baseline: the task's baseline" in text
    assert (tmp_path / "e" / "kernel.cu").read_text().strip() == (BASELINE / "baseline.cu").read_text().strip()


def _plan(kernel: str) -> dict:
    return {"launches": [{**GOOD_PLAN["launches"][0], "kernel": kernel}]}


def test_replay_with_more_than_was_recorded_says_what_it_can_do(tmp_path, capsys, recorded_db):
    code, _, err = cli(
        capsys, "replay", "1", "--rounds", "5", "--candidates", "4", "--db", str(recorded_db), "--compile-only"
    )
    line = one_line(err)
    assert code == 2 and "recorded replies for 2 round(s) of 1 candidate(s)" in line
    assert "--candidates 4 --rounds 5 would ask for replies that do not exist" in line
    assert "Replay with at most --candidates 1 --rounds 2" in line
    assert "cuda-llm run --resume 1 --headless --candidates 4 --rounds 5" in line


def test_more_candidates_for_a_finished_session_take_a_round_to_run_in(tmp_path, capsys, recorded_db):
    code, _, err = cli(capsys, "replay", "1", "--candidates", "3", "--db", str(recorded_db), "--compile-only")
    line = one_line(err)
    # Both rounds are done: --candidates 3 alone would resume nothing (and quietly save N=3).
    assert code == 2 and "cuda-llm run --resume 1 --headless --candidates 3 --rounds 3" in line
    code, _, err = cli(
        capsys, "run", "--resume", "1", "--headless", "--candidates", "3", "--db", str(recorded_db), "--compile-only"
    )
    assert code == 2 and "session 1 has done its 2 round(s): nothing to resume with new settings; add --rounds 3" in (
        one_line(err)
    )
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(recorded_db)
    try:
        assert store.session(1).settings.candidates == 1, "the refused resume saved nothing"
    finally:
        store.close()


def test_a_replay_that_runs_out_of_replies_points_to_a_model_not_to_itself(tmp_path, capsys, llm_server):
    import asyncio

    llm_server.default = chunked(reply())
    # Patience 1 ends the recording after round 1 (compile-only never improves); without it the
    # replay asks for round 2, which was never recorded.
    asyncio.run(
        run_session(options(tmp_path, "ollama:loop-model", candidates=1, rounds=3, patience=1), host=llm_server.url)
    )
    db = str(tmp_path / "sessions.db")
    code, out, _ = cli(capsys, "replay", "1", "--patience", "0", "--db", db, "--compile-only")
    assert code == 3 and "session 2: paused" in out
    assert "a replay repeats the recorded requests only" in out
    assert f"cuda-llm run --resume 2 --headless --model ollama:loop-model --db {db}" in out
    assert "continue with: cuda-llm run --resume 2 --headless\n" not in out


# ---- model servers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ollama", "openai"])
async def test_an_unknown_model_lists_what_the_server_has(tmp_path, llm_server, kind):
    from cuda_llm.engine.core.errors import UserError

    llm_server.default = Reply.not_found()
    where = {"host": llm_server.url} if kind == "ollama" else {"base_url": llm_server.openai_url}
    with pytest.raises(UserError) as refused:  # before a session is recorded (engine/llm/preflight.py)
        await run_session(options(tmp_path, f"{kind}:lop-model", candidates=1, rounds=1), **where)
    assert "the server has: loop-model, qwen2.5-coder:32b; did you mean 'loop-model'?" in str(refused.value)
    assert "\n" not in str(refused.value) and not llm_server.chat_requests


def test_doctor_lists_the_models_of_both_servers(tmp_path, capsys, llm_server):
    _code, out, _ = cli(capsys, "doctor", "--host", llm_server.url, "--base-url", llm_server.openai_url, "--json")
    checks = {c["name"]: c for c in json.loads(out)}
    assert checks["ollama"]["detail"].endswith("2 model(s): loop-model, qwen2.5-coder:32b")
    assert checks["openai"]["detail"].endswith("2 model(s): loop-model, qwen2.5-coder:32b")


# ---- eval's library line ------------------------------------------------------------------------------


async def _judged_on_the_fake_gpu(library_us: float | None, task: str = "vector_add"):
    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.judge.judgement import Candidate
    from cuda_llm.engine.task import TaskLibrary

    env = fake_environment(FakeGpu(library_us=library_us))
    try:
        judge = env.judge(TaskLibrary().get(task), Settings())
        plan = judge.task.baseline_plan
        kernel = plan.launches[0].kernel
        source = judge.task.baseline_source.replace(f"{kernel}(", f"{kernel}_us40(")
        first = dataclasses.replace(plan.launches[0], kernel=f"{kernel}_us40")
        renamed = dataclasses.replace(plan, launches=(first, *plan.launches[1:]))
        j = await judge.judge(Candidate("r1-1", source, renamed, origin="user"))
        return j, await judge.library()
    finally:
        await env.close()


async def test_eval_shows_the_library_beside_the_candidate():
    j, lib = await _judged_on_the_fake_gpu(library_us=50)
    text = eval_cmd.render(j, "Fake H100 (sm_90)", lib)
    line = next(x for x in text.splitlines() if x.startswith("library:"))
    assert line == (
        "library:  CuPy elementwise add: 50.0 us (IQR 1.0), 2.00x the baseline; this candidate is 1.25x of library"
    )
    record = library_record(lib, j.timing.median_us)
    assert record["median_us"] == 50 and record["of_library"] == pytest.approx(1.25) and record["note"] is None


@pytest.mark.skipif(cupy_missing() is None, reason="CuPy is installed here: the library has a figure")
async def test_eval_without_the_library_extra_says_why_there_is_no_figure():
    j, lib = await _judged_on_the_fake_gpu(library_us=None)
    text = eval_cmd.render(j, "Fake H100 (sm_90)", lib)
    assert j.status == "correct" and "profile:  40.00 us" in text, "the rest as before"
    assert f"library:  CuPy elementwise add: not timed: CuPy is not installed ({INSTALL_HINT}" in text
    j, lib = await _judged_on_the_fake_gpu(library_us=50, task="layernorm")
    assert "library:  none: task 'layernorm' has no vendor-library reference" in eval_cmd.render(j, "x", lib)


def test_a_headless_run_says_what_the_engine_waits_for_on_stderr(monkeypatch, tmp_path, capsys):
    """A Ray cluster's wait for GPUs is said as it begins, before the session's events flow: the CLI
    gives the engine a progress callable that prints on stderr, then the refusal is one line."""
    from cuda_llm.engine.cluster.connection import ClusterError
    from cuda_llm.engine.fsr import session as session_module

    line = "Ray counts 0 of the 1 GPU of the cluster at 127.0.0.1:6379 free: waiting up to 120 s for 1 more"

    async def opening(options, control, environment=None, progress=None):
        assert progress is not None, "the CLI gives the engine no way to say what it waits for"
        progress(line)
        raise ClusterError("every GPU of the Ray cluster at 127.0.0.1:6379 (1) is held by other jobs")

    monkeypatch.setattr(session_module, "open_session", opening)
    argv = ["run", "vector_add", "--model", "manual", "--headless", "--db", str(tmp_path / "s.db")]
    code = main([*argv, "--cluster", "127.0.0.1:6379"])
    err = capsys.readouterr().err
    assert err.startswith(f"cuda-llm: {line}\n"), err
    assert "is held by other jobs" in err and "Traceback" not in err, err
    assert code == 2
