"""`cuda-llm eval TASK FILE`: the three checks on one candidate (a reply in Markdown, or a .cu with
--plan), printed as a readable report or JSON. Exit code 0 when the candidate is correct (or compiled
in compile-only mode), 1 when it fails, 2 for a usage error."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from cuda_llm.engine.cli.output import error, print_json


def _load_candidate(args: argparse.Namespace, judge):
    from cuda_llm.engine.contract.errors import FormatError
    from cuda_llm.engine.contract.plan import parse_plan
    from cuda_llm.engine.judge.judgement import Candidate, Judgement

    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SystemExit(_usage(f"no such file: {path}")) from None
    except UnicodeDecodeError:
        return Judgement(path.name, "format_error", f"{path} is not UTF-8 text")
    if args.plan or path.suffix in (".cu", ".cuh"):
        if not args.plan:
            raise SystemExit(_usage(f"{path} is CUDA source: give its launch plan with --plan plan.json"))
        try:
            plan = parse_plan(Path(args.plan).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SystemExit(_usage(f"no such file: {args.plan}")) from None
        except FormatError as exc:
            return Judgement(path.name, "format_error", str(exc).splitlines()[0], detail=str(exc))
        return Candidate(path.name, text, plan, origin="user")
    return judge.parse(path.name, text, origin="user")


def _usage(message: str) -> int:
    error(message)
    return 2


def render(j, device: str) -> str:
    lines = [f"candidate {j.label} on {device}"]
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
        speed = f", {f.speedup:.2f}x the baseline" if f.speedup is not None else ""
        lines.append(
            f"profile:  {t.median_us:.2f} us median (IQR {t.iqr_us:.2f}, {t.samples} samples"
            + (f" over {t.placements} buffer placements" if t.placements > 1 else "")
            + f", {t.mode}"
            + (f" x{t.replays}" if t.replays > 1 else "")
            + f"){speed}"
        )
        lines.append(
            f"          {f.gbps:.0f} GB/s, {f.gflops:.0f} GFLOP/s; roofline floor {f.floor_us:.1f} us "
            f"({f.bound}-bound): {f.roofline_pct:.0f}% of it"
        )
    for w in j.warnings:
        lines.append(f"note:     {w}")
    if j.status in ("format_error",) and j.detail:
        lines.append("format:   " + j.detail.replace("\n", "\n          "))
    lines.append(f"verdict:  {j.status.replace('_', ' ')}: {j.message}")
    return "\n".join(lines)


async def _evaluate(args: argparse.Namespace) -> int:
    from cuda_llm.engine.errors import UserError
    from cuda_llm.engine.judge.environment import open_environment
    from cuda_llm.engine.judge.judgement import Judgement
    from cuda_llm.engine.settings import Settings
    from cuda_llm.engine.task import TaskLibrary

    settings = Settings()
    task = TaskLibrary().get(args.task)
    env = await open_environment(settings, args.arch, args.compile_only, args.gpu)
    if env.notice:
        print(f"cuda-llm: {env.notice}", file=sys.stderr)
    try:
        judge = env.judge(task, settings)
        cand = _load_candidate(args, judge)
        if isinstance(cand, Judgement):
            result = cand
        else:
            result = await judge.judge(cand, profile=not args.no_profile)
    except UserError as exc:
        error(str(exc))
        return 2
    finally:
        await env.close()
    device = f"{env.device.name} ({env.arch})" if env.device else f"no GPU, compile-only ({env.arch})"
    if args.json:
        from cuda_llm.engine import serialize

        print_json(
            {
                "task": task.name,
                "device": device,
                "arch": env.arch,
                "compile_only": env.gpu is None,
                "judgement": serialize.dump(result),
            }
        )
    else:
        print(render(result, device))
    return 0 if result.status in ("correct", "compiled") else 1


def evaluate(args: argparse.Namespace) -> int:
    return asyncio.run(_evaluate(args))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="judge one candidate: compile, validate, profile")
    p.add_argument("task", help="task name or folder")
    p.add_argument("file", help="a model reply (.md) or CUDA source (.cu, with --plan)")
    p.add_argument("--plan", help="the launch plan (JSON) for a .cu file")
    p.add_argument("--compile-only", action="store_true", help="compile and bind only; no GPU")
    p.add_argument("--arch", help="compile for this arch when there is no GPU (default sm_90)")
    p.add_argument("--gpu", default="0", help="CUDA device index (default 0)")
    p.add_argument("--no-profile", action="store_true", help="stop after validation")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=evaluate)
