"""fast_p against PyTorch eager, end to end with a scripted model: every example module of
examples/pytorch/ imported with `cuda-llm tasks import`, then `cuda-llm bench` over them against a
loopback Ollama server that serves the hand-written replies of examples/pytorch/replies/, then one
headless `cuda-llm run` session on scale_add_relu. Prints everything; asserts nothing
(tests/torchtask/test_gpu_import.py checks what must hold).

What the model says (one candidate per request, one round, one repair):

    elementwise_gelu   round 1: a kernel that misses the tail (wrong); its repair: the correct one
    row_sum            round 1: a kernel that sums in fp16 (wrong);    its repair: the correct one
    every other task   round 1: its correct hand-written reply

On a GPU every row is correct, the summary prints fast_0 = 1.00 and fast_1/fast_2 and the geometric
mean speedup over eager as this GPU gives them (the fused scale_add_relu is several times faster
than eager's three kernels; the plain tiled matmul is slower than cuBLAS). The headless session
on scale_add_relu ends with a best faster than eager.

    python -m bench.torch_fastp --out DIR [--compile-only]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from llm_servers import LoopbackLLMServer, RecordedRequest, Reply  # noqa: E402

EXAMPLES = ROOT / "examples" / "pytorch"
REPLIES = EXAMPLES / "replies"
MODEL = "ollama:handwritten"
LOOP_ARGS = ("-N", "1", "-D", "1", "-R", "1", "-K", "0", "--target-roofline", "0", "--temperature", "0")
# The task of the headless loop session: a fused kernel against eager's separate kernels.
LOOP_TASK = "scale_add_relu"
# Tasks whose first reply is broken, and which broken reply: the repair sends the correct one.
FIRST_BROKEN = {"elementwise_gelu": "elementwise_gelu.tail.md", "row_sum": "row_sum.fp16.md"}

_TASK = re.compile(r"^# Task: (\w+)", re.M)
REPAIR_MARK = "# None of the last candidates was correct"


def tasks() -> list[str]:
    return sorted(p.stem for p in EXAMPLES.glob("*.py"))


def responder():
    def answer(request: RecordedRequest) -> Reply:
        prompt = request.messages[-1]["content"]
        found = next((m for msg in reversed(request.messages) if (m := _TASK.search(str(msg["content"])))), None)
        task = found.group(1) if found else ""
        repair = REPAIR_MARK in prompt
        name = FIRST_BROKEN[task] if task in FIRST_BROKEN and not repair else f"{task}.md"
        path = REPLIES / name
        if not path.is_file():
            return Reply.status_error(400, f"the script has no reply for {task!r}")
        text = path.read_text(encoding="utf-8")
        return Reply.text(*[text[i : i + 200] for i in range(0, len(text), 200)])

    return answer


def cli(*argv: str) -> tuple[int, str]:
    """`cuda-llm ARGV` in this process (the loopback server runs in it too): exit code and stdout."""
    from cuda_llm.app.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def run(out: Path, compile_only: bool) -> dict[str, tuple[int, str]]:
    """Every step with its exit code and output: import, bench, the headless run."""
    root = out / "tasks"
    saved = os.environ.get("CUDA_LLM_TASK_PATH")
    os.environ["CUDA_LLM_TASK_PATH"] = str(root)  # bench and run find the imported tasks by name
    try:
        return _steps(out, root, compile_only)
    finally:
        if saved is None:
            os.environ.pop("CUDA_LLM_TASK_PATH", None)
        else:
            os.environ["CUDA_LLM_TASK_PATH"] = saved


def _steps(out: Path, root: Path, compile_only: bool) -> dict[str, tuple[int, str]]:
    db = out / "sessions.db"
    steps: dict[str, tuple[int, str]] = {}
    steps["import"] = cli("tasks", "import", str(EXAMPLES), "--dir", str(root))
    device = ["--compile-only"] if compile_only else []
    with LoopbackLLMServer(models=("handwritten",)) as server:
        server.default = responder()
        bench = ["bench", "--model", MODEL, "--host", server.url, "--tasks", *tasks(), *LOOP_ARGS]
        steps["bench"] = cli(*bench, "--db", str(db), "--out", str(out / "bench"), *device)
        loop = ["run", LOOP_TASK, "--headless", "--json", "--model", MODEL, "--host", server.url, *LOOP_ARGS]
        steps["run"] = cli(*loop, "--db", str(db), *device)
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for the imported tasks, the database and bench.json")
    parser.add_argument("--compile-only", action="store_true", help="no GPU: every row is 'not validated'")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"# fast_p against PyTorch eager, hand-written replies: {platform.node()}, Python {platform.python_version()}"
    )
    for name, (code, text) in run(out, args.compile_only).items():
        print(f"\n## cuda-llm {name} (exit code {code})\n")
        print(text.rstrip()[-6000:] if name == "run" else text.rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
