"""Mutation testing of the judge's GPU-side code on a GPU (docs/testing.md): mutmut writes the
mutants, the GPU tests judge them.

mutmut scores a mutant by the tests that reach its function in the test process, and the code of
engine/gpu/validate.py, harness.py, device_compare.py and profile.py runs in the GPU worker, a child process it
does not see: on a CPU it calls them "no tests". So the mutants are written out here, each as a
patch of its file, and run elsewhere:

    python -m bench.gpu_mutation generate DIR [FILE...]     # needs mutmut (pip install ".[mutation]")
    python -m bench.gpu_mutation run DIR [--slots-per-gpu 6] [--budget-s 500] [--only NAMES] [--first NAMES]
    python -m bench.gpu_mutation survivors DIR RESULTS      # the diff of each survivor, for triage

`run` needs no mutmut, only the checkout and a GPU. Each slot is a copy of the checkout on one GPU;
a mutant is written into its slot's copy, the GPU selection runs there with `-x` (the first failing
test kills it) in a home of its own seeded from the unmutated run's (measured peaks, extracted
headers), and the file is put back. Mutants run in a shuffled order, so a run cut by --budget-s is
a fair sample and says how many it did not run. Unmutated control runs go first in every slot at
once (they must pass under the same load as the mutants) and again every --control-every jobs: a
control that fails means the selection is not reliable under this load, and the run says so.

The GPU probes of the peaks (the launches the measurement of bandwidth and FLOP/s uses) run only
when the peaks are not cached, so their mutants run last, alone on their GPU, in a home with no
peaks, with the roofline test that checks the peaks in front of the selection.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.named_mutants import checkout_copy, write_fresh

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILES = (
    "engine/gpu/validate.py",
    "engine/gpu/harness.py",
    "engine/gpu/device_compare.py",
    "engine/gpu/profile.py",
)

# The GPU tests that judge a mutant, fastest and most telling first (`-x` stops at the first
# failure). No test here asserts on a time: many slots share a GPU, and a timing test would kill
# mutants by noise. The baselines are a few tasks that cover the dtypes and output shapes.
SELECTION = (
    "tests/gpu/test_device_compare.py",
    "tests/gpu/test_judge_checks.py",
    "tests/gpu/test_validation_runs.py",
    "tests/gpu/test_baselines.py::test_baseline_passes_its_own_validation[vector_add]",
    "tests/gpu/test_baselines.py::test_baseline_passes_its_own_validation[gemm_fp16]",
    "tests/gpu/test_baselines.py::test_baseline_passes_its_own_validation[histogram]",
    "tests/gpu/test_baselines.py::test_baseline_passes_its_own_validation[dot_product]",
    "tests/gpu/test_baselines.py::test_baseline_passes_its_own_validation[softmax]",
    "tests/gpu/test_baselines.py::test_baseline_passes_its_own_validation[matrix_transpose]",
    "tests/gpu/test_baselines.py::test_baseline_passes_its_own_validation[layernorm]",
    "tests/gpu/test_negative_controls.py",
    "tests/gpu/test_stale_memory.py",
    "tests/gpu/test_timing.py::test_programs_are_timed_on_every_placement_asked_for",
    "tests/gpu/test_timing.py::test_placements_stay_within_their_share_of_free_memory",
    # The judge's checks no other GPU test pins: inputs unchanged after validation, the re-check after
    # timing (profile.py). The graph-mode test compares times, so it stays out (bench/named_mutants.py
    # runs it); profile.py's CPU tests are tests/gpu_side/test_graph_mode.py and test_warm_up.py.
    "tests/gpu/test_routine_checks.py::test_a_kernel_that_rewrites_its_inputs_consistently_is_wrong",
    "tests/gpu/test_routine_checks.py::test_a_stale_answer_after_timing_fails_the_re_check",
)
PEAKS_TEST = "tests/gpu/test_roofline.py::test_the_physical_limits_come_from_the_device"
# Functions (mutmut's key, without the mutant number) reached only by the peaks' measurement.
PEAK_PROBES = (
    "xǁHarnessǁ_probe",
    "xǁHarnessǁcopy_launch",
    "xǁHarnessǁtriad_launch",
    "xǁHarnessǁread_launch",
    "xǁHarnessǁwrite_launch",
    "xǁHarnessǁfma_launch",
)


@dataclass(frozen=True)
class Mutant:
    name: str  # mutmut's key, e.g. x_poison__mutmut_6 or xǁHarnessǁcompare__mutmut_3
    path: str  # the file, as in the repository
    function: str  # the key without the mutant number
    original_sha256: str  # of the file the patch applies to
    hunks: tuple[tuple[int, int, tuple[str, ...]], ...]  # lines [start, end) replaced by these
    # Of the unmutated function's source: a mutant of a function that did not change since another
    # version's run is the same mutant, and that run's verdict stands for it (`--earlier-done`).
    function_sha256: str = ""

    def apply_to(self, text: str) -> str:
        if hashlib.sha256(text.encode()).hexdigest() != self.original_sha256:
            raise ValueError(f"{self.path} is not the file {self.name} was made from: generate the mutants again")
        lines = text.splitlines(keepends=True)
        for start, end, new in sorted(self.hunks, reverse=True):
            lines[start:end] = new
        return "".join(lines)


def function_of(name: str) -> str:
    return name.rsplit("__mutmut_", 1)[0]


def _function_in(module, name: str, cls: str | None):
    """The top-level function `name`, or the method `name` of class `cls`. (mutmut's own finder takes
    the first method of that name in any class: with two classes that both have an __init__, the
    second one's mutants were written over the first's.)"""
    import libcst as cst

    for child in module.body:
        if cls is None and isinstance(child, cst.FunctionDef) and child.name.value == name:
            return child
        if cls is not None and isinstance(child, cst.ClassDef) and child.name.value == cls:
            for method in child.body.body:
                if isinstance(method, cst.FunctionDef) and method.name.value == name:
                    return method
    return None


def make_mutants(path: str, text: str) -> list[Mutant]:
    """Every mutant mutmut makes of one file, as line patches of the file."""
    import libcst as cst
    from mutmut.mutation.diff_apply import read_mutant_function
    from mutmut.mutation.file_mutation import mutate_file_contents
    from mutmut.utils.format_utils import orig_function_and_class_names_from_key

    mutated = mutate_file_contents(path, text)
    generated = cst.parse_module(mutated.code)
    original = cst.parse_module(text)
    lines = text.splitlines(keepends=True)
    digest = hashlib.sha256(text.encode()).hexdigest()
    out = []
    for name in mutated.mutant_names:
        function_name, cls = orig_function_and_class_names_from_key(name)
        function_name = function_name.rpartition(".")[-1]
        target = _function_in(original, function_name, cls)
        if target is None:
            raise ValueError(f"{path}: no function {function_name} for {name}")
        replacement = read_mutant_function(generated, name).with_changes(name=cst.Name(function_name))
        new_lines = original.deep_replace(target, replacement).code.splitlines(keepends=True)
        matcher = difflib.SequenceMatcher(a=lines, b=new_lines, autojunk=False)
        hunks = tuple(
            (i1, i2, tuple(new_lines[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
        )
        # the blank lines and comments above a function belong to its node in libcst: not to its source
        source = original.code_for_node(target.with_changes(leading_lines=()))
        function_digest = hashlib.sha256(source.encode()).hexdigest()
        out.append(Mutant(name, path, function_of(name), digest, hunks, function_digest))
    return out


def generate(out_dir: Path, files: list[str]) -> None:
    # mutmut reads its settings from the working directory even to mutate a string: give it some.
    with tempfile.TemporaryDirectory(prefix="cuda-llm-mutmut-cfg-") as cfg:
        Path(cfg, "setup.cfg").write_text("[mutmut]\nsource_paths=engine\n")
        Path(cfg, "engine").mkdir()
        here = os.getcwd()
        os.chdir(cfg)
        try:
            mutants = [m for f in files for m in make_mutants(f, (ROOT / f).read_text())]
        finally:
            os.chdir(here)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "mutants.json").write_text(json.dumps([asdict(m) for m in mutants]))
    for f, n in Counter(m.path for m in mutants).items():
        print(f"{f}: {n} mutants")
    print(f"written to {out_dir / 'mutants.json'}")


def load_mutants(out_dir: Path) -> list[Mutant]:
    raw = json.loads((out_dir / "mutants.json").read_text())
    return [
        Mutant(
            r["name"],
            r["path"],
            r["function"],
            r["original_sha256"],
            tuple((a, b, tuple(c)) for a, b, c in r["hunks"]),
            r.get("function_sha256", ""),
        )
        for r in raw
    ]


class Slot:
    """A copy of the checkout that runs one job at a time on one GPU."""

    def __init__(self, index: int, gpu: str, base: Path) -> None:
        self.index = index
        self.gpu = gpu
        self.dir = base / f"slot{index}"
        checkout_copy(self.dir)
        self.seed_home: Path | None = None
        self.proc: subprocess.Popen | None = None
        self._stamp = 0

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)

    def write(self, rel: str, text: str) -> None:
        self._stamp += 1
        write_fresh(self.dir / rel, text, 1_000_000_000 + self.index * 1_000_000 + self._stamp)

    def run(self, tests: tuple[str, ...], home: Path, timeout_s: float | None, marks: str) -> tuple[str, float, str]:
        env = {
            **os.environ,
            "PYTHONPATH": str(self.dir),
            "CUDA_VISIBLE_DEVICES": self.gpu,
            "CUDA_LLM_HOME": str(home),
            # tests/conftest.py then keeps this home's cache (the peaks, the headers) instead of a new one
            "CUDA_LLM_TEST_KEEP_HOME": "1",
        }
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "-m",
            marks,
            "--durations=12",
            *tests,
        ]
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=self.dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.proc = proc
        try:
            output, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            return "timeout", time.monotonic() - started, output
        took = time.monotonic() - started
        status = {0: "survived", 1: "killed"}.get(proc.returncode, f"exit {proc.returncode}")
        return status, took, output


def first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" - ")[0]
    return ""


def fresh_home(slot: Slot, seed: Path | None, tag: str) -> Path:
    home = slot.dir.parent / f"home-{slot.index}-{tag}"
    shutil.rmtree(home, ignore_errors=True)
    if seed is not None:  # the measured peaks and extracted headers, not the workers' logs
        # Linked, not copied: read only by the tests (the peaks file is replaced by a rename when
        # written), and every mutant gets a home, so a copy of the headers each time cost real I/O.
        shutil.copytree(seed, home, ignore=shutil.ignore_patterns("workers", "data", "config"), copy_function=os.link)
    else:
        home.mkdir()
    return home


def still_done(done: set[str], then: list[Mutant], now: list[Mutant]) -> set[str]:
    """The names in `done` (verdicts on the mutants `then`, of another version of the files) that
    are the same mutants now: the same function, unchanged, changed in the same way. Line numbers
    may differ; a function edited since, or a mutant of it, runs again."""
    before = {m.name: m for m in then}
    same = set()
    for m in now:
        old = before.get(m.name)
        if m.name not in done or old is None or not m.function_sha256:
            continue
        if old.function_sha256 == m.function_sha256 and [h[2] for h in old.hunks] == [h[2] for h in m.hunks]:
            same.add(m.name)
    return same


def not_done(
    mutants: list[Mutant], skip_done: list[Path], earlier_dir: Path | None, earlier_done: list[Path]
) -> list[Mutant]:
    """The mutants no results file has judged: `skip_done` judged these very mutants, `earlier_done`
    those of `earlier_dir` (another version of the files), whose verdicts stand where unchanged."""
    done = {e["name"] for f in skip_done for e in read_results(f)}
    if earlier_done:
        if earlier_dir is None:
            raise SystemExit("--earlier-done needs --earlier-dir: the mutants those results judged")
        earlier = {e["name"] for f in earlier_done for e in read_results(f)}
        done |= still_done(earlier, load_mutants(earlier_dir), mutants)
    return [m for m in mutants if m.name not in done]


def to_run(
    mutants: list[Mutant],
    first: list[str],
    skip_done: list[Path],
    earlier_dir: Path | None,
    earlier_done: list[Path],
) -> list[Mutant]:
    """The mutants named in `first`, whatever any results file says (a survivor that a new test now
    targets is in this DIR's results, and was skipped by name before it could be run again), and the
    others that no results file has judged."""
    named = set(first)
    return [m for m in mutants if m.name in named] + not_done(
        [m for m in mutants if m.name not in named], skip_done, earlier_dir, earlier_done
    )


def run_order(mutants: list[Mutant], first: list[str], seed: int) -> list[Mutant]:
    """Those named in `first` in that order (say, the survivors of an earlier run that new tests
    target), then the rest shuffled by `seed`: a run cut short is still a uniform sample of them."""
    named = set(first)
    rest = [m for m in mutants if m.name not in named]
    random.Random(seed).shuffle(rest)
    by_name = {m.name: m for m in mutants}
    return [by_name[n] for n in first if n in by_name] + rest


def run(args: argparse.Namespace) -> int:
    mutants = load_mutants(args.dir)
    if args.only:
        wanted = set(args.only.split(","))
        mutants = [m for m in mutants if m.name in wanted]
    first = args.first.split(",") if args.first else []
    mutants = to_run(mutants, first, args.skip_done, args.earlier_dir, args.earlier_done)
    mutants = run_order(mutants, first, args.seed)
    selection = tuple(args.tests) if args.tests else SELECTION
    probes = [m for m in mutants if m.function in PEAK_PROBES]
    normal = [m for m in mutants if m.function not in PEAK_PROBES]
    gpus = args.gpus.split(",") if args.gpus else [str(i) for i in range(gpu_count())]
    results_path = args.results or args.dir / "results.jsonl"
    log = open(results_path, "a")  # noqa: SIM115  (written by every slot's thread until the end)
    lock = threading.Lock()
    started = time.monotonic()

    def record(entry: dict) -> None:
        with lock:
            log.write(json.dumps(entry) + "\n")
            log.flush()
            print(
                f"{time.monotonic() - started:6.0f} s  {entry['status']:<9} {entry['name']} ({entry['seconds']:.0f} s)"
                f" {entry.get('failed', '')}",
                flush=True,
            )

    base = Path(tempfile.mkdtemp(prefix="cuda-llm-gpu-mutation-"))
    slots = [Slot(i, gpus[i % len(gpus)], base) for i in range(args.slots_per_gpu * len(gpus))]
    print(f"{len(mutants)} mutants ({len(probes)} of the peak probes), {len(slots)} slots on GPUs {','.join(gpus)}")

    def stop(signum: int, _frame: object) -> None:
        """Killed from outside (a time limit): the slots' test sessions go too, not left on the GPUs."""
        for slot in slots:
            slot.kill()
        log.flush()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)

    # Each GPU's first slot measures the peaks once (the roofline test that checks them); every home
    # on that GPU starts from a copy of that one. The unmutated selection runs as a control job every
    # --control-every mutants, under the load the mutants run under.
    def seed(slot: Slot) -> dict:
        home = fresh_home(slot, None, "seed")
        status, took, output = slot.run(tuple(args.seed_tests), home, None, args.marks)
        entry = {"name": f"seed-gpu{slot.gpu}", "path": "", "function": "control", "status": status, "seconds": took}
        if status != "survived":
            entry["failed"] = first_failure(output) or output[-2000:]
        for other in slots:
            if other.gpu == slot.gpu:
                other.seed_home = home
        return entry

    def control(slot: Slot, tag: str) -> dict:
        status, took, output = slot.run(selection, fresh_home(slot, slot.seed_home, tag), timeout_s, args.marks)
        entry = {"name": f"control-{tag}", "path": "", "function": "control", "status": status, "seconds": took}
        entry["failed" if status != "survived" else "durations"] = output[-2500:]
        return entry

    firsts = {s.gpu: s for s in reversed(slots)}
    with concurrent.futures.ThreadPoolExecutor(len(firsts)) as pool:
        seeds = list(pool.map(seed, firsts.values()))
    for entry in seeds:
        record(entry)
    if any(c["status"] != "survived" for c in seeds):
        print("the peaks could not be measured on some GPU: nothing measured")
        return 1
    timeout_s = args.mutant_timeout_s
    queue = list(normal)
    queue_lock = threading.Lock()
    jobs_done = 0
    cut = time.monotonic() + args.budget_s

    def next_job() -> Mutant | None:
        with queue_lock:
            return queue.pop(0) if queue and time.monotonic() < cut else None

    def one(slot: Slot, m: Mutant, tests: tuple[str, ...], seed: Path | None) -> dict:
        original = (slot.dir / m.path).read_text()
        slot.write(m.path, m.apply_to(original))
        try:
            status, took, output = slot.run(tests, fresh_home(slot, seed, "mutant"), timeout_s, args.marks)
        finally:
            slot.write(m.path, original)
        entry = {"name": m.name, "path": m.path, "function": m.function, "status": status, "seconds": took}
        if status == "killed":
            entry["failed"] = first_failure(output)
        elif status.startswith("exit"):
            entry["failed"] = output[-1500:]
        return entry

    def worker(slot: Slot) -> None:
        nonlocal jobs_done
        while (m := next_job()) is not None:
            record(one(slot, m, selection, slot.seed_home))
            with queue_lock:
                jobs_done += 1
                due = args.control_every and jobs_done % args.control_every == 0
            if due:
                record(control(slot, f"after-{jobs_done}"))

    with concurrent.futures.ThreadPoolExecutor(len(slots)) as pool:
        list(pool.map(worker, slots))

    # The peak probes: one slot per GPU, nothing else on it, no peaks in the home.
    probe_queue = list(probes)

    def probe_worker(slot: Slot) -> None:
        while True:
            with queue_lock:
                if not probe_queue or time.monotonic() >= cut:
                    return
                m = probe_queue.pop(0)
            record(one(slot, m, (PEAKS_TEST, *selection), None))

    with concurrent.futures.ThreadPoolExecutor(len(firsts)) as pool:
        list(pool.map(probe_worker, firsts.values()))
    log.close()
    not_run = len(queue) + len(probe_queue)
    summarize(results_path, not_run)
    shutil.rmtree(base, ignore_errors=True)
    return 0


def gpu_count() -> int:
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def read_results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarize(results_path: Path, not_run: int) -> None:
    entries = read_results(results_path)
    controls = [e for e in entries if e["function"] == "control"]
    latest = {e["name"]: e for e in entries if e["function"] != "control"}
    by_file: dict[str, Counter] = {}
    for e in latest.values():
        by_file.setdefault(e["path"], Counter())[e["status"].split()[0]] += 1
    bad = [c for c in controls if c["status"] != "survived"]
    print(f"controls: {len(controls)} run, {len(bad)} failed" + (f": {[c['name'] for c in bad]}" if bad else ""))
    for path, counts in sorted(by_file.items()):
        print(f"{path}: {sum(counts.values())} run: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    survivors = Counter(e["function"] for e in latest.values() if e["status"] == "survived")
    print("survivors by function: " + ", ".join(f"{f} {n}" for f, n in survivors.most_common()))
    print(f"not run (budget): {not_run}")


def survivors(args: argparse.Namespace) -> int:
    mutants = {m.name: m for m in load_mutants(args.dir)}
    entries = read_results(args.results)
    latest = {e["name"]: e for e in entries if e["function"] != "control"}
    for name, e in sorted(latest.items()):
        if e["status"] not in args.status.split(","):
            continue
        m = mutants[name]
        text = (ROOT / m.path).read_text()
        diff = difflib.unified_diff(text.splitlines(), m.apply_to(text).splitlines(), m.path, m.path, n=1, lineterm="")
        print(f"## {name} ({e['status']})\n" + "\n".join(diff) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write the mutants of FILEs (needs mutmut)")
    g.add_argument("dir", type=Path)
    g.add_argument("files", nargs="*", default=list(DEFAULT_FILES))
    r = sub.add_parser("run", help="run the mutants on this host's GPUs")
    r.add_argument("dir", type=Path)
    r.add_argument("--slots-per-gpu", type=int, default=6)
    r.add_argument("--gpus", help="GPU indices (default: every GPU)")
    r.add_argument("--budget-s", type=float, default=480.0, help="start no mutant after this long")
    r.add_argument("--control-every", type=int, default=50, help="an unmutated run after every N mutants")
    r.add_argument("--only", help="comma-separated mutant names")
    r.add_argument(
        "--first",
        help="comma-separated mutant names run before the others, in this order, even where a results file judged them",
    )
    r.add_argument("--seed", type=int, default=0)
    r.add_argument(
        "--skip-done", type=Path, nargs="*", default=[], help="results files whose mutants are not run again"
    )
    r.add_argument("--earlier-dir", type=Path, help="the mutants of another version of the files, as DIR")
    r.add_argument(
        "--earlier-done",
        type=Path,
        nargs="*",
        default=[],
        help="results of --earlier-dir's mutants: those of functions unchanged since are not run again",
    )
    r.add_argument("--mutant-timeout-s", type=float, default=240.0, help="a mutant's run past this is a timeout")
    r.add_argument("--results", type=Path)
    r.add_argument("--tests", nargs="+", help="the tests instead of the GPU selection (to try the driver on a CPU)")
    r.add_argument("--marks", default="gpu", help="the pytest -m expression")
    r.add_argument("--seed-tests", nargs="+", default=[PEAKS_TEST], help="what runs first in each GPU's home")
    s = sub.add_parser("survivors", help="print the diff of each survivor")
    s.add_argument("dir", type=Path)
    s.add_argument("results", type=Path)
    s.add_argument("--status", default="survived")
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.dir, args.files)
        return 0
    if args.command == "run":
        return run(args)
    return survivors(args)


if __name__ == "__main__":
    sys.exit(main())
