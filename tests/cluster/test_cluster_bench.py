"""`bench --cluster`: three tasks side by side on a real local Ray cluster of three (fake) GPUs give
the same table as the same bench on one machine, each task's session on a GPU of its own."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

from fakes.fake_gpu import FakeGpu, FakeGpuFactory, fake_environment
from llm_servers import RecordedRequest, Reply
from ray_nodes import QUIET
from scripted import chunked, numbered_once, reply

from cuda_llm.app.cli.bench_cmd import document, request_from_args, run_bench
from cuda_llm.app.cli.bench_table import markdown
from cuda_llm.app.cli.main import parse
from cuda_llm.engine.store.sessions import SessionStore

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["vector_add", "leaky_relu", "reverse_array"]


def faster_baseline(task: str) -> str:
    """The task's own baseline, its kernels renamed so that the fake GPU times them at 40 us."""
    folder = ROOT / "tasks" / task
    source = (folder / "baseline.cu").read_text()
    plan = json.loads((folder / "baseline.json").read_text())
    for launch in plan["launches"]:
        source = re.sub(rf"\b{launch['kernel']}\b", f"{launch['kernel']}_us40", source)
        launch["kernel"] += "_us40"
    return reply(source, plan, note="The baseline, faster.")


REPLIES = itertools.count(1)


def by_task(request: RecordedRequest) -> Reply:
    """The faster baseline of the prompt's task, numbered by a comment: every candidate another
    program, so both of a round are timed (the same kernel twice would be a repeat of whichever
    arrived first, engine/fsr/repeats.py, and the table's "best found by" would depend on it)."""
    prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
    task = re.search(r"^# Task: (\w+)", prompt, re.MULTILINE)
    return chunked(numbered_once(faster_baseline(task.group(1)), next(REPLIES)))


def table(doc) -> tuple[list[str], list[dict[str, str]]]:
    """The Markdown table's header and its rows as {column: cell}."""
    lines = [line for line in markdown(doc).splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split(" | ")]
    return header, [
        dict(zip(header, (c.strip() for c in line.strip("|").split(" | ")), strict=True)) for line in lines[1:]
    ]


# What a row says about the result (the session numbers and times differ between two benches).
RESULT_COLUMNS = (
    "task",
    "baseline (us)",
    "best (us)",
    "speedup",
    "achievable roofline",
    "physical limit",
    "correct",
    "best found by",
    "rounds",
)


async def test_bench_on_the_cluster_gives_the_same_table_with_a_gpu_per_task(tmp_path, llm_server, ray_cluster, capsys):
    llm_server.default = by_task
    common = ["bench", "--model", "ollama:loop-model", "--host", llm_server.url, "--tasks", *TASKS]
    common += ["--rounds", "1", "--candidates", "2", "--patience", "0", "--target-roofline", "0"]
    here = parse([*common, "--db", str(tmp_path / "here.db")])
    request_here = request_from_args(here)
    rows_here = await run_bench(request_here, lambda: fake_environment(FakeGpu(delay_s=0.3)))

    there = parse([*common, "--db", str(tmp_path / "there.db"), "--cluster", ray_cluster.address])
    request_there = request_from_args(there)
    assert request_there.cluster == ray_cluster.address
    assert request_there.to_json() == request_here.to_json(), "where it ran is not what it ran"
    rows_there = await run_bench(
        request_there,
        worker_factory=FakeGpuFactory(delay_s=0.3),
        cluster_settings=QUIET,
    )
    assert [r.task for r in rows_there] == TASKS
    said = capsys.readouterr().err
    assert f"cuda-llm: benchmarking on 3 x Fake H100 on 3 node(s) of the Ray cluster at {ray_cluster.address}" in said
    assert all(r.correct == 2 and r.speedup == 100.0 / 40.0 for r in rows_there)
    assert [r.session for r in rows_there] == sorted(r.session for r in rows_there), "sessions in task order"

    doc_here = document(rows_here, request_here, ["cuda-llm", *here.argv])
    doc_there = document(rows_there, request_there, ["cuda-llm", *there.argv])
    header_here, cells_here = table(doc_here)
    header_there, cells_there = table(doc_there)
    assert "GPU" not in header_here and header_there == [header_here[0], "GPU", *header_here[1:]]
    assert [{c: r[c] for c in RESULT_COLUMNS} for r in cells_there] == [
        {c: r[c] for c in RESULT_COLUMNS} for r in cells_here
    ]
    assert [r["tokens"] for r in cells_there] == [r["tokens"] for r in cells_here]
    assert [r["GPU"] for r in cells_there] == ["Fake H100"] * 3, "each row names its GPU model"
    text = markdown(doc_there)
    assert "on 3 node(s) of a Ray cluster" in text and "on the row's GPU" in text
    assert "geometric mean speedup over the tasks that improved (3): 2.50x" in text, "one model: one mean"
    assert doc_there["summary"] == doc_here["summary"]

    store = SessionStore(tmp_path / "there.db")
    try:
        gpus = []
        for row in rows_there:
            used = {c.judgement.ran_on.gpu_uuid for c in store.candidates(row.session) if c.judgement.ran_on}
            assert len(used) == 1, f"{row.task} was judged on one GPU alone"
            recorded = row.environment["cluster"]["gpus"]
            assert [g["uuid"] for g in recorded] == list(used), "the row's environment names the GPU it ran on"
            assert recorded[0]["gpu"] == "Fake H100" and recorded[0]["node"] and recorded[0]["node_id"]
            assert row.environment["gpu"]["name"] == "Fake H100"
            gpus += used
    finally:
        store.close()
    assert len(set(gpus)) == 3, "the three tasks ran side by side, each on a GPU of its own"
