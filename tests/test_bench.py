"""`cuda-llm bench`: the paper's table a researcher can cite and reproduce. Against the loopback model
server (the real ollama client on the wire), compile-only with the real compiler, and on the fake GPU
runner for the validated columns and the vendor library's."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest
from fakes.fake_gpu import FakeGpu, fake_environment

from bench import paper_table
from cuda_llm.app.cli.bench_cmd import load_bench, request_from_args, run_bench
from cuda_llm.app.cli.bench_compare import compare, compare_markdown
from cuda_llm.app.cli.bench_table import BenchRow, markdown, summarize
from cuda_llm.app.cli.main import main, parse
from cuda_llm.engine.gpu.library import INSTALL_HINT, cupy_missing
from cuda_llm.engine.task.library import builtin_tasks_dir, user_tasks_dir
from cuda_llm.engine.task.scaffold import scaffold_task

ROOT = Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def table_rows(text: str) -> dict[str, list[str]]:
    """The Markdown table's rows by task."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| task"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0]] = cells
    return rows


# ---- compile-only: nothing is validated, and the table says so ------------------------------------


@pytest.fixture(scope="module")
def compile_only_run(tmp_path_factory):
    """The held-out script of bench/paper_table.py run compile-only: bench, rerun, compare, export, eval."""
    out = tmp_path_factory.mktemp("paper")
    steps = paper_table.run(out, paper_table.TASKS, compile_only=True)
    return out, steps


def test_compile_only_says_not_validated_and_never_correct(compile_only_run):
    out, steps = compile_only_run
    code, text = steps["bench"]
    assert code == 0
    assert "compile-only for sm_90 (no GPU): not validated" in text
    assert "on this GPU" not in text, "no claim about a GPU that did not run anything"
    rows = table_rows(text)
    assert set(rows) == set(paper_table.TASKS)
    for cells in rows.values():
        correct = cells[8]
        assert correct.startswith("not validated (") and "yes" not in correct
        assert cells[2] == cells[3] == "-", "no latency or speedup without a GPU"
        assert cells[6] == cells[7] == "-", "no roofline share, achievable or physical, without a GPU"
        assert cells[9] == "- (not validated)"
    assert "No speedups: compile-only (not validated)" in text
    nvrtc = json.loads((out / "first" / "bench.json").read_text())["rows"][0]["environment"]["nvrtc"]
    assert f"kernels were compiled (NVRTC {nvrtc}) and bound, never run or timed" in text, "bench.json's NVRTC"
    assert "no roofline stop, temperature 0.0, seed 7, max tokens " in text and "None" not in text
    assert "library: no figure for dot_product, reverse_array, matrix_copy: compile-only: no GPU to time it on" in text
    doc = json.loads((out / "first" / "bench.json").read_text())
    assert doc["validated"] is False and all(r["validated"] is False for r in doc["rows"])
    assert doc["summary"]["improved"]["value"] is None and doc["summary"]["correct"] == 0


def test_bench_json_carries_what_reproduces_each_row(compile_only_run):
    from cuda_llm import __version__

    out, _steps = compile_only_run
    doc = json.loads((out / "first" / "bench.json").read_text())
    assert doc["command"][:2] == ["cuda-llm", "bench"] and "--seed" in doc["command"]
    request = doc["request"]
    assert request["model"] == paper_table.MODEL and request["tasks"] == list(paper_table.TASKS)
    assert request["host"].startswith("http://127.0.0.1:") and request["compile_only"] is True
    for row in doc["rows"]:
        s = row["settings"]
        assert (s["candidates"], s["rounds"], s["repairs"], s["patience"], s["target_roofline"]) == (
            1,
            2,
            1,
            None,
            None,
        )
        assert s["generate"]["temperature"] == 0.0 and s["generate"]["seed"] == 7
        env = row["environment"]
        assert env["cuda_llm"] == __version__ and re.fullmatch(r"\d+\.\d+", env["nvrtc"])
        assert env["arch"] == "sm_90" and env["compile_only"] is True and env["gpu"] is None
        assert env["host"]["machine"] and env["python"] and env["packages"]["numpy"]
        assert row["model"] == paper_table.MODEL and row["server"] == request["host"]
        assert row["best_round"] is None and row["rounds_run"] == 2


def test_a_rerun_and_compare_reproduce_the_table(compile_only_run):
    out, steps = compile_only_run
    first = json.loads((out / "first" / "bench.json").read_text())
    again = json.loads((out / "again" / "bench.json").read_text())
    keep = (
        "task",
        "validated",
        "candidates",
        "compiled",
        "correct",
        "best_label",
        "best_round",
        "rounds_run",
        "tokens",
    )
    assert [{k: r[k] for k in keep} for r in first["rows"]] == [{k: r[k] for k in keep} for r in again["rows"]]
    assert {r["session"] for r in first["rows"]}.isdisjoint(r["session"] for r in again["rows"]), "new sessions"
    assert again["request"] == first["request"] and again["settings"] == first["settings"]
    code, text = steps["rerun"]
    assert code == 0 and "against this run" in text and "- settings: the same" in text
    code, text = steps["compare"]
    assert code == 0 and "- settings: the same" in text and "- environment: the same" in text
    compared = table_rows(text)
    assert set(compared) == set(paper_table.TASKS)


def test_export_of_a_compile_only_session_is_judged_again_by_eval(compile_only_run):
    out, steps = compile_only_run
    code, text = steps["export"]
    assert code == 0 and "nothing was validated, so this is the last candidate that compiled" in text
    assert {p.name for p in (out / "export").iterdir()} == {"kernel.cu", "plan.json", "report.md", "report.json"}
    report = json.loads((out / "export" / "report.json").read_text())
    assert report["compile_only"] and report["exported"]["label"] == "r2-1"
    assert report["environment"]["arch"] == "sm_90" and report["settings"]["rounds"] == 2
    assert all(h["source"] for h in report["history"] if h["status"] != "format_error")
    exported = next(h for h in report["history"] if h["label"] == "r2-1")
    assert (out / "export" / "kernel.cu").read_text() == exported["source"]
    code, text = steps["eval"]
    assert code == 0 and "candidate r2-1 on no GPU" in text and "verdict:  compiled" in text
    assert "library:  cuBLAS sdot (through CuPy): not timed: compile-only: no GPU to time it on" in text


# ---- on the fake GPU: validated rows, the round that found the best, the library -----------------


def marked(task: str, marker: str) -> str:
    """The task's baseline as a reply, its kernel renamed with the fake GPU's marker (_us40, _wrong)."""
    text = paper_table.baseline_reply(task)
    return re.sub(rf"\b{task}\b(?=\(|\")", f"{task}{marker}", text)


FAKE_SCRIPT = {
    # round 1 finds 40 us; round 2's 45 us does not beat it
    "vector_add": {"1": marked("vector_add", "_us40"), "2": marked("vector_add", "_us45")},
    # round 1 is wrong, its repair finds 60 us, round 2's 70 us does not beat it
    "reverse_array": {
        "1": marked("reverse_array", "_wrong"),
        "1-repair": marked("reverse_array", "_us60"),
        "2": marked("reverse_array", "_us70"),
    },
    # as fast as the baseline twice: nothing beats it
    "leaky_relu": {"1": marked("leaky_relu", "_us100"), "2": marked("leaky_relu", "_us100")},
}


async def fake_gpu_bench(tmp_path, llm_server, library_us: float | None):
    llm_server.default = paper_table.responder(FAKE_SCRIPT)
    llm_server.models = (*llm_server.models, "heldout")  # a session starts only for a model the server has
    args = parse(
        [
            "bench",
            "--model",
            "ollama:heldout",
            "--host",
            llm_server.url,
            "--tasks",
            *FAKE_SCRIPT,
            *paper_table.LOOP_ARGS,
            "--db",
            str(tmp_path / "s.db"),
        ]
    )
    from cuda_llm.app.cli.bench_cmd import document

    request = request_from_args(args)
    rows = await run_bench(request, lambda: fake_environment(FakeGpu(library_us=library_us)))
    return document(rows, request, ["cuda-llm", *args.argv])


async def test_on_a_gpu_the_table_names_the_round_the_candidate_and_the_library(tmp_path, llm_server):
    doc = await fake_gpu_bench(tmp_path, llm_server, library_us=50)
    rows = {r["task"]: BenchRow.from_json(r) for r in doc["rows"]}
    va, rev, relu = rows["vector_add"], rows["reverse_array"], rows["leaky_relu"]
    assert all(r.validated for r in rows.values())
    assert (va.best_label, va.best_round, va.speedup, va.correct, va.candidates) == ("r1-1", 1, 2.5, 2, 2)
    assert (rev.best_label, rev.best_round, rev.correct, rev.candidates) == ("r1-fix1-1", 1, 2, 3)
    assert rev.speedup == pytest.approx(100 / 60)
    assert (relu.best_label, relu.best_round, relu.speedup, relu.improved) == ("baseline", None, 1.0, False)
    assert va.library["median_us"] == 50 and va.of_library == pytest.approx(50 / 40)
    assert rev.of_library == pytest.approx(50 / 60)
    assert relu.library["name"] is None and "no vendor-library reference" in relu.library["note"]

    text = markdown(doc)
    cells = table_rows(text)
    assert cells["vector_add"][1:10] == [
        "100.0",
        "40.0",
        "2.50x",
        "50.0",
        "1.25x",
        "50%",
        f"{va.physical_share:.0%}",
        "yes (2 of 2)",
        "r1-1 (round 1)",
    ]
    assert 0 < va.physical_share < 1
    header = next(line for line in text.splitlines() if line.startswith("| task"))
    assert "| roofline |" not in header and "| achievable roofline | physical limit |" in header, "each named"
    assert "achievable roofline is the best's share of the achievable roofline" in text
    assert "physical limit its share of the physical limit" in text
    assert cells["reverse_array"][8:10] == ["yes (2 of 3)", "r1-fix1-1 (round 1)"]
    assert cells["leaky_relu"][3:10] == ["1.00x", "none", "-", "-", "-", "yes (2 of 2)", "baseline (nothing beat it)"]
    improved, overall = math.sqrt(2.5 * 100 / 60), (2.5 * 100 / 60) ** (1 / 3)
    assert f"geometric mean speedup over the tasks that improved (2): {improved:.2f}x" in text
    assert (
        "geometric mean speedup over every validated task (a task with no improvement counts as 1.00x) (3): "
        f"{overall:.2f}x" in text
    )
    assert "correct on 3 of 3 task(s)" in text
    assert "Fake H100 (sm_90, max SM clock 1980 MHz), driver 13.0, NVRTC 13.0" in text
    env = doc["environment"]
    assert env["gpu"]["name"] == "Fake H100" and env["driver"] == "13.0" and env["peaks"]["bandwidth"] == 20e12
    assert va.sm_clock_mhz == 1980.0


@pytest.mark.skipif(cupy_missing() is None, reason="CuPy is installed here: the library column has figures")
async def test_without_the_library_extra_the_column_is_empty_and_says_why(tmp_path, llm_server):
    doc = await fake_gpu_bench(tmp_path, llm_server, library_us=None)
    text = markdown(doc)
    cells = table_rows(text)
    assert cells["vector_add"][4:6] == ["-", "-"] and cells["vector_add"][2] == "40.0", "the rest works as before"
    assert f"library: no figure for vector_add, reverse_array: CuPy is not installed ({INSTALL_HINT}" in text
    row = next(r for r in doc["rows"] if r["task"] == "vector_add")
    assert row["library"]["median_us"] is None and INSTALL_HINT in row["library"]["note"]
    assert row["library"]["name"] and "CuPy" in row["library"]["name"]


def test_the_header_says_which_sampling_settings_were_left_to_the_server_and_names_the_roofline():
    from cuda_llm.app.cli.bench_table import settings_text

    unset = settings_text({"candidates": 4, "rounds": 5, "repairs": 3, "patience": 3, "target_roofline": 0.9})
    assert unset == (
        "N=4 D=5 R=3 K=3, stop at 0.9 of the achievable roofline, temperature server default, "
        "seed server default, max tokens server default"
    )
    given = settings_text({"target_roofline": None, "generate": {"temperature": 0.0, "seed": 0, "max_tokens": 512}})
    assert "no roofline stop, temperature 0.0, seed 0, max tokens 512" in given, "0 is a value, not unset"


def test_suspect_and_compiled_candidates_are_not_correct():
    row = BenchRow("t", 1, "m", "finished", validated=True, candidates=3, compiled=3, correct=0, suspect=2)
    assert row.is_correct is False
    from cuda_llm.app.cli.bench_table import correct_cell

    assert correct_cell(row) == "no (0 of 3), 2 suspect"
    assert correct_cell(BenchRow("t", 1, "m", "finished", validated=False, candidates=2, compiled=2)).startswith(
        "not validated"
    )


def test_both_geometric_means_are_named_and_differ_when_a_task_did_not_improve():
    rows = [
        BenchRow("a", 1, "m", "finished", True, speedup=4.0, best_label="r1-1", correct=1),
        BenchRow("b", 2, "m", "finished", True, speedup=1.0, best_label="baseline", correct=0),
    ]
    s = summarize(rows)
    assert s.improved.value == pytest.approx(4.0) and s.improved.tasks == 1
    assert s.overall.value == pytest.approx(2.0) and s.overall.tasks == 2
    assert "improved" in s.improved.name and "counts as 1.00x" in s.overall.name


def _row_on(task: str, gpu: str, speedup: float, node: str | None = None) -> BenchRow:
    env = {"gpu": {"name": gpu}, "arch": "sm_90" if "H100" in gpu else "sm_80", "driver": "13.0", "nvrtc": "13.0"}
    if node is not None:
        env["cluster"] = {"nodes": [node], "gpus": [{"node": node, "node_id": f"id-{node}", "gpu": gpu, "index": 0}]}
    label = "baseline" if speedup == 1.0 else "r1-1"
    return BenchRow(
        task,
        1,
        "m",
        "finished",
        True,
        candidates=1,
        compiled=1,
        correct=1,
        baseline_us=100.0,
        best_us=100.0 / speedup,
        speedup=speedup,
        best_label=label,
        best_round=1,
        environment=env,
    )


def test_rows_on_two_gpu_models_name_theirs_and_are_never_averaged_together():
    from cuda_llm.app.cli.bench_table import bench_document

    rows = [
        _row_on("a", "NVIDIA H100", 4.0, "node-1"),
        _row_on("b", "NVIDIA A100", 2.0, "node-2"),
        _row_on("c", "NVIDIA H100", 1.0, "node-3"),
    ]
    doc = bench_document(rows, {"model": "m", "tasks": ["a", "b", "c"]}, "now", "0", ["cuda-llm", "bench"])
    assert doc["summary"] is None, "no summary across GPU models"
    assert [(s["gpu"], s["improved"]["value"], s["overall"]["value"]) for s in doc["summaries"]] == [
        ("NVIDIA A100", 2.0, 2.0),
        ("NVIDIA H100", 4.0, 2.0),
    ]
    assert doc["device"] == "NVIDIA A100, NVIDIA H100"
    text = markdown(doc)
    assert "| task | GPU | baseline (us) |" in text
    cells = table_rows(text)
    assert [cells[t][1] for t in "abc"] == ["NVIDIA H100", "NVIDIA A100", "NVIDIA H100"]
    assert cells["a"][4] == "4.00x" and cells["b"][10] == "r1-1 (round 1)"
    assert "2 GPU models on 3 node(s) of a Ray cluster: NVIDIA A100 (sm_80), NVIDIA H100 (sm_90)" in text
    assert "on the row's GPU" in text and "geometric means are per GPU model" in text
    assert "- on NVIDIA H100 (2 task(s)):" in text and "- on NVIDIA A100 (1 task(s)):" in text
    assert "  - geometric mean speedup over the tasks that improved (1): 4.00x" in text
    assert "  - geometric mean speedup over the tasks that improved (1): 2.00x" in text
    assert "(2): 2.00x" in text, "H100's mean over both its tasks"
    mixed = math.sqrt(4.0 * 2.0)
    assert f"{mixed:.2f}x" not in text and "(3):" not in text, "no mean over both models"
    # One model on one machine: no GPU column, one summary, as before.
    local = [dataclasses.replace(r, environment={**r.environment, "cluster": None}) for r in rows if r.task != "b"]
    doc = bench_document(local, {"model": "m", "tasks": ["a", "c"]}, "now", "0", ["cuda-llm", "bench"])
    text = markdown(doc)
    assert "| task | baseline (us) |" in text and "on this GPU" in text and "- on NVIDIA" not in text
    assert doc["summary"]["gpu"] == "NVIDIA H100" and doc["summaries"] == [doc["summary"]]


# ---- which tasks, and two runs side by side ---------------------------------------------------------


def test_the_default_is_the_builtin_library_and_a_users_task_runs_only_when_named(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_LLM_HOME", str(tmp_path))  # this test's own user folder, not the suite's
    scaffold_task("my_own_task", user_tasks_dir())
    builtin = sorted(p.name for p in builtin_tasks_dir().iterdir() if (p / "task.toml").is_file())
    default = request_from_args(parse(["bench", "--model", "ollama:m"]))
    assert list(default.tasks) == builtin and "my_own_task" not in default.tasks
    named = request_from_args(parse(["bench", "--model", "ollama:m", "--tasks", "vector_add", "my_own_task"]))
    assert named.tasks == ("vector_add", "my_own_task")


def test_a_mistyped_task_stops_the_bench_before_any_session(tmp_path, capsys):
    code, out, err = run_cli(
        capsys, "bench", "--model", "ollama:m", "--tasks", "vector_add", "dot_prodct", "--db", str(tmp_path / "s.db")
    )
    assert code == 2 and out == ""
    assert (
        err.strip() == "cuda-llm: unknown task 'dot_prodct' (did you mean 'dot_product'?); `cuda-llm tasks` lists them"
    )
    assert not (tmp_path / "s.db").exists()


async def test_compare_puts_two_models_side_by_side(tmp_path, llm_server):
    a = await fake_gpu_bench(tmp_path / "a", llm_server, library_us=50)
    b = json.loads(json.dumps(a))
    b["model"] = "ollama:other"
    b["settings"] = {**a["settings"], "candidates": 4}
    for row in b["rows"]:
        row["best_us"] = row["best_us"] * 2 if row["task"] == "vector_add" else row["best_us"]
    cmp = compare(a, b, ("a.json", "b.json"))
    assert cmp["model_differs"] and cmp["settings_differ"] == ["candidates: 1 -> 4"]
    text = compare_markdown(cmp, a, b)
    assert "- A = a.json: ollama:heldout" in text and "- B = b.json: ollama:other" in text
    assert "- settings differ: candidates: 1 -> 4" in text
    assert table_rows(text)["vector_add"][-1] == "2.000"


def test_compare_reads_files_and_folders_and_refuses_what_is_not_a_bench(tmp_path, capsys):
    good = {
        "model": "ollama:m",
        "validated": False,
        "rows": [{"task": "t", "session": 1, "model": "m", "status": "finished", "validated": False}],
    }
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "bench.json").write_text(json.dumps(good))
    # A bench.json of the first format (before rows said whether they were validated) still reads.
    old = {
        "device": "H100",
        "model": "ollama:m",
        "rows": [
            {
                "task": "t",
                "session": 2,
                "model": "m",
                "status": "finished",
                "baseline_us": 100.0,
                "best_us": 50.0,
                "speedup": 2.0,
                "correct": True,
                "rounds": 3,
                "best_label": "r1-1",
            }
        ],
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    code, out, _ = run_cli(capsys, "bench", "--compare", str(tmp_path / "run"), str(tmp_path / "old.json"))
    assert code == 0 and "| t |" in out
    assert load_bench(str(tmp_path / "old.json"))["rows"][0]["rounds"] == 3
    (tmp_path / "junk.json").write_text("[1, 2]")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    for bad, words in (
        ("junk.json", "is not a bench.json written by `cuda-llm bench --out`"),
        ("bin.json", "is not UTF-8 text"),
        ("missing.json", "no such file"),
        ("run/..", "no such file"),
    ):
        code, out, err = run_cli(capsys, "bench", "--compare", str(tmp_path / "run"), str(tmp_path / bad))
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and words in lines[0], err


def test_rerun_needs_a_bench_json_that_holds_its_request(tmp_path, capsys):
    (tmp_path / "old.json").write_text(json.dumps({"model": "m", "rows": []}))
    code, _, err = run_cli(capsys, "bench", "--rerun", str(tmp_path / "old.json"))
    assert code == 2 and "holds no request to rerun" in err
    code, _, err = run_cli(capsys, "bench")
    assert code == 2 and "bench needs --model SPEC" in err


async def test_bench_replays_the_latest_session_per_task(tmp_path, llm_server, capsys):
    from scripted import chunked, reply
    from session_driver import options, run_session

    from cuda_llm.app.cli.bench_cmd import document

    llm_server.default = chunked(reply())
    first, _ = await run_session(options(tmp_path, "ollama:loop-model", candidates=2, rounds=1), host=llm_server.url)
    served = len(llm_server.chat_requests)
    db = str(tmp_path / "sessions.db")
    args = parse(["bench", "--model", "replay:latest", "--tasks", "vector_add", "matmul", "--compile-only", "--db", db])
    rows = await run_bench(request_from_args(args))
    assert len(llm_server.chat_requests) == served, "replay asks no model"
    assert [r.task for r in rows] == ["vector_add"], "matmul has no recorded session: skipped"
    assert rows[0].model == f"replay:{first.session_id}" and rows[0].rounds_run == 1
    assert rows[0].settings["candidates"] == 2, "the replayed session's own settings"
    text = markdown(document(rows, request_from_args(args), ["cuda-llm", *args.argv]))
    assert table_rows(text)["vector_add"][8] == "not validated (2 of 2 compiled)"
    assert "no recorded session of matmul" in capsys.readouterr().err
