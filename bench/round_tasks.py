"""Rounds of 8 correct candidates over five tasks of different weight (vector_add, softmax, matmul,
conv2d, layernorm), judged on 1, 2 and 4 GPUs of one host, and with --cluster through the Ray path
on the same GPUs: what a session's rounds look like, beside bench/round_gpus.py's one light task.

Each task's 8 candidates are its own baseline kernel at 8 launch shapes (block sizes, and tile shapes
for matmul), as a model's replies to one prompt differ: all correct, of different speeds. Median of
--repeats rounds per task after a warm-up round (which computes the reference outputs). Prints the
device, each task's times and ratios, the five rounds summed, and where the workers spent their
time; --json writes it all.

    python -m bench.round_tasks [--gpus 1,2,4] [--repeats 2] [--cluster] [--programs] [--json F] [--md F]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from bench.round_gpus import as_json, candidates, gpu_counts, markdown, ratios, report, run_all
from cuda_llm.engine.judge.judgement import Candidate
from cuda_llm.engine.task import TaskLibrary
from cuda_llm.engine.task.plan import parse_plan

TASKS = ("vector_add", "softmax", "matmul", "conv2d", "layernorm")
# One-dimensional launches: the block sizes of the 8 candidates (the row tasks run a thread per row,
# so larger blocks leave SMs idle: the slow candidates of the round).
BLOCKS_1D = (32, 64, 96, 128, 160, 192, 224, 256)
# matmul's 2-D tiles (x, y).
TILES_2D = ((8, 8), (16, 8), (8, 16), (16, 16), (32, 8), (8, 32), (32, 16), (32, 32))
_CDIV = re.compile(r"^cdiv\((.+), (\d+)\)$")


def _plan_json(task) -> dict[str, Any]:
    return json.loads((task.folder / "baseline.json").read_text())


def variants(name: str) -> list[Candidate]:
    """The task's baseline kernel at 8 launch shapes (vector_add: bench.round_gpus's round)."""
    if name == "vector_add":
        return candidates()
    task = TaskLibrary().get(name)
    base = _plan_json(task)
    (launch,) = base["launches"]
    out = []
    if len(launch["block"]) == 1:
        (grid,) = launch["grid"]
        extent = _CDIV.match(grid)
        assert extent, f"{name}: expected a grid of cdiv(X, block), got {grid!r}"
        for b in BLOCKS_1D:
            shaped = {**launch, "grid": [f"cdiv({extent.group(1)}, {b})"], "block": [b]}
            out.append(Candidate(f"{name}_b{b}", task.baseline_source, parse_plan({"launches": [shaped]})))
    else:
        gx, gy = (_CDIV.match(g) for g in launch["grid"])
        assert gx and gy, f"{name}: expected cdiv grids, got {launch['grid']!r}"
        for x, y in TILES_2D:
            shaped = {**launch, "grid": [f"cdiv({gx.group(1)}, {x})", f"cdiv({gy.group(1)}, {y})"], "block": [x, y]}
            out.append(Candidate(f"{name}_{x}x{y}", task.baseline_source, parse_plan({"launches": [shaped]})))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--gpus", default="1,2,4", help="GPU counts to compare, e.g. 1,2 (default 1,2,4)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--cluster", action="store_true", help="also through the Ray path: a local head, one actor per GPU")
    p.add_argument("--json")
    p.add_argument("--md", help="also write the figures as a markdown table")
    p.add_argument("--programs", action="store_true", help="also how each candidate's sampling stopped")
    args = p.parse_args(argv)
    tasks = [t for t in args.tasks.split(",") if t]
    counts = gpu_counts(args.gpus)
    runs = run_all({t: variants(t) for t in tasks}, counts, args.repeats, args.cluster)
    for t in tasks:
        report(runs, t, args.programs)
    total = ratios(runs, None)
    print(f"the {len(tasks)} rounds summed: " + ", ".join(f"{k} {v:.2f}x" for k, v in total.items()))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(as_json(runs, tasks), fh, indent=2)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(markdown(runs, tasks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
