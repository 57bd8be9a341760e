"""`cuda-llm tasks`: the task library; `cuda-llm tasks new NAME`: scaffold a task that validates."""

from __future__ import annotations

import argparse

from cuda_llm.app.cli.output import error, human_bytes, print_json, table


def _si(n: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n:.0f}"


def list_tasks(args: argparse.Namespace) -> int:
    from cuda_llm.engine.core.errors import TaskFileError
    from cuda_llm.engine.task import TaskLibrary

    library = TaskLibrary()
    rows, records, broken = [], [], []
    for item in library.load_all():
        if isinstance(item, TaskFileError):
            broken.append(str(item))
            records.append({"error": str(item), "path": item.path})
            continue
        nbytes, flops = item.bytes_and_flops(item.timing)
        size = " ".join(f"{k}={v}" for k, v in item.timing.values)
        rows.append((item.name, item.category, size, human_bytes(nbytes), _si(flops), item.summary))
        records.append(
            {
                "name": item.name,
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
        print(table(("task", "category", "timing size", "moves", "flops", "summary"), rows))
        for line in broken:
            print(f"broken: {line}")
    return 1 if broken else 0


def new_task(args: argparse.Namespace) -> int:
    from cuda_llm.app.cli.files import output_folder
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.task.library import user_tasks_dir
    from cuda_llm.engine.task.scaffold import scaffold_task

    root = output_folder(args.dir) if args.dir else user_tasks_dir()
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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tasks", help="list the task library; `tasks new NAME` scaffolds a task")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=list_tasks)
    tsub = p.add_subparsers(dest="tasks_command", metavar="")
    n = tsub.add_parser("new", help="scaffold a new task that validates out of the box")
    n.add_argument("name", help="the task's name (a C identifier)")
    n.add_argument("--dir", help="where to create it (default: the user task folder)")
    n.set_defaults(func=new_task)
