"""The judge's named mutants (docs/testing.md): each is a one-line break of a check the judge relies
on; the tests named beside it must fail on it. Each mutant is applied to a copy of the checkout (the
checkout itself is never touched), and the copy's tests run with PYTHONPATH pointing at the copy.

    python bench/named_mutants.py            # the CPU mutants, with the CPU tests that kill them
    python bench/named_mutants.py --gpu      # the device-side ones, with GPU tests (needs a GPU)

Prints one line a mutant (killed / SURVIVED / not applied) and exits 1 if any survived or could not
be applied. First the unmutated copy runs every listed test: they must pass, or nothing is measured.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple[str, ...]
    gpu: bool = False


CHECKS = "tests/judge/test_checks.py"
ROUTINE = "tests/gpu/test_routine_checks.py"
MUTANTS = (
    Mutant(
        "compare kernel's tolerance doubled",
        "engine/gpu/harness.py",
        "double bound = __dadd_rn(__dmul_rn(base, rtol), atol);",
        "double bound = 2.0 * __dadd_rn(__dmul_rn(base, rtol), atol);",
        ("tests/gpu/test_device_compare.py", "tests/gpu/test_judge_checks.py"),
        gpu=True,
    ),
    Mutant(
        "outputs poisoned with 0 (device)",
        "engine/gpu/validate.py",
        "ctx.fill32(buf, _poison_word(dtype))",
        "ctx.fill32(buf, 0)",
        ("tests/gpu/test_judge_checks.py",),
        gpu=True,
    ),
    Mutant(
        "a kernel that wrote its inputs passes",
        "engine/gpu/validate.py",
        "passed=wrong == 0 and problem is None,",
        "passed=wrong == 0,",
        (f"{ROUTINE}::test_a_kernel_that_rewrites_its_inputs_consistently_is_wrong",),
        gpu=True,
    ),
    Mutant(
        "no re-check after timing",
        "engine/gpu/profile.py",
        "            if wrong:\n                return (\n",
        "            if False:\n                return (\n",
        (f"{ROUTINE}::test_a_stale_answer_after_timing_fails_the_re_check",),
        gpu=True,
    ),
    Mutant(
        "graph samples not divided by their replays (device)",
        "engine/gpu/profile.py",
        "e.samples.append(ms * 1000 / e.replays)",
        "e.samples.append(ms * 1000)",
        (f"{ROUTINE}::test_a_short_plan_is_timed_as_a_graph_per_replay",),
        gpu=True,
    ),
    Mutant(
        "graph samples not divided by their replays",
        "engine/gpu/profile.py",
        "e.samples.append(ms * 1000 / e.replays)",
        "e.samples.append(ms * 1000)",
        ("tests/gpu_side/test_graph_mode.py",),
    ),
    Mutant(
        "outputs poisoned with 0",
        "engine/gpu/validate.py",
        "ctx.fill32(buf, _poison_word(dtype))",
        "ctx.fill32(buf, 0)",
        (f"{CHECKS}::test_the_poison_written_is_the_poison_recognised",),
    ),
    Mutant(
        "half outputs poisoned with 0",
        "engine/gpu/validate.py",
        "ctx.fill16(buf, d.poison or HALF_POISON)",
        "ctx.fill16(buf, 0)",
        (f"{CHECKS}::test_the_poison_written_is_the_poison_recognised",),
    ),
    Mutant(
        "a failed re-check after timing keeps 'correct'",
        "engine/judge/judge.py",
        'status, message = "wrong", t.state_check',
        "message = t.state_check",
        (CHECKS,),
    ),
    Mutant(
        "a suspect time keeps 'correct'",
        "engine/judge/judge.py",
        'status = "suspect"\n',
        "pass\n",
        (CHECKS,),
    ),
    Mutant(
        "suspect_physical_share 1.03 -> 1.09",
        "engine/core/settings.py",
        "suspect_physical_share: float = 1.03",
        "suspect_physical_share: float = 1.09",
        (CHECKS, "tests/judge/test_metrics.py"),
    ),
    Mutant(
        "the decoded-bytes cap loosened 4x",
        "engine/llm/bounded.py",
        "if decoded > self._limit:",
        "if decoded > 4 * self._limit:",
        ("tests/llm/test_response_cap.py", "tests/llm/test_encoded_replies.py"),
    ),
    Mutant(
        "vector_add's tolerance 1e-6 -> 1e-3",
        "tasks/vector_add/task.toml",
        "rtol = 1e-6",
        "rtol = 1e-3",
        (CHECKS,),
    ),
)


def write_fresh(path: Path, text: str, stamp: int) -> None:
    """Write a source file with an mtime (seconds) of its own: Python checks a .pyc by the source's
    size and whole-second mtime, and a mutant of the same size written within the second would not
    be seen."""
    path.write_text(text)
    os.utime(path, (stamp, stamp))


def checkout_copy(dest: Path) -> None:
    """The checkout's files as they are now (tracked and untracked, not ignored), without .git; where
    git lists nothing (a copy of the tree on a GPU machine without .git, or an archive of an older
    commit unpacked in an ignored folder), the whole tree less caches and wheels."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
    except (OSError, subprocess.CalledProcessError):
        listed = []
    if not any(listed):  # no git, or a tree inside another checkout's ignored folder (an old commit's archive)
        skip = shutil.ignore_patterns(".git", ".venv", ".device-wheels", "__pycache__", "*.egg-info", ".*cache")
        shutil.copytree(ROOT, dest, ignore=skip)
        return
    for rel in filter(None, listed):
        src = ROOT / os.fsdecode(rel)
        if src.is_file():
            target = dest / os.fsdecode(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def run_tests(copy: Path, tests: tuple[str, ...], gpu: bool) -> tuple[int, float]:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    marks = ["-m", "gpu"] if gpu else ["-m", "not gpu"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider", *marks, *tests]
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True)
    return done.returncode, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="the device-side mutants (GPU tests) instead")
    parser.add_argument("--only", help="run the mutants whose name contains this")
    args = parser.parse_args()
    mutants = [m for m in MUTANTS if m.gpu == args.gpu and (not args.only or args.only in m.name)]
    bad = 0
    with tempfile.TemporaryDirectory(prefix="cuda-llm-mutant-") as tmp:
        copy = Path(tmp) / "checkout"
        checkout_copy(copy)
        for gpu in sorted({m.gpu for m in mutants}):
            tests = tuple(dict.fromkeys(t for m in mutants if m.gpu == gpu for t in m.tests))
            rc, took = run_tests(copy, tests, gpu)
            print(f"unmutated ({'GPU' if gpu else 'CPU'} tests): exit {rc} in {took:.0f} s", flush=True)
            if rc != 0:
                print("  the tests fail without a mutant: nothing measured")
                return 1
        for number, m in enumerate(mutants):
            path = copy / m.path
            original = path.read_text()
            if original.count(m.old) != 1:
                print(f"NOT APPLIED  {m.name}: {m.old!r} occurs {original.count(m.old)} times in {m.path}")
                bad += 1
                continue
            write_fresh(path, original.replace(m.old, m.new), 1_000_000_000 + 2 * number)
            try:
                rc, took = run_tests(copy, m.tests, m.gpu)
            finally:
                write_fresh(path, original, 1_000_000_001 + 2 * number)
            state = "killed" if rc == 1 else ("SURVIVED" if rc == 0 else f"ERROR (pytest exit {rc})")
            bad += state != "killed"
            print(f"{state:<9}  {m.name} ({m.path}) in {took:.0f} s by {', '.join(m.tests)}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
