"""`cuda-llm tasks`: the task library; `cuda-llm tasks new NAME`: scaffold a task that validates."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from cuda_llm.app.cli.argtypes import positive_float
from cuda_llm.app.cli.output import error, human_bytes, print_json, table

# Marks a user task that has a built-in task's name (and so replaces it everywhere).
SHADOW_MARK = "*"
# The width a table is fitted to when the output is not a terminal (a pipe, a file).
DEFAULT_COLUMNS = 100
# A summary is cut no shorter than this, however narrow the terminal: a few words still say something.
MIN_SUMMARY = 20
# The timing-size column (e.g. "bh=32 sq=1024 sk=1024 d=64") is cut to fit too, no shorter than this.
SIZE_COLUMN, MIN_SIZE = 2, 16


def _si(n: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n:.0f}"


def builtin_names() -> set[str]:
    from cuda_llm.engine.task.library import TaskLibrary, builtin_tasks_dir

    return set(TaskLibrary((builtin_tasks_dir(),)).folders())


def builtin_tasks_dir() -> Path:
    from cuda_llm.engine.task.library import builtin_tasks_dir as folder

    return folder()


def _fitted(rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The rows with their summaries cut to fit the terminal's width (a table that wraps reads as
    noise); the whole summary is in --json."""
    if not rows:
        return rows
    columns = shutil.get_terminal_size((DEFAULT_COLUMNS, 24)).columns
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    # The summary gives way first, down to MIN_SUMMARY; then the timing size (its sizes are in --json).
    over = sum(w + 2 for w in widths[:-1]) + MIN_SUMMARY + 1 - columns
    size_room = max(MIN_SIZE, widths[SIZE_COLUMN] - max(0, over))
    fixed = sum(w + 2 for w in widths[:-1]) - widths[SIZE_COLUMN] + min(widths[SIZE_COLUMN], size_room)
    room = max(MIN_SUMMARY, columns - fixed - 1)
    return [
        tuple(_cut(cell, size_room) if i == SIZE_COLUMN else _cut(cell, room) if i == len(r) - 1 else cell
              for i, cell in enumerate(r))
        for r in rows
    ]  # fmt: skip


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: room - 3].rstrip() + "..."


def list_tasks(args: argparse.Namespace) -> int:
    from cuda_llm.engine.core.errors import TaskFileError
    from cuda_llm.engine.task import TaskLibrary

    library = TaskLibrary()
    builtin = builtin_names()
    rows: list[tuple[str, ...]] = []
    records: list[dict[str, object]] = []
    broken, shadowing = [], []
    for item in library.load_all():
        if isinstance(item, TaskFileError):
            broken.append(str(item))
            records.append({"error": str(item), "path": item.path})
            continue
        nbytes, flops = item.bytes_and_flops(item.timing)
        size = " ".join(f"{k}={v}" for k, v in item.timing.values)
        shadows = item.name in builtin and Path(item.folder).resolve() != (builtin_tasks_dir() / item.name).resolve()
        if shadows:
            shadowing.append(f"{item.name}: {item.folder}")
        name = item.name + (SHADOW_MARK if shadows else "")
        rows.append((name, item.category, size, human_bytes(nbytes), _si(flops), item.summary))
        records.append(
            {
                "name": item.name,
                "shadows_builtin": shadows,
                "category": item.category,
                "summary": item.summary,
                "folder": str(item.folder),
                "timing_size": item.timing.as_dict(),
                "bytes": nbytes,
                "flops": flops,
                "peak": item.roofline.peak,
                "dtype_contract": item.dtype_contract,
                "validation_sizes": [c.as_dict() for c in item.validation if not c.is_timing],
                "tolerance": {
                    "scale": item.tolerance.scale,
                    "rtol": item.tolerance.rtol,
                    "atol": item.tolerance.atol,
                },
            }
        )
    if args.json:
        print_json(records)
    else:
        print(table(("task", "category", "timing size", "moves", "flops", "summary"), _fitted(rows)))
        if shadowing:
            mine = "; ".join(shadowing)
            print(f"{SHADOW_MARK} your task replaces the built-in one of that name in every command: {mine}")
        for line in broken:
            print(f"broken: {line}")
    return 1 if broken else 0


def new_task(args: argparse.Namespace) -> int:
    if getattr(args, "from_module", None):
        args.files, args.gpu_memory = [args.from_module], None
        return import_tasks(args)
    if not args.name:
        error("give the new task's name (tasks new NAME), or a module file to make it from (--from FILE.py)")
        return 2
    from cuda_llm.app.cli.files import output_folder
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.task.library import user_tasks_dir
    from cuda_llm.engine.task.scaffold import scaffold_task

    if args.name in builtin_names() and not args.force:
        error(
            f"{args.name!r} is a built-in task: a task of yours with that name would replace it in every command; "
            "choose another name, or add --force to replace it"
        )
        return 2
    root = output_folder(args.dir, "--dir") if args.dir else user_tasks_dir()
    try:
        folder = scaffold_task(args.name, root)
    except UserError as exc:
        error(str(exc))
        return 2
    print(f"created {folder} (task.toml, reference.py, baseline.cu, baseline.json)")
    if args.dir:
        print(f"add {root} to CUDA_LLM_TASK_PATH so the library finds it")
    print(f"check it with: cuda-llm eval {folder} {folder / 'baseline.cu'} --plan {folder / 'baseline.json'}")
    return 0


def _module_files(paths: list[str]) -> list[Path]:
    """The module files named, a folder standing for every .py file in it."""
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(f for f in p.glob("*.py") if not f.name.startswith("_")) if p.is_dir() else [p])
    return files


def import_tasks(args: argparse.Namespace) -> int:
    from cuda_llm.app.cli.files import output_folder
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.task.library import user_tasks_dir
    from cuda_llm.engine.torchtask.importer import import_module
    from cuda_llm.engine.torchtask.inspect_module import module_file_problem, torch_missing

    # The command line's own mistakes first, so they are told the same with or without PyTorch.
    files = _module_files(args.files)
    if args.name and len(files) != 1:
        error("--name names one task: give one module file with it, or leave it out to name each after its file")
        return 2
    if not files:
        error(f"no module files in {', '.join(args.files)} (a module file is a .py defining Model and get_inputs)")
        return 2
    problems = [p for p in map(module_file_problem, files) if p]
    for problem in problems:
        error(problem)
    if problems:
        return 2
    missing = torch_missing()
    if missing:
        error(missing)
        return 2
    root = output_folder(args.dir, "--dir") if args.dir else user_tasks_dir()
    memory = int(args.gpu_memory * 2**30) if args.gpu_memory else None
    failed = 0
    for f in files:
        name = args.name or None
        if name in builtin_names() and not args.force:
            error(f"{name!r} is a built-in task's name; choose another --name, or add --force to replace it")
            failed += 1
            continue
        try:
            done = import_module(f, root, name, memory)
        except UserError as exc:
            error(str(exc))
            failed += 1
            continue
        size = " ".join(f"{k}={v}" for k, v in done.sizes.items()) or "fixed shapes"
        cases = f"{done.validation_cases} smaller case(s)"
        print(f"created {done.folder} from {f.name}: sizes {size}, {cases}; {done.memory_note}")
    if files and len(files) > failed:
        if args.dir:
            print(f"add {root} to CUDA_LLM_TASK_PATH so the library finds it")
        print("check one with: cuda-llm eval TASK baseline   (its baseline is PyTorch eager)")
    return 2 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tasks",
        help="list the task library; `tasks new NAME` scaffolds one, `tasks import FILE.py` imports a PyTorch module",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=list_tasks)
    tsub = p.add_subparsers(dest="tasks_command", metavar="[new | import]")
    n = tsub.add_parser("new", help="scaffold a new task that validates out of the box")
    n.add_argument("name", nargs="?", help="the task's name (a C identifier)")
    n.add_argument("--dir", help="where to create it (default: the user task folder)")
    n.add_argument("--force", action="store_true", help="allow a built-in task's name (yours then replaces it)")
    n.add_argument(
        "--from", dest="from_module", metavar="FILE.py", help="make it from a PyTorch module file (as `tasks import`)"
    )
    n.set_defaults(func=new_task)
    i = tsub.add_parser(
        "import",
        help="make tasks of PyTorch module files (Model, get_inputs, get_init_inputs), judged against eager",
    )
    i.add_argument("files", nargs="+", metavar="FILE.py", help="module files, or folders of them")
    i.add_argument("--name", help="the task's name (default: the file's name)")
    i.add_argument("--dir", help="where to create it (default: the user task folder)")
    i.add_argument("--force", action="store_true", help="allow a built-in task's name (yours then replaces it)")
    i.add_argument(
        "--gpu-memory",
        type=positive_float,
        metavar="GIB",
        help="check the problem fits a GPU with this much free memory (default: this machine's GPU, if any)",
    )
    i.set_defaults(func=import_tasks)
