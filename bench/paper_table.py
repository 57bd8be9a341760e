"""The paper's table end to end, with a scripted model: `cuda-llm bench` against a loopback Ollama
server that serves held-out replies (bench/heldout/) for three tasks, then `bench --rerun` of the
bench.json it wrote, `bench --compare` of the two, and `export` + `eval` of one session. Prints
everything; asserts nothing (tests/gpu/test_paper_table.py checks what must reproduce).

What the model says, by task and request (one candidate per request, two rounds, one repair):

    dot_product    round 1: a kernel that drops the last n % 4 products (wrong);
                   its repair: the held-out grid-stride kernel;   round 2: the baseline again
    reverse_array  round 1: the baseline again;                    round 2: the held-out float4 kernel
    matrix_copy    round 1: the held-out float4 kernel;            round 2: a kernel that does not compile

On a GPU the table should name the best as r1-fix1-1 (round 1) for dot_product (several times the
baseline), r1-1 (round 1) for matrix_copy and r2-1 (round 2) for reverse_array where their float4
kernels beat the coalesced scalar baselines by more than the noise (else "baseline"); each task has
a library column (cuBLAS sdot, CuPy, a device-to-device copy) when CuPy is installed, and says why
not otherwise. Without a GPU every row is "not validated".

    python -m bench.paper_table --out DIR [--compile-only] [--tasks ...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import platform
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from llm_servers import LoopbackLLMServer, RecordedRequest, Reply  # noqa: E402

HELDOUT = ROOT / "bench" / "heldout"
TASKS = ("dot_product", "reverse_array", "matrix_copy")
MODEL = "ollama:heldout"
# The loop settings of the run: N=1 D=2 R=1, and no early stop (patience and the roofline target
# off), so every task runs both rounds and the table shows which round found the best.
LOOP_ARGS = ("-N", "1", "-D", "2", "-R", "1", "-K", "0", "--target-roofline", "0", "--temperature", "0", "--seed", "7")

_ROUND = re.compile(r"^# Round (\d+)", re.M)
_TASK = re.compile(r"^# Task: (\w+)", re.M)
REPAIR_MARK = "# None of the last candidates was correct"


def heldout(name: str) -> str:
    return (HELDOUT / f"{name}.md").read_text()


def baseline_reply(task: str) -> str:
    """The task's own baseline, sent back as a candidate (it cannot beat itself)."""
    folder = ROOT / "tasks" / task
    source, plan = (folder / "baseline.cu").read_text(), (folder / "baseline.json").read_text()
    return f"The straightforward kernel.\n\n```cuda\n{source}\n```\n\n```json\n{plan}\n```\n"


def _dot_without_tail() -> str:
    text = heldout("dot_product_grid_stride")
    tail = "    for (int i = 4 * n4 + tid; i < n; i += stride) acc = fmaf(a[i], b[i], acc);\n"
    assert tail in text
    return text.replace(tail, "")


def _copy_that_does_not_compile() -> str:
    return heldout("matrix_copy_float4").replace("int n4 = count >> 2;", "int n4 = count >> 2 + undefined_width;")


def script() -> dict[str, dict[str, str]]:
    """Replies by task and by request: "1" (round 1), "1-repair", "2" (round 2)."""
    return {
        "dot_product": {
            "1": _dot_without_tail(),
            "1-repair": heldout("dot_product_grid_stride"),
            "2": baseline_reply("dot_product"),
        },
        "reverse_array": {"1": baseline_reply("reverse_array"), "2": heldout("reverse_array_float4")},
        "matrix_copy": {"1": heldout("matrix_copy_float4"), "2": _copy_that_does_not_compile()},
    }


def responder(replies: dict[str, dict[str, str]]):
    """The loopback server's answer to any chat request: the reply for the task, round and repair
    that the prompt names."""

    def answer(request: RecordedRequest) -> Reply:
        prompt = request.messages[-1]["content"]
        task = _TASK.search(prompt)
        found = _ROUND.search(prompt)
        key = (found.group(1) if found else "1") + ("-repair" if REPAIR_MARK in prompt else "")
        by_task = replies.get(task.group(1) if task else "", {})
        text = by_task.get(key) or by_task.get(key.split("-")[0])
        if text is None:
            return Reply.status_error(400, f"the script has no reply for {task and task.group(1)} {key}")
        return Reply.text(*[text[i : i + 200] for i in range(0, len(text), 200)])

    return answer


def bench_args(url: str, db: Path, out: Path, tasks: tuple[str, ...], compile_only: bool) -> list[str]:
    args = ["bench", "--model", MODEL, "--host", url, "--tasks", *tasks, *LOOP_ARGS, "--db", str(db)]
    args += ["--out", str(out)]
    return args + (["--compile-only"] if compile_only else [])


def cli(*argv: str) -> tuple[int, str]:
    """`cuda-llm ARGV` in this process (the loopback server runs in it too): exit code and stdout."""
    from cuda_llm.app.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def run(
    out: Path, tasks: tuple[str, ...], compile_only: bool, server: LoopbackLLMServer | None = None
) -> dict[str, tuple[int, str]]:
    """Every step, with its exit code and output: first run, rerun, compare, export, eval. `server`:
    a loopback server to use (the tests' fixture), else one of its own for the run."""
    import json

    db = out / "sessions.db"
    steps: dict[str, tuple[int, str]] = {}
    with contextlib.ExitStack() as stack:
        if server is None:
            server = stack.enter_context(LoopbackLLMServer(models=("heldout",)))
        server.default = responder(script())
        steps["bench"] = cli(*bench_args(server.url, db, out / "first", tasks, compile_only))
        rerun = ["bench", "--rerun", str(out / "first" / "bench.json"), "--db", str(db), "--out", str(out / "again")]
        steps["rerun"] = cli(*rerun)
    steps["compare"] = cli("bench", "--compare", str(out / "first"), str(out / "again"))
    first = json.loads((out / "first" / "bench.json").read_text())
    row = next((r for r in first["rows"] if r["task"] == tasks[0]), None)
    if row is not None:
        steps["export"] = cli("export", str(row["session"]), "--db", str(db), "--out", str(out / "export"))
        judged = ["eval", tasks[0], str(out / "export")] + (["--compile-only"] if compile_only else [])
        steps["eval"] = cli(*judged)
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for the database, bench.json files and the export")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--compile-only", action="store_true", help="no GPU: every row is 'not validated'")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"# paper table with held-out replies: {platform.node()}, Python {platform.python_version()}")
    for name, (code, text) in run(out, tuple(args.tasks), args.compile_only).items():
        print(f"\n## cuda-llm {name} (exit code {code})\n")
        print(text.rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
