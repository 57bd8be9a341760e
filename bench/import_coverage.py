"""Import coverage: every module file of some folders through `tasks import`, one row per file
(imported as which task, or the refusal; seconds) and the totals per folder, with the causes of
refusal counted. Target (issue 42): KernelBench's levels 1-3 import but a few files, every refusal
one line, median import at most 15 s per file on the 2-core machine.

    python -m bench.import_coverage FOLDER... [--jobs 2] [--out table.md] [--dir DIR] [--gpu-memory GIB]

Each import is a child process running the module with PyTorch on the CPU; --jobs of them run at
once (default: one per two cores, each child's PyTorch uses several). The seconds of a file are its
whole import, waiting for the CPU included: say the load average beside them. The problem set's
commit is printed when a folder is inside a git work tree.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuda_llm.engine.torchtask.coverage import CoverageRow, markdown, module_files, run_coverage


def _commit(folder: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return done.stdout.strip() or None


def _torch_version() -> str:
    try:
        import torch
    except ImportError:
        return "not installed"
    return str(torch.__version__)


def header(folders: list[Path], jobs: int) -> list[str]:
    lines = [
        f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, PyTorch {_torch_version()}; {jobs} import(s) at a time",
        "load average at the start: " + " ".join(f"{x:.1f}" for x in os.getloadavg()),
    ]
    for f in folders:
        commit = _commit(f)
        lines.append(f"{f}: {len(module_files(f))} files" + (f", commit {commit}" if commit else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.import_coverage", description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs="+", type=Path, help="folders of module files (KernelBench/level1 ...)")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), help="imports at a time")
    p.add_argument("--out", type=Path, help="also write the Markdown table to this file")
    p.add_argument("--gpu-memory", type=float, metavar="GIB", help="check each problem fits this much GPU memory")
    p.add_argument("--dir", type=Path, help="keep the tasks in DIR/<folder name>/ (default: a temporary folder)")
    args = p.parse_args(argv)
    bad = [f for f in args.folders if not f.is_dir()]
    if bad:
        print(f"not a folder: {', '.join(map(str, bad))}", file=sys.stderr)
        return 2
    files = [f for folder in args.folders for f in module_files(folder)]
    head = header(args.folders, args.jobs)
    print("\n".join(head), flush=True)
    start = time.monotonic()

    def progress(row: CoverageRow) -> None:
        result = f"imported as {row.task}" if row.imported else f"refused: {row.refusal}"
        print(f"{row.folder}/{row.file}: {result} ({row.seconds:.1f} s)", flush=True)

    memory = int(args.gpu_memory * 2**30) if args.gpu_memory else None
    if args.dir:
        rows = run_coverage(files, args.dir, args.jobs, memory, progress)
    else:
        with tempfile.TemporaryDirectory(prefix="import-coverage-") as root:
            rows = run_coverage(files, Path(root), args.jobs, memory, progress)
    tail = [
        f"{len(files)} files in {time.monotonic() - start:.0f} s; load average at the end: "
        + " ".join(f"{x:.1f}" for x in os.getloadavg())
    ]
    table = markdown(rows)
    print()
    print(table)
    print("\n".join(tail))
    if args.out:
        args.out.write_text("\n".join(head + tail) + "\n\n" + table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
