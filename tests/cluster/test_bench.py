"""`bench --cluster`: three tasks side by side on a real local Ray cluster of three (fake) GPUs give
the same table as the same bench on one machine, each task's session on a GPU of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fakes.fake_gpu import FakeGpu, FakeGpuFactory, fake_environment
from llm_servers import RecordedRequest, Reply
from scripted import chunked, reply

from cuda_llm.engine.cli.bench_cmd import _bench, bench_task, markdown
from cuda_llm.engine.cli.main import parse
from cuda_llm.engine.cluster.bench import bench_on_cluster
from cuda_llm.engine.cluster.settings import ClusterSettings
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


def by_task(request: RecordedRequest) -> Reply:
    prompt = "\n".join(str(m.get("content", "")) for m in request.messages)
    task = re.search(r"^# Task: (\w+)", prompt, re.MULTILINE)
    return chunked(faster_baseline(task.group(1)))


def table(rows, device: str) -> list[str]:
    """The table's rows and summary (the title names the machine, the next line the date)."""
    return markdown(rows, device, "ollama:loop-model").splitlines()[3:]


async def test_bench_on_the_cluster_gives_the_same_table_with_a_gpu_per_task(tmp_path, llm_server, ray_cluster):
    llm_server.default = by_task
    common = ["bench", "--model", "ollama:loop-model", "--host", llm_server.url, "--tasks", *TASKS]
    common += ["--rounds", "1", "--candidates", "2", "--patience", "0", "--target-roofline", "0"]
    here = parse([*common, "--db", str(tmp_path / "here.db")])
    rows_here, device_here = await _bench(here, environment=lambda: fake_environment(FakeGpu(delay_s=0.3)))

    there = parse([*common, "--db", str(tmp_path / "there.db"), "--cluster", ray_cluster.address])
    rows_there, device_there = await bench_on_cluster(
        there,
        there.tasks,
        bench_task,
        worker_factory=FakeGpuFactory(delay_s=0.3),
        cluster=ClusterSettings(remote_compilers=0),
    )
    assert [r["task"] for r in rows_there] == TASKS
    assert all(r["correct"] and r["speedup"] == 100.0 / 40.0 for r in rows_there)
    assert table(rows_there, device_there) == table(rows_here, device_here)
    assert "| Fake H100 |" in "\n".join(table(rows_there, device_there)), "each row names its GPU model"
    assert device_there.startswith("3 x Fake H100 on 3 node(s)")

    store = SessionStore(tmp_path / "there.db")
    try:
        gpus = []
        for row in rows_there:
            used = {c.judgement.ran_on.gpu_uuid for c in store.candidates(row["session"]) if c.judgement.ran_on}
            assert len(used) == 1, f"{row['task']} was judged on one GPU alone"
            gpus += used
    finally:
        store.close()
    assert len(set(gpus)) == 3, "the three tasks ran side by side, each on a GPU of its own"
