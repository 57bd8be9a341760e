"""A coverage run: every module file of some folders through `tasks import`, one row per file.

It answers "which problems of a problem set become tasks, and why not the others": each file is
imported as a user would (its own child process, the same refusals), into a folder of its own per
source folder, several at a time (each import is a child process; the threads here only wait).
"""

from __future__ import annotations

import re
import resource
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.torchtask.importer import import_module

# A cause is the refusal's first two clauses (split at ": ") once the file's name, every number and
# every name inside the module (self.bn1.weight, layer features.3) are taken out, cut to this many
# words: the detail after them (a shape, a message's tail) differs per file, the cause does not.
CAUSE_WORDS = 15


@dataclass(frozen=True)
class CoverageRow:
    folder: str  # the source folder's name (level1, ...)
    file: str  # the module file's name
    task: str | None  # the task created, or None when refused
    refusal: str | None  # the one line the user got
    seconds: float
    cpu_s: float | None = None  # the child's CPU time (user + system), known when imports run one at a time

    @property
    def imported(self) -> bool:
        return self.task is not None


def module_files(folder: Path) -> list[Path]:
    """The module files of a folder as `tasks import FOLDER` takes them, in a natural order
    (2_x before 10_x, as the problem sets number them)."""

    def key(p: Path) -> tuple[int, str]:
        head = re.match(r"\d+", p.name)
        return (int(head.group()) if head else 1 << 30, p.name)

    return sorted((f for f in folder.glob("*.py") if not f.name.startswith("_")), key=key)


def cause(row: CoverageRow) -> str:
    """The refusal without what is particular to its file: rows with one cause share it."""
    text = (row.refusal or "").replace(row.file, "FILE").replace(Path(row.file).stem, "FILE")
    text = re.sub(r"\bself\.[\w.]+", "self.X", text)
    text = re.sub(r"\blayer [\w.]+", "layer X", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text).removeprefix("FILE: ")
    return " ".join(": ".join(text.split(": ")[:2]).split()[:CAUSE_WORDS])


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def import_one(path: Path, root: Path, gpu_memory_bytes: int | None = None, cpu: bool = False) -> CoverageRow:
    """One file through the importer; with `cpu` (nothing else starting children meanwhile) the CPU
    time its child took, which a loaded machine's waiting does not inflate."""
    start, cpu_start = time.monotonic(), _children_cpu_s()
    task, refusal = None, None
    try:
        task = import_module(path, root / path.parent.name, None, gpu_memory_bytes).folder.name
    except UserError as exc:
        refusal = str(exc)
    cpu_s = _children_cpu_s() - cpu_start if cpu else None
    return CoverageRow(path.parent.name, path.name, task, refusal, time.monotonic() - start, cpu_s)


def run_coverage(
    files: Sequence[Path],
    root: Path,
    jobs: int,
    gpu_memory_bytes: int | None = None,
    on_row: Callable[[CoverageRow], None] | None = None,
) -> list[CoverageRow]:
    """Import every file into root/<its folder's name>/, `jobs` at a time; rows in the files' order."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(import_one, f, root, gpu_memory_bytes, jobs <= 1) for f in files]
        rows = []
        for fut in futures:
            row = fut.result()
            if on_row:
                on_row(row)
            rows.append(row)
    return rows


@dataclass(frozen=True)
class FolderTotal:
    folder: str
    files: int
    imported: int
    median_s: float
    max_s: float
    median_cpu_s: float | None


def totals(rows: Sequence[CoverageRow]) -> list[FolderTotal]:
    out = []
    for folder in dict.fromkeys(r.folder for r in rows):
        mine = [r for r in rows if r.folder == folder]
        seconds = [r.seconds for r in mine]
        cpu = [r.cpu_s for r in mine if r.cpu_s is not None]
        out.append(
            FolderTotal(
                folder,
                len(mine),
                sum(r.imported for r in mine),
                statistics.median(seconds),
                max(seconds),
                statistics.median(cpu) if cpu else None,
            )
        )
    return out


def causes(rows: Sequence[CoverageRow]) -> list[tuple[str, int, list[str]]]:
    """Each cause of refusal, how many files it refused and which, most frequent first."""
    count = Counter(cause(r) for r in rows if not r.imported)
    return [
        (c, n, [f"{r.folder}/{r.file}" for r in rows if not r.imported and cause(r) == c])
        for c, n in count.most_common()
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(rows: Sequence[CoverageRow]) -> str:
    """The totals, the causes of refusal, and one row per file, as Markdown."""
    lines = [
        "| folder | files | imported | refused | median s | max s | median CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in totals(rows):
        cpu = f"{t.median_cpu_s:.1f}" if t.median_cpu_s is not None else "-"
        lines.append(
            f"| {t.folder} | {t.files} | {t.imported} | {t.files - t.imported} | {t.median_s:.1f} | {t.max_s:.1f} "
            f"| {cpu} |"
        )
    refused = causes(rows)
    if refused:
        lines += [
            "",
            "| refusals | cause (the file's name, numbers and names inside the module taken out) |",
            "|---|---|",
        ]
        lines += [f"| {n} | {_cell(c)} |" for c, n, _ in refused]
    lines += ["", "| folder | file | result | s |", "|---|---|---|---|"]
    for r in rows:
        result = f"imported as {r.task}" if r.imported else f"refused: {_cell(r.refusal or '')}"
        lines.append(f"| {r.folder} | {r.file} | {result} | {r.seconds:.1f} |")
    return "\n".join(lines) + "\n"
