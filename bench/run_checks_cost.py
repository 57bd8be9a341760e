"""What the checks that keep runs independent cost a round (issue 43, items 1-4): outputs poisoned
and device state put back before every run, timed runs included, and every program's inputs checked
after timing (ValidationSettings.independent_runs). A round of 8 correct candidates per task
(bench/round_tasks.py's rounds: each task's baseline at 8 launch shapes) is judged on GPU 0 by two
workers, one with the checks and one without, rounds alternating between them after a warm-up round
each; prints the device, each task's median round time (and its validation and timing parts) with
and without, the difference, and the rounds summed; and, per task and mode, the samples the round's
8 candidates took (summed), the timing jobs' sample phase, and that phase over those samples (the
baseline's samples are in the phase, not in the count): whether the checks cost more samples or
more time per sample.

    python -m bench.run_checks_cost [--tasks vector_add,softmax,...] [--repeats 3] [--json F] [--programs]

`--programs` also prints, for each task and mode, every timed program of the last round: its median,
replays per sample, samples kept and discarded, the pooled spread the stop rule judged, the placements
and the spread within them (where the extra samples of one mode go).

`--tasks all` takes every built-in task with a one-launch baseline (the rounds' shape rule).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys

from bench.round_gpus import ProgramStop, RoundResult, one_round
from bench.round_tasks import TASKS, variants
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.task import TaskLibrary

MODES = ("with checks", "without")


def settings_for(checks: bool) -> Settings:
    base = Settings()
    return dataclasses.replace(base, validation=dataclasses.replace(base.validation, independent_runs=checks))


def task_names(text: str) -> list[str]:
    if text != "all":
        return [t for t in text.split(",") if t]
    names = []
    for name in TaskLibrary().names():
        try:
            variants(name)
        except (AssertionError, ValueError):
            continue  # several launches, or a grid the shape rule does not know
        names.append(name)
    return names


Run = tuple[float, float, float, int, float]  # round, validation, timing (s), samples, sample phase (s)


def sampling(r: RoundResult) -> tuple[int, float]:
    """The samples (kept and discarded) of the round's timed programs, and the seconds its timing
    jobs spent in their sample phase."""
    return sum(p.samples + p.discarded for p in r.programs), sum(ph.get("sample", 0.0) for ph in r.profile_phases_s)


Programs = dict[str, dict[str, tuple[ProgramStop, ...]]]  # task -> mode -> the last round's timed programs


async def measure(names: list[str], repeats: int) -> tuple[dict[str, dict[str, list[Run]]], Programs, str]:
    from cuda_llm.engine.fsr.judging import open_environment

    envs = {}
    try:
        for mode in MODES:
            envs[mode] = await open_environment(settings_for(mode == MODES[0]), gpus="0")
            if envs[mode].gpu is None:
                raise SystemExit(f"bench needs a GPU: {envs[mode].notice}")
        device = envs[MODES[0]].gpu.describe()
        out: dict[str, dict[str, list[Run]]] = {}
        last: Programs = {}
        for name in names:
            cands = variants(name)
            judges = {mode: envs[mode].judge(TaskLibrary().get(name), settings_for(mode == MODES[0])) for mode in MODES}
            for mode in MODES:
                await one_round(judges[mode], cands)  # warm-up: references, baseline, compilers
            out[name] = {mode: [] for mode in MODES}
            last[name] = {}
            for _ in range(repeats):
                for mode in MODES:
                    r = await one_round(judges[mode], cands)
                    out[name][mode].append((r.total_s, r.validate_s, r.profile_s, *sampling(r)))
                    last[name][mode] = r.programs
        return out, last, device
    finally:
        for env in envs.values():
            await env.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", default=",".join(TASKS), help="comma-separated, or 'all'")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json")
    p.add_argument("--programs", action="store_true", help="every timed program of each task's last round")
    args = p.parse_args(argv)
    names = task_names(args.tasks)
    runs, last, device = asyncio.run(measure(names, args.repeats))
    print(f"device: {device}; {args.repeats} rounds of 8 candidates per task and mode, medians")
    sums = {mode: 0.0 for mode in MODES}
    rows = {}
    for name in names:
        med = {mode: [statistics.median(x[i] for x in runs[name][mode]) for i in range(5)] for mode in MODES}
        on, off = med[MODES[0]], med[MODES[1]]
        for mode in MODES:
            sums[mode] += med[mode][0]
        rows[name] = med
        print(
            f"{name:>24}: round {on[0]:.2f} s with the checks, {off[0]:.2f} s without ({on[0] / off[0] - 1:+.1%}); "
            f"validation {on[1]:.2f} / {off[1]:.2f} s, timing {on[2]:.2f} / {off[2]:.2f} s"
        )
        per = {mode: med[mode][4] / med[mode][3] * 1e6 if med[mode][3] else 0.0 for mode in MODES}
        print(
            f"{'':>24}  samples {on[3]:.0f} / {off[3]:.0f}; sample phase {on[4]:.2f} / {off[4]:.2f} s, "
            f"{per[MODES[0]]:.0f} / {per[MODES[1]]:.0f} us a sample"
        )
        if args.programs:
            for mode in MODES:
                for prog in last[name][mode]:
                    within = "-" if prog.placement_spread is None else f"{prog.placement_spread:.2%}"
                    print(
                        f"{'':>24}    {mode:>11} {prog.label:>28}: {prog.median_us:9.2f} us, K={prog.replays:<4} "
                        f"{prog.samples:3d} kept + {prog.discarded} discarded, pooled spread {prog.rel_iqr:.2%}, "
                        f"{prog.placements} placements, within {within}"
                    )
    on, off = sums[MODES[0]], sums[MODES[1]]
    print(f"{'all rounds summed':>24}: {on:.2f} s with the checks, {off:.2f} s without ({on / off - 1:+.1%})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": device, "repeats": args.repeats, "rounds": runs, "medians": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
