"""`cuda-llm eval TASK FILE`: the three checks on one candidate (a reply in Markdown, a .cu with
--plan, a folder `cuda-llm export` wrote, or - for standard input), printed as a readable report or
JSON, with the vendor library's figure beside it on a GPU. Exit code 0 when the candidate is correct
(or compiled in compile-only mode), 1 when it fails, 2 for a usage error."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuda_llm.app.cli.argtypes import arch, gpu_index
from cuda_llm.app.cli.files import STDIN, FileArgumentError, NotTextError, read_text, shown
from cuda_llm.app.cli.output import error, print_json, say_on_stderr, split_message
from cuda_llm.app.cli.torch_compile_flag import add_torch_compile_flag, with_torch_compile

if TYPE_CHECKING:  # the engine is imported where it is used: `eval --help` starts without it
    from cuda_llm.engine.counters.model import CountersReport
    from cuda_llm.engine.judge.judge import Judge
    from cuda_llm.engine.judge.judgement import Candidate, Judgement, LibraryResult

# What is read of a file before it is judged: far above anything the judge accepts (a 1 MiB reply,
# a 256 KiB source), so its own checks say what is wrong with a large one; a file beyond this is
# refused unread rather than held in memory.
MAX_FILE_BYTES = 64 * 1024 * 1024
# A launch plan is a few hundred bytes; anything this large is not one.
MAX_PLAN_BYTES = 256 * 1024
# Names `cuda-llm export` writes (app/cli/sessions_cmd.py).
EXPORT_KERNEL, EXPORT_PLAN, EXPORT_REPORT = "kernel.cu", "plan.json", "report.json"
# The FILE argument that judges the task's own baseline (`cuda-llm eval TASK baseline`).
BASELINE_WORD = "baseline"


@dataclass(frozen=True)
class Source:
    """What to judge: the candidate's text, its plan's text when separate, and where they came from."""

    label: str
    text: str
    plan_text: str | None  # None: `text` is a reply holding the plan
    plan_name: str | None = None
    notes: tuple[str, ...] = ()


def _export_folder(folder: Path, args: argparse.Namespace) -> Source:
    kernel, plan = folder / EXPORT_KERNEL, folder / EXPORT_PLAN
    if not kernel.is_file():
        raise FileArgumentError(
            f"{folder} is a folder: give a reply (.md), a .cu file with --plan, or a folder `cuda-llm export` "
            f"wrote ({EXPORT_KERNEL} and {EXPORT_PLAN})"
        )
    plan_path = Path(args.plan) if args.plan else plan
    label, notes = EXPORT_KERNEL, []
    report = folder / EXPORT_REPORT
    if report.is_file():
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
            exported = data.get("exported") or {}
            label = exported.get("label") or label
            notes.append(f"exported from session {data.get('session')} ({data.get('model')}, {data.get('device')})")
            task = data.get("task")
            if task and task != args.task and not Path(args.task).is_dir():
                notes.append(f"the export is of task {task!r}, judged here as {args.task!r}")
        except (OSError, ValueError, AttributeError):
            notes.append(f"{report} is not a report cuda-llm wrote; judged without it")
    source = _read(kernel, "kernel")
    return Source(label, source, _read_plan(plan_path), str(plan_path), tuple(notes))


def _read(path: str | Path, what: str, limit: int | None = None) -> str:
    return read_text(path, what, limit or MAX_FILE_BYTES)


def _read_plan(path: str | Path) -> str:
    """A --plan file, read and parsed as JSON: a plan file that is not JSON (or not text) is a mistake
    on the command line, a usage error said at once, not the candidate's format error after a compile.
    What the plan says (kernels, arguments) is still judged as the candidate's."""
    try:
        text = _read(path, "launch plan", MAX_PLAN_BYTES)
    except NotTextError as exc:
        raise FileArgumentError(f"launch plan {exc}") from None
    try:
        json.loads(text)
    except ValueError as exc:
        raise FileArgumentError(f"launch plan {shown(path)} is not JSON: {exc}") from None
    return text


def _source(args: argparse.Namespace) -> Source:
    name = args.file
    if name != STDIN and Path(name).is_dir():
        return _export_folder(Path(name), args)
    label = "stdin" if name == STDIN else Path(name).name
    is_cuda = name != STDIN and Path(name).suffix in (".cu", ".cuh")
    if is_cuda and not args.plan:
        raise FileArgumentError(f"{name} is CUDA source: give its launch plan with --plan plan.json")
    if args.plan == STDIN and name == STDIN:
        raise FileArgumentError("only one of FILE and --plan can be standard input (-)")
    text = _read(name, "reply" if not args.plan else "kernel")
    plan_text = _read_plan(args.plan) if args.plan else None
    return Source(label, text, plan_text, shown(args.plan) if args.plan else None)


# Compiler processes for an eval that times its candidate: the candidate's compile and the
# baseline's, at once (untimed or compile-only, one).
EVAL_COMPILERS = 2
# The device eval judges on when --gpu is not given (compile-only where there is none).
DEFAULT_GPU = 0


def _candidate(source: Source, judge: Judge) -> Candidate | Judgement:
    from cuda_llm.engine.core.errors import FormatError, headline
    from cuda_llm.engine.judge.judgement import Candidate, Judgement
    from cuda_llm.engine.task.plan import parse_plan

    if source.plan_text is None:
        return judge.parse(source.label, source.text, origin="user")
    try:
        plan = parse_plan(source.plan_text)
    except FormatError as exc:
        message = f"{source.plan_name}: {exc}"
        return Judgement(source.label, "format_error", headline(message), detail=message)
    return Candidate(source.label, source.text, plan, origin="user")


def render(
    j: Judgement,
    device: str,
    library: LibraryResult | None = None,
    notes: tuple[str, ...] = (),
    torch_compile: LibraryResult | None = None,
) -> str:
    from cuda_llm.app.cli.yardstick import library_line, torch_compile_line
    from cuda_llm.engine.gpu.torch_compile import TORCH_COMPILE_NAME
    from cuda_llm.engine.judge.metrics import PHYSICAL_NAME, share_text, speedup_text

    lines = [f"candidate {j.label} on {device}"]
    lines += [f"note:     {n}" for n in notes]
    c = j.compile
    if c is not None:
        state = "ok" if c.ok else "failed"
        lines.append(
            f"compile:  {state} in {c.elapsed_s:.2f} s (NVRTC {c.nvrtc_version[0]}.{c.nvrtc_version[1]}, {c.arch})"
        )
        for k in c.kernels:
            spill = (
                f", spills {k.spill_store_bytes}/{k.spill_load_bytes} B"
                if k.spill_store_bytes or k.spill_load_bytes
                else ""
            )
            lines.append(
                f"          {k.name}: {k.registers} registers, {k.shared_bytes} B static shared, "
                f"{k.stack_frame_bytes} B stack{spill}"
            )
        for d in c.diagnostics[:10]:
            lines.append(f"          {d.one_line()}")
            if d.source_line:
                lines.append(f"              {d.source_line.strip()}")
    v = j.validation
    if v is not None:
        lines.append(f"validate: {v.summary}")
        for p in v.patterns:
            lines.append(f"          pattern: {p}")
        for m in v.mismatches[:5]:
            idx = ", ".join(str(i) for i in m.index)
            lines.append(f"          {m.case}: {m.output}[{idx}] expected {m.expected:.7g}, got {m.got:.7g}")
        for r in v.resources:
            lines.append(
                f"          launch {r.launch} {r.kernel}: grid {r.grid} block {r.block}, {r.registers} regs, "
                f"{r.blocks_per_sm} blocks/SM ({r.occupancy:.0%} occupancy), {r.local_bytes} B local"
            )
    f, t = j.figures, j.timing
    if t is not None and f is not None:
        speed = f", {text}" if (text := speedup_text(f)) else ""
        lines.append(
            f"profile:  {t.median_us:.2f} us median (IQR {t.iqr_us:.2f}, {t.samples} samples"
            + (f" over {t.placements} buffer placements" if t.placements > 1 else "")
            + f", {t.mode}"
            + (f" x{t.replays}" if t.replays > 1 else "")
            + f"){speed}"
        )
        lines.append(
            f"          {f.gbps:.0f} GB/s, {f.gflops:.0f} GFLOP/s; {share_text(f.roofline_pct)} "
            f"(floor {f.floor_us:.1f} us, {f.bound}-bound), {share_text(f.physical_pct, PHYSICAL_NAME)} "
            f"(floor {f.physical_floor_us:.1f} us)"
        )
    if torch_compile is not None:
        lines.append(f"compiled: {TORCH_COMPILE_NAME}: {torch_compile_line(torch_compile)}")
    if library is not None:
        lines.append(f"library:  {library_line(library, t.median_us if t else None)}")
    lines += counters_lines(j.counters)
    for w in j.warnings:
        lines.append(f"note:     {w}")
    # The verdict once: a short head on its line, the rest of the explanation (the full detail of a
    # format or launch error) indented below it, nothing repeated.
    full = j.detail if j.status in ("format_error", "launch_error") and j.detail else j.message
    head, rest = split_message(full)
    lines.append(f"verdict:  {j.status.replace('_', ' ')}: {head}")
    lines += [f"          {line}" for line in rest.splitlines() if line.strip()]
    # Where the time went (Judgement.phases): part of the text form, so eval's output and a render of
    # its --json record say the same.
    if phases := j.phases():
        from cuda_llm.engine.judge.judgement import phases_text

        lines.append(f"took: {phases_text(phases)}")
    return "\n".join(lines)


def counters_lines(report: CountersReport | None) -> list[str]:
    """What limits it, each launch's counters, and the findings the summary left out."""
    from cuda_llm.engine.counters.derive import SUMMARY_FINDINGS
    from cuda_llm.engine.counters.describe import kernel_figures

    if report is None:
        return []
    if not report.ok:
        return [f"counters: {report.line()}"]
    lines = [f"counters: {report.line()} (ncu, {report.elapsed_s:.1f} s)"]
    lines += [f"          {kernel_figures(k)}" for k in report.kernels]
    # The summary is made of the first findings (a plan of several kernels names each one once there,
    # so their texts are not all in it word for word): the rest are the ones it left out.
    lines += [f"          also: {f.text}" for f in report.findings[SUMMARY_FINDINGS:]]
    return lines


async def _read_counters(judge: Judge, result: Judgement, own_baseline: bool) -> Judgement:
    """`eval --counters`: the counters of a correct candidate (or of the task's own baseline)."""
    import dataclasses

    from cuda_llm.engine.counters.model import unavailable
    from cuda_llm.engine.judge.judgement import Judgement

    if result.status == "compiled":
        return dataclasses.replace(result, counters=unavailable("compile-only: there is no GPU to read counters on"))
    if not result.is_correct or result.candidate is None:
        return result
    if own_baseline and getattr(judge.task, "pytorch_module", None):
        return dataclasses.replace(result, counters=unavailable("the baseline is PyTorch eager, not a launch plan"))
    compiled = await judge.baseline() if own_baseline else await judge.compile(result.candidate)
    if isinstance(compiled, Judgement):  # it compiled a moment ago; should a second compile fail, say so
        return dataclasses.replace(result, counters=unavailable(f"could not compile it again: {compiled.message}"))
    return dataclasses.replace(result, counters=await judge.read_counters(compiled))


async def _evaluate(args: argparse.Namespace) -> int:
    from cuda_llm.engine.core.errors import UserError
    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.fsr.judging import open_environment
    from cuda_llm.engine.judge.judgement import Judgement
    from cuda_llm.engine.task import TaskLibrary

    settings = with_torch_compile(Settings(), args.torch_compile)
    task = TaskLibrary().get(args.task)
    # Files first: a path mistake costs no compiler or GPU start. The word `baseline` (no such file)
    # judges the task's own baseline: PyTorch eager for a task imported from a module.
    own_baseline = args.file == BASELINE_WORD and not Path(args.file).exists()
    if own_baseline and args.plan:
        raise UserError(
            f"--plan goes with a kernel file; `{BASELINE_WORD}` is judged with the task's own plan: drop --plan"
        )
    try:
        source = None if own_baseline else _source(args)
    except NotTextError as exc:
        source = None
        result = Judgement(Path(args.file).name if args.file != STDIN else "stdin", "format_error", str(exc))
    # Not a round's compiler pool (a process per core, or four per GPU): each process costs start-up.
    compilers = 1 if args.compile_only or args.no_profile else EVAL_COMPILERS
    gpu = args.gpu if args.gpu is not None else DEFAULT_GPU
    env = await open_environment(settings, args.arch, args.compile_only, gpu, compilers=compilers)
    if env.notice:
        say_on_stderr(env.notice)
    library = compiled = None
    yardsticks_s: dict[str, float] = {}
    try:
        judge = env.judge(task, settings)
        if settings.profile.torch_compile and not args.no_profile:
            # Before the candidate is timed, so its figures carry 'x torch.compile' beside 'x eager'.
            started = time.monotonic()
            compiled = await judge.torch_compile()
            yardsticks_s["torch.compile"] = time.monotonic() - started
        if own_baseline:
            result = await judge.baseline_judgement()
        elif source is not None:
            cand = _candidate(source, judge)
            result = cand if isinstance(cand, Judgement) else await judge.judge(cand, profile=not args.no_profile)
        if not args.no_profile:
            started = time.monotonic()
            library = await judge.library()
            if library.timing is not None:
                yardsticks_s["library"] = time.monotonic() - started
        if args.counters:
            result = await _read_counters(judge, result, own_baseline)
    except UserError as exc:
        error(str(exc))
        return 2
    finally:
        await env.close()
    from cuda_llm.engine.gpu.protocol import device_label

    device = device_label(env.device, env.arch) if env.device else f"no GPU, {device_label(None, env.arch)}"
    notes = source.notes if source is not None else ()
    if args.json:
        from cuda_llm.app.cli.yardstick import library_record, torch_compile_record
        from cuda_llm.engine.core import serialize

        print_json(
            {
                "task": task.name,
                "device": device,
                "arch": env.arch,
                "compile_only": env.gpu is None,
                "judgement": serialize.dump(result),
                # Where the time went (Judgement.phases), and the yardsticks' own (library, torch.compile).
                "phases_s": {**result.phases(), **yardsticks_s},
                "library": library_record(library, result.timing.median_us if result.timing else None),
                "torch_compile": torch_compile_record(compiled),
                "notes": list(notes),
            }
        )
    else:
        print(render(result, device, library, notes, compiled))
    return 0 if result.status in ("correct", "compiled") else 1


def evaluate(args: argparse.Namespace) -> int:
    return asyncio.run(_evaluate(args))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="judge one candidate: compile, validate, profile")
    p.add_argument("task", help="task name or folder")
    p.add_argument(
        "file",
        help="a model reply (.md), CUDA source (.cu, with --plan), a folder `cuda-llm export` wrote, - (stdin), "
        "or `baseline` (the task's own baseline: PyTorch eager for an imported task)",
    )
    p.add_argument("--plan", help="the launch plan (JSON) for a .cu file")
    p.add_argument("--compile-only", action="store_true", help="compile and bind only; no GPU")
    p.add_argument("--arch", type=arch, help="compile for this arch when there is no GPU (default sm_90)")
    p.add_argument("--gpu", type=gpu_index, help=f"CUDA device index (default {DEFAULT_GPU})")
    p.add_argument("--no-profile", action="store_true", help="stop after validation")
    p.add_argument(
        "--counters",
        action="store_true",
        help="also read the GPU's hardware counters with Nsight Compute (ncu) at the timing size and say "
        "what limits the kernel (a process of its own, after timing)",
    )
    add_torch_compile_flag(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=evaluate)
