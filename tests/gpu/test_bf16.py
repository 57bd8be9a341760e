"""bfloat16 on the GPU: the built-in bf16 tasks judge a correct reply correct (tensor cores for the
GEMM) and a reply that accumulates in bf16 wrong, with the mismatch said in numbers. Their baselines
are judged by test_baselines.py, gemm_bf16's cuBLAS figure by test_library.py, the bf16 comparison
kernel by test_device_compare.py, and the imported bf16 modules (eager, a hand-written reply, a bf16
accumulating one) by tests/torchtask/test_gpu_import.py."""

from __future__ import annotations

import pytest
from bf16_replies import REPLIES

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("reply", sorted(REPLIES))
def test_a_bf16_task_reply_gets_its_verdict(gpu, reply):
    name, text, verdict = REPLIES[reply]
    task = gpu.task(name)
    judge = gpu.env.judge(task, gpu.settings)
    j = gpu.run(judge.judge(judge.parse(reply, text, origin="user"), profile=False))
    assert j.status == verdict, (reply, j.status, j.message)
    if verdict == "wrong":
        assert j.validation is not None and any(not c.passed for c in j.validation.cases)
        assert j.validation.mismatches, "the model is told where and by how much"
    else:
        assert max(c.worst_ratio for c in j.validation.cases) <= 1.0
    print(f"{reply}: {j.status}: {j.message}")


def test_the_bf16_tasks_in_the_bench_table_with_cublas(gpu, tmp_path):
    """`cuda-llm bench` over both bf16 tasks with a scripted model that sends the correct replies:
    both rows validated and correct, gemm_bf16 with cuBLAS's figure beside them (when CuPy is there)."""
    import json

    from llm_servers import LoopbackLLMServer, Reply

    from bench import paper_table
    from cuda_llm.engine.gpu.library import cupy_missing

    by_task = {task: text for task, text, verdict in REPLIES.values() if verdict == "correct"}

    def answer(request):
        found = paper_table._TASK.search(request.messages[-1]["content"])
        text = by_task.get(found.group(1) if found else "")
        return Reply.text(text) if text else Reply.status_error(400, "no scripted reply for this task")

    tasks = ("rmsnorm_bf16", "gemm_bf16")
    with LoopbackLLMServer(models=("heldout",)) as server:
        server.default = answer
        args = ["bench", "--model", paper_table.MODEL, "--host", server.url, "--tasks", *tasks]
        args += ["-N", "1", "-D", "1", "-R", "0", "-K", "0", "--target-roofline", "0", "--db", str(tmp_path / "s.db")]
        code, text = paper_table.cli(*args, "--out", str(tmp_path / "out"))
    print(text)
    assert code == 0, text
    rows = {r["task"]: r for r in json.loads((tmp_path / "out" / "bench.json").read_text())["rows"]}
    assert set(rows) == set(tasks)
    for task, row in rows.items():
        assert row["validated"] and row["correct"] >= 1, (task, row["status"], row["message"])
        assert f"| {task} |" in text
    lib = rows["gemm_bf16"]["library"]
    assert lib["name"] and "bf16" in lib["name"]
    if cupy_missing() is None:
        assert lib["median_us"] and lib["of_library"], lib["note"]
    assert rows["rmsnorm_bf16"]["library"]["median_us"] is None  # CuPy has no RMSNorm
