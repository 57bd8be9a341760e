"""`cuda-llm bench --model SPEC [--tasks ...]`: the paper's table (app/cli/bench_table.py says what
it promises). One headless session per task, each recorded like any other; the table, bench.md and
bench.json from them.

    cuda-llm bench --model ollama:MODEL                 every built-in task (yours only when named)
    cuda-llm bench --model replay:latest --tasks T ...  replay each task's newest recorded session
    cuda-llm bench --rerun OUT/bench.json               the same request again, then both side by side
    cuda-llm bench --compare A.json B.json              two runs side by side (two models, two GPUs)
    cuda-llm bench --model SPEC --cluster ray://HOST:10001  the tasks side by side on a Ray cluster

A run is a `BenchRequest` (what to run and how) turned into `BenchRow`s one task at a time by
`run_task`; where sessions run is `open_session`'s business, or with --cluster engine/cluster/bench.py's
(each task's session on a GPU of its own).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuda_llm.app.cli.output import print_json, say_on_stderr
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.status import STATUSES
from cuda_llm.engine.llm.spec import parse_spec

REPLAY_LATEST = "replay:latest"
# What `bench --compare A B --out DIR` writes.
COMPARE_FILE, COMPARE_JSON = "compare.md", "compare.json"
# How far back replay:latest looks for a task's newest session.
REPLAY_SEARCH_SESSIONS = 10_000

if TYPE_CHECKING:
    from cuda_llm.app.cli.bench_table import BenchRow
    from cuda_llm.engine.core.settings import LoopSettings
    from cuda_llm.engine.fsr.control import Controller
    from cuda_llm.engine.fsr.loop import SessionResult
    from cuda_llm.engine.fsr.session import SessionOptions
    from cuda_llm.engine.judge.judgement import LibraryResult


@dataclass(frozen=True)
class BenchRequest:
    """Everything that decides what a bench runs: what bench.json keeps so that --rerun repeats it."""

    tasks: tuple[str, ...]
    model: str
    host: str | None = None
    base_url: str | None = None
    compile_only: bool = False
    arch: str | None = None
    loop: dict[str, Any] = field(default_factory=dict)  # LoopSettings, serialized
    overrides: dict[str, Any] = field(default_factory=dict)  # the settings given on the command line
    # Where it runs, which a rerun takes from its own command line: not kept in bench.json.
    db: str | None = None
    gpus: str | None = None  # "0,1"; with `cluster`, a GPU model
    cluster: str | None = None  # a Ray cluster's address (each row's environment names the node and GPU)
    torch_compile: bool = False  # torch.compile timed beside eager for imported tasks (--torch-compile)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("db", "gpus", "cluster"):
            data.pop(key)
        for key in ("host", "base_url"):  # a server's address, never its credentials
            data[key] = _scrubbed(data[key]) if data[key] else None
        return data

    def loop_settings(self) -> LoopSettings:
        from cuda_llm.engine.core import serialize
        from cuda_llm.engine.core.settings import LoopSettings

        return serialize.load(LoopSettings, self.loop) if self.loop else LoopSettings()


def _scrubbed(word: str) -> str:
    """A URL without user:password@ (what --host or --base-url may carry); other words as they are."""
    from cuda_llm.engine.llm.http_errors import display_url

    return display_url(word) if "://" in word and "@" in word else word


def request_from_args(args: argparse.Namespace) -> BenchRequest:
    from cuda_llm.app.cli.run_cmd import loop_overrides, loop_settings
    from cuda_llm.engine.core import serialize
    from cuda_llm.engine.task import TaskLibrary
    from cuda_llm.engine.task.library import builtin_tasks_dir

    # By default the built-in library only: a task the user scaffolded must not change the paper's table.
    tasks = tuple(args.tasks) if args.tasks else tuple(TaskLibrary((builtin_tasks_dir(),)).names())
    return BenchRequest(
        tasks=tasks,
        model=args.model,
        host=args.host,
        base_url=args.base_url,
        compile_only=args.compile_only,
        arch=args.arch,
        loop=serialize.dump(loop_settings(args)),
        overrides=loop_overrides(args),
        db=args.db,
        gpus=args.gpu,
        cluster=args.cluster,
        torch_compile=getattr(args, "torch_compile", False),
    )


def request_from_bench(bench: dict[str, Any], path: str, args: argparse.Namespace) -> BenchRequest:
    saved = bench.get("request")
    if not isinstance(saved, dict) or "tasks" not in saved:
        raise UserError(f"{path} holds no request to rerun (written by an older cuda-llm); run the bench again")
    known = {f.name for f in dataclasses.fields(BenchRequest)}
    values = {k: v for k, v in saved.items() if k in known}
    values["tasks"] = tuple(values["tasks"])
    return BenchRequest(**values, db=args.db, gpus=args.gpu, cluster=args.cluster)


def check_tasks(request: BenchRequest) -> None:
    """Every task loads before any session starts: a typo costs nothing (and gets a suggestion)."""
    from cuda_llm.engine.task import TaskLibrary

    library = TaskLibrary()
    for name in request.tasks:
        library.get(name)


def _replayed_session(task: str, db: str | None) -> int | None:
    """The newest recorded session of `task` that is not itself a replay."""
    from cuda_llm.engine.store.sessions import SessionStore

    store = SessionStore(db, read_only=True)
    try:
        for s in store.sessions(REPLAY_SEARCH_SESSIONS):
            if s.task == task and not parse_spec(s.model).backend.replays:
                return s.id
    finally:
        store.close()
    return None


def _options(request: BenchRequest, task: str, model: str) -> SessionOptions:
    from cuda_llm.app.options import Defaults, session_options

    loop = request.loop_settings()
    spec = parse_spec(model)
    if spec.backend.replays:
        # The replayed session's own N, D and rules (unless given), so the same requests are made.
        from cuda_llm.engine.store.sessions import SessionStore

        store = SessionStore(request.db, read_only=True)
        try:
            recorded = store.session(int(spec.name)).settings
        finally:
            store.close()
        loop = dataclasses.replace(recorded, **request.overrides)
    where = Defaults(
        db=request.db,
        host=request.host,
        base_url=request.base_url,
        compile_only=request.compile_only,
        arch=request.arch,
        gpu=request.gpus,
        cluster=request.cluster,
    )
    return session_options(
        where, task, model, loop, torch_compile=request.torch_compile, overrides=dict(request.overrides)
    )


# Statuses of candidates that got past compiling and binding (a launch error here is a plan the
# limits refused, before anything ran).
_BOUND = frozenset(s for s, info in STATUSES.items() if info.compiled)


def build_row(
    task: str,
    model: str,
    result: SessionResult,
    report: dict[str, Any],
    library: LibraryResult | None,
    seconds: float,
    torch_compile: LibraryResult | None = None,
) -> BenchRow:
    """A table row from a finished session's report (app/cli/report.py), its library figure and, when
    asked for (--torch-compile), torch.compile's."""
    from cuda_llm.app.cli.bench_table import BenchRow
    from cuda_llm.app.cli.yardstick import library_record, torch_compile_record

    history = [h for h in report["history"] if h["label"] != "baseline"]
    validated = not report["compile_only"]
    best = report["best"]
    fig = best["figures"] if best else None
    baseline_us = report["baseline_us"]
    best_us = fig["median_us"] if fig else baseline_us
    # Nothing beat the baseline: it is the best, at 1.00x (nothing is known without a GPU).
    no_gain = 1.0 if validated and baseline_us else None
    speedup = fig["speedup"] if fig else no_gain
    return BenchRow(
        task=task,
        session=report["session"],
        model=model,
        status=result.status,
        validated=validated,
        message=result.reason,
        candidates=len(history),
        compiled=sum(h["status"] in _BOUND for h in history),
        correct=sum(h["status"] == "correct" for h in history),
        suspect=sum(h["status"] == "suspect" for h in history),
        baseline_us=baseline_us,
        best_label=best["label"] if best else "baseline",
        best_round=best["round"] if best else None,
        best_us=best_us if validated else None,
        speedup=speedup,
        roofline_share=fig["roofline_share"] if fig else None,
        physical_share=fig.get("physical_share") if fig else None,
        sm_clock_mhz=fig.get("sm_clock_mhz") if fig else None,
        library=library_record(library, best_us if validated else None),
        torch_compile=torch_compile_record(torch_compile),
        torch_compile_speedup=fig.get("torch_compile_speedup") if fig else _over_compile(torch_compile, baseline_us),
        rounds_run=len(report["rounds"]),
        tokens=report["tokens_used"],
        seconds=seconds,
        server=report.get("server"),
        settings=report["settings"],
        environment=report.get("environment") or {},
        baseline_kind=_baseline_kind(report),
        fastest_correct_speedup=max(
            (h["speedup"] for h in history if h["status"] == "correct" and h.get("speedup")), default=None
        ),
    )


def _over_compile(torch_compile: LibraryResult | None, baseline_us: float | None) -> float | None:
    """Where eager stayed the best: torch.compile's time over eager's (the timed baseline's)."""
    t = torch_compile.timing if torch_compile is not None else None
    return t.median_us / baseline_us if t is not None and baseline_us else None


def _baseline_kind(report: dict[str, Any]) -> str:
    """ "eager" for a task imported from a PyTorch module (its baseline is PyTorch eager), else "cuda"."""
    from cuda_llm.app.cli.bench_table import EAGER
    from cuda_llm.engine.task.loader import load_task

    try:
        return EAGER if load_task(report["task_folder"]).pytorch_module else "cuda"
    except (UserError, OSError, KeyError, TypeError):  # the task's folder is gone or changed: a plain row
        return "cuda"


EnvironmentFactory = Callable[[], Any]  # a JudgeEnvironment to judge with (tests pass a fake GPU's)


async def run_task(
    request: BenchRequest,
    task: str,
    model: str,
    environment: EnvironmentFactory | None = None,
    opened: Callable[[], None] | None = None,
    control: Controller | None = None,
) -> BenchRow:
    """One task's session from start to end, and its row. `opened` is called once the session exists
    (engine/cluster/bench.py starts the next task then, so sessions are numbered in task order);
    `control` lets the caller stop it."""
    from cuda_llm.app.cli.report import session_report
    from cuda_llm.engine.fsr import events as ev
    from cuda_llm.engine.fsr.control import Controller
    from cuda_llm.engine.fsr.session import open_session
    from cuda_llm.engine.store.sessions import SessionStore

    control = control or Controller(auto_accept=True, stop_when_paused=True)
    started = time.monotonic()
    session = await open_session(
        _options(request, task, model), control, environment=environment() if environment else None
    )
    if opened is not None:
        opened()
    if session.env.notice:
        say_on_stderr(session.env.notice)
    library: list[Any] = []
    compiled = None
    session.bus.subscribe(lambda e: library.append(e.library) if isinstance(e, ev.LibraryTimed) else None)
    print(f"{task}: session {session.id} with {model}", file=sys.stderr, flush=True)
    try:
        result = await session.run()
        if not library:  # compile-only: the loop times no library; the judge says why there is none
            library.append(await session.library())
        if request.torch_compile:  # timed once when the session started (or why not, in one line)
            compiled = await session.torch_compile()
    except UserError as exc:
        from cuda_llm.engine.fsr.session import SessionResult

        print(f"cuda-llm: {task}: {exc}", file=sys.stderr)
        result = SessionResult(session.id, str(exc), None, 0, 0, "failed")
    finally:
        await session.close()
    store = SessionStore(request.db, read_only=True)
    try:
        report = session_report(store, result.session_id)
    finally:
        store.close()
    seconds = time.monotonic() - started
    return build_row(task, model, result, report, library[0] if library else None, seconds, compiled)


def resolve_models(request: BenchRequest) -> list[tuple[str, str]]:
    """(task, model) for each task to run: replay:latest names each task's newest recorded session
    (a task with none is skipped, in one line). Resolved before any session starts, so sessions this
    bench makes are never replayed by it, wherever they run."""
    runs = []
    for task in request.tasks:
        model = request.model
        if model == REPLAY_LATEST:
            found = _replayed_session(task, request.db)
            if found is None:
                print(f"cuda-llm: no recorded session of {task} to replay; skipped", file=sys.stderr)
                continue
            model = f"replay:{found}"
        runs.append((task, model))
    return runs


async def run_bench(
    request: BenchRequest,
    environment: EnvironmentFactory | None = None,
    worker_factory: Any = None,
    cluster_settings: Any = None,
) -> list[BenchRow]:
    """The rows in task order. With `request.cluster` (not compile-only) the tasks run side by side on
    the Ray cluster's GPUs (engine/cluster/bench.py; `worker_factory` and `cluster_settings` reach it:
    tests pass a fake GPU worker)."""
    from cuda_llm.app.cli.interrupt import ctrl_c_stops
    from cuda_llm.engine.fsr.control import Controller

    check_tasks(request)
    runs = resolve_models(request)
    if request.cluster and not request.compile_only:
        # Imported only here: without --cluster nothing imports Ray (an optional extra).
        from cuda_llm.engine.cluster.bench import bench_on_cluster

        return await bench_on_cluster(
            request, runs, run_task, worker_factory, cluster=cluster_settings, progress=say_on_stderr
        )
    rows: list[BenchRow] = []
    control: Controller | None = None
    stopped = False

    def stop() -> None:  # Ctrl-C: the session running now stops cleanly, no further task starts
        nonlocal stopped
        stopped = True
        if control is not None:
            control.stop()

    with ctrl_c_stops(stop):
        for task, model in runs:
            if stopped:
                print(f"cuda-llm: stopped: {task} and the tasks after it were not run", file=sys.stderr)
                break
            control = Controller(auto_accept=True, stop_when_paused=True)
            rows.append(await run_task(request, task, model, environment, control=control))
    return rows


def document(rows: list[BenchRow], request: BenchRequest, command: list[str]) -> dict[str, Any]:
    from cuda_llm import __version__
    from cuda_llm.app.cli.bench_table import bench_document

    return bench_document(rows, request.to_json(), time.strftime("%Y-%m-%d %H:%M:%S %z"), __version__, command)


def load_bench(path: str) -> dict[str, Any]:
    """A bench.json (or a folder holding one), checked enough to be compared or rerun."""
    import json

    from cuda_llm.app.cli.bench_table import BENCH_FILE, BenchRow
    from cuda_llm.app.cli.files import read_text

    p = Path(path)
    if p.is_dir():
        p = p / BENCH_FILE
    text = read_text(p, "bench.json", 64 * 1024 * 1024)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{p} is not a bench.json (not JSON: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list) or "model" not in data:
        raise UserError(f"{p} is not a bench.json written by `cuda-llm bench --out`")
    try:
        for row in data["rows"]:
            BenchRow.from_json(row)
    except TypeError as exc:
        raise UserError(f"{p} has a row cuda-llm cannot read ({exc})") from None
    return data


def _write(out: str, doc: dict[str, Any], text: str) -> None:
    from cuda_llm.app.cli.bench_table import BENCH_FILE, dumps
    from cuda_llm.app.cli.files import output_folder, write_text

    folder = output_folder(out)
    write_text(folder / "bench.md", text)
    write_text(folder / BENCH_FILE, dumps(doc))
    print(f"cuda-llm: wrote {folder / 'bench.md'} and {folder / BENCH_FILE}", file=sys.stderr)


def _compare(args: argparse.Namespace) -> int:
    from cuda_llm.app.cli.bench_compare import compare, compare_json, compare_markdown

    first, second = args.compare
    a, b = load_bench(first), load_bench(second)
    cmp = compare(a, b, (first, second))
    if args.out:
        from cuda_llm.app.cli.bench_table import dumps
        from cuda_llm.app.cli.files import output_folder, write_text

        folder = output_folder(args.out)
        write_text(folder / COMPARE_FILE, compare_markdown(cmp, a, b))
        write_text(folder / COMPARE_JSON, dumps(compare_json(cmp)))
        print(f"cuda-llm: wrote {folder / COMPARE_FILE} and {folder / COMPARE_JSON}", file=sys.stderr)
    if args.json:
        print_json(compare_json(cmp))
    else:
        print(compare_markdown(cmp, a, b), end="")
    return 0


def bench(args: argparse.Namespace, environment: EnvironmentFactory | None = None) -> int:
    from cuda_llm.app.cli.bench_compare import compare, compare_json, compare_markdown
    from cuda_llm.app.cli.bench_table import markdown

    if args.compare:
        if args.rerun:
            raise UserError("--compare and --rerun do not go together: --rerun compares with its file by itself")
        return _compare(args)
    previous = None
    if args.rerun:
        previous = load_bench(args.rerun)
        request = request_from_bench(previous, args.rerun, args)
    elif not args.model:
        raise UserError("bench needs --model SPEC (ollama:MODEL, openai:MODEL, or replay:latest), or --rerun FILE")
    else:
        request = request_from_args(args)
    if args.out:
        from cuda_llm.app.cli.files import output_folder

        output_folder(args.out)  # a folder that cannot be written is found before the sessions run
    rows = asyncio.run(run_bench(request, environment))
    doc = document(rows, request, ["cuda-llm", *(_scrubbed(w) for w in (args.argv or ["bench"]))])
    text = markdown(doc)
    if args.out:
        _write(args.out, doc, text)
    if args.json:
        print_json(doc if previous is None else {"bench": doc, "compare": compare_json(compare(previous, doc))})
    else:
        print(text, end="")
        if previous is not None:
            print()
            print(compare_markdown(compare(previous, doc, (args.rerun, "this run")), previous, doc), end="")
    return 0 if rows else 1


def register(sub: argparse._SubParsersAction) -> None:
    from cuda_llm.app.cli.run_cmd import add_session_arguments
    from cuda_llm.app.cli.torch_compile_flag import add_torch_compile_flag

    p = sub.add_parser("bench", help="the paper's table: baseline vs best per task")
    p.add_argument(
        "--tasks",
        nargs="+",
        metavar="TASK",
        help="tasks to run, built-in or your own, by name or folder (default: every built-in task)",
    )
    add_session_arguments(p)
    add_torch_compile_flag(p)
    p.add_argument(
        "--out", help="also write bench.md and bench.json into this folder (with --compare: compare.md and .json)"
    )
    p.add_argument("--rerun", metavar="BENCH_JSON", help="run the request a bench.json records again and compare")
    p.add_argument(
        "--compare", nargs=2, metavar=("A", "B"), help="put two bench.json files (or --out folders) side by side"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=bench, argv=None)
