"""KernelBench's own evaluation beside ours: the same problem file, the same kernel, one GPU.

KernelBench (github.com/ScalingIntelligence/KernelBench, MIT) judges a `ModelNew` module against a
problem's `Model` with `eval_kernel_against_ref` (src/kernelbench/eval.py): it builds ModelNew's CUDA
with torch.utils.cpp_extension.load_inline (nvcc through ninja), draws `get_inputs()` on the host for
each correctness trial, compares with torch.allclose (fp32: atol = rtol = 1e-4), then times ModelNew
and the reference with CUDA events, each call after an L2 flush. We judge the same file with
`cuda-llm tasks import` and `cuda-llm eval` of one of our replies. This bench wraps that reply's
CUDA source, unchanged, into a ModelNew (a C++ launcher that does what the reply's launch plan says)
and runs, each side in a child process of its own so that its host memory is its own:

1. KernelBench: `eval_kernel_against_ref(problem, ModelNew, measure_performance=True,
   timing_method="cuda_event")` with the trial counts of KernelBench's scripts (scripts/run_and_check.py,
   eval_from_generations.py, generate_and_eval_single_sample.py: 5 correctness trials, 100 timed
   trials; the function's own defaults, 1 and 10 with no timing, are not what its runs use);
2. ours: `cuda-llm tasks import` of the file, then `cuda-llm eval TASK REPLY --json`.

Printed: the device, each side's wall time (and its parts), peak host RSS (the largest process of
the side's tree, and the tree's summed RSS sampled every 0.2 s), the kernel's latency as each side
measures it, the verdicts, and what each side checks (cases, sizes, tolerance). Asserts nothing.

    bash bench/kernelbench_copy.sh /path/to/KernelBench      # once: src/ and level1 into .kernelbench/
    python -m bench.kernelbench_side_by_side [--problem level1/26_GELU_] [--json FILE]
    python -m bench.kernelbench_side_by_side --dry-run          # no GPU: import, write ModelNew, stop

KernelBench is imported from the checkout by path, unchanged. Its eval module also imports modules
its evaluation never calls (requests, and through kernelbench.utils: python-dotenv, tqdm, openai,
litellm, for its LLM clients); where one is not installed, a placeholder stands in whose every
attribute raises if called, except dotenv.load_dotenv, which reads no .env file and returns False.
pydantic, numpy and torch are needed for real.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.proc_status import descendants, status_kib

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_KERNELBENCH = ROOT / ".kernelbench"
DEFAULT_PROBLEM = "level1/26_GELU_"
REPLIES = ROOT / "examples" / "pytorch" / "replies"
KB_REPLIES = Path(__file__).resolve().parent / "kernelbench_replies"

# KernelBench's scripts' settings (scripts/run_and_check.py ScriptConfig): what its published runs use.
KB_CORRECT_TRIALS = 5
KB_PERF_TRIALS = 100
KB_SEED = 42  # eval_kernel_against_ref's default seed_num
# Per-side limits, so that one device call of about four minutes holds both sides: KernelBench's
# side compiles with nvcc (30-60 s) and draws 6.4 GB of torch.rand on one CPU core per trial.
KB_TIMEOUT_S = 170
OURS_TIMEOUT_S = 90
POLL_S = 0.2

# Modules that KernelBench's eval path imports but never calls (its LLM clients and helpers); a
# placeholder stands in for the ones not installed. pydantic, numpy and torch it does call.
KB_UNUSED_IMPORTS = ("requests", "dotenv", "tqdm", "openai", "litellm")


@dataclass(frozen=True)
class Pairing:
    """Our hand-written reply for a KernelBench problem, and the renames its plan needs there."""

    reply: Path
    renames: dict[str, str] = field(default_factory=dict)  # our example's size/buffer name -> the file's


# 26_GELU_ calls torch.nn.functional.gelu(x), the erf form: the example reply's tanh form differs by
# up to 1.5e-4 on the file's [0, 1) inputs, which KernelBench's allclose (1e-4 + 1e-4 * |expected|)
# lets pass and our rule (1e-4 of the larger of |expected| and the output's RMS) refuses
# (`--reply .../elementwise_gelu.md --rename features=dim` shows both verdicts); the pairing is the
# same kernel with the erf line.
PAIRINGS = {
    "level1/26_GELU_": Pairing(KB_REPLIES / "26_GELU_.md"),
    "level1/23_Softmax": Pairing(
        REPLIES / "softmax_rows.md", {"rows": "batch_size", "row_length": "dim", "logits": "x"}
    ),
}


class BenchError(Exception):
    """A mistake the user can fix: one line, exit 2."""


# ---------------------------------------------------------------- the reply and its ModelNew


def adapt_reply(text: str, renames: dict[str, str]) -> str:
    """The reply with names in its launch plan renamed (the CUDA block untouched)."""
    if not renames:
        return text
    fence = re.compile(r"(```json[^\n]*\n)(.*?)(\n```)", re.S)
    match = fence.search(text)
    if match is None:
        raise BenchError("the reply has no ```json launch plan block to rename sizes in")
    plan = match.group(2)
    for old, new in renames.items():
        plan = re.sub(rf"\b{re.escape(old)}\b", new, plan)
    return text[: match.start(2)] + plan + text[match.end(2) :]


def parse_renames(items: list[str]) -> dict[str, str]:
    renames = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old.isidentifier() or not new.isidentifier():
            raise BenchError(f"--rename {item!r}: write OLD=NEW, two names (e.g. features=dim)")
        renames[old] = new
    return renames


_C_POINTER = {"float32": "float", "float64": "double", "int32": "int"}
_C_INT = {None: "int", "int32": "int", "int64": "long long", "uint32": "unsigned int", "uint64": "unsigned long long"}
_TORCH_DTYPE = {"float32": "torch.float32", "float64": "torch.float64", "int32": "torch.int32"}


def _literal(source: str) -> str:
    """A Python literal for the source: a raw triple-quoted string when that is exact, else repr."""
    if "'''" not in source and not source.endswith("\\") and "\r" not in source:
        return "r'''" + source + "'''"
    return repr(source)


def modelnew_source(task_folder: Path, reply_text: str, label: str) -> str:
    """KernelBench's ModelNew for a task `cuda-llm tasks import` made and one of our replies.

    The reply's CUDA block goes into load_inline's CUDA source as it is; a C++ launcher per launch of
    its plan calls its kernel with the plan's grid, block, shared bytes and arguments, evaluated in
    forward from the input tensors' shapes, on PyTorch's current stream. Supported: modules without
    parameters whose sizes each appear as one dimension of an input, plans of buffers and integer
    expressions, no scratch buffers."""
    from cuda_llm.engine.contract.reply import parse_reply
    from cuda_llm.engine.task.loader import load_task

    task = load_task(task_folder)
    meta = tomllib.loads((task_folder / "task.toml").read_text(encoding="utf-8")).get("pytorch", {})
    if meta.get("parameters") or meta.get("fixed") or meta.get("tuples"):
        raise BenchError(f"{task.name}: modules with parameters or fixed constants are not wrapped by this bench")
    reply = parse_reply(reply_text)
    if reply.plan.scratch:
        raise BenchError("the reply's plan has scratch buffers: not wrapped by this bench")
    inputs = [task.buffer(n) for n in meta.get("inputs", [])]
    outputs = [task.buffer(n) for n in meta.get("outputs", [])]
    if None in inputs or None in outputs or not outputs:
        raise BenchError(f"{task.name}: task.toml's [pytorch] inputs/outputs do not name its buffers")
    buffers = {b.name: b for b in (*inputs, *outputs) if b is not None}
    for b in buffers.values():
        if b.dtype not in _C_POINTER:
            raise BenchError(f"buffer {b.name} is {b.dtype}: this bench wraps {', '.join(_C_POINTER)} buffers")
    # Each size from the first input dimension that is exactly that size.
    where: dict[str, str] = {}
    for b in inputs:
        assert b is not None
        for axis, dim in enumerate(b.shape):
            if dim.isidentifier() and dim not in where:
                where[dim] = f"{b.name}.shape[{axis}]"
    missing = [s.name for s in task.sizes if s.name not in where]
    if missing:
        raise BenchError(f"sizes {missing} are no input's plain dimension: not wrapped by this bench")
    non_sizes = [s for s in task.scalars if not s.is_size]
    if non_sizes:
        raise BenchError(f"scalars {[s.name for s in non_sizes]} that are not sizes: not wrapped by this bench")

    launchers, cpp_decls, calls = [], [], []
    for k, launch in enumerate(reply.plan.launches):
        params, c_args, py_args = [], [], []
        for j, arg in enumerate(launch.args):
            if arg.text in buffers:
                b = buffers[arg.text]
                params.append(f"torch::Tensor a{j}")
                c_args.append(f"a{j}.data_ptr<{_C_POINTER[b.dtype]}>()")
                py_args.append(b.name)
            else:
                params.append(f"int64_t a{j}")
                c_args.append(f"({_C_INT.get(arg.int_type, 'long long')})a{j}")
                py_args.append(f"({arg.text})")
        grid = [*launch.grid, *["1"] * (3 - len(launch.grid))]
        block = [*launch.block, *["1"] * (3 - len(launch.block))]
        name = f"launch_{k}"
        dims = ["int64_t gx, int64_t gy, int64_t gz", "int64_t bx, int64_t by, int64_t bz", "int64_t shared"]
        signature = f"void {name}({', '.join([*params, *dims])})"
        launchers.append(
            f"{signature}\n{{\n"
            f"    {launch.kernel}<<<dim3(gx, gy, gz), dim3(bx, by, bz), shared, at::cuda::getCurrentCUDAStream()>>>(\n"
            f"        {', '.join(c_args)});\n"
            "    C10_CUDA_KERNEL_LAUNCH_CHECK();\n}\n"
        )
        cpp_decls.append(signature + ";")
        values = ", ".join(f"({e})" for e in (*grid, *block, launch.shared_bytes))
        calls.append(f"        _ext.{name}({', '.join([*py_args, values])})")

    sizes = "\n".join(f"        {s.name} = {where[s.name]}" for s in task.sizes)
    first = inputs[0].name if inputs and inputs[0] is not None else "None"
    allocs = "\n".join(
        f"        {b.name} = torch.empty(({', '.join(f'({d})' for d in b.shape)},), "
        f"dtype={_TORCH_DTYPE[b.dtype]}, device={first}.device)"
        for b in outputs
        if b is not None
    )
    contiguous = "\n".join(f"        {b.name} = {b.name}.contiguous()" for b in inputs if b is not None)
    names = ", ".join(b.name for b in inputs if b is not None)
    returned = ", ".join(b.name for b in outputs if b is not None)
    ext_name = "cuda_llm_" + re.sub(r"\W", "_", label)
    return f'''"""KernelBench's ModelNew for {task.name}: the CUDA of one cuda-llm reply, unchanged, behind load_inline.

Written by bench/kernelbench_side_by_side.py. REPLY_CUDA is the reply's ```cuda block as it is; the
launchers below it do what the reply's launch plan says, on PyTorch's current stream."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

REPLY_CUDA = {_literal(reply.source)}

LAUNCHERS = {_literal("".join(launchers))}

HEADERS = "#include <torch/extension.h>\\n#include <ATen/cuda/CUDAContext.h>\\n#include <c10/cuda/CUDAException.h>\\n"
CUDA_SOURCE = HEADERS + REPLY_CUDA + "\\n" + LAUNCHERS
CPP_SOURCE = {_literal(chr(10).join(cpp_decls) + chr(10))}

_ext = load_inline(
    name={ext_name!r},
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions={[f"launch_{k}" for k in range(len(launchers))]!r},
    verbose=False,
)


def cdiv(a, b):
    return -(-a // b)


class ModelNew(nn.Module):
    def __init__(self, *init_inputs):
        super().__init__()

    def forward(self, {names}):
{contiguous}
{sizes}
{allocs}
{chr(10).join(calls)}
        return {returned}
'''


def reply_cuda_of(modelnew: str) -> str:
    """The REPLY_CUDA literal of a generated ModelNew source (what a test compares with the reply)."""
    for node in ast.parse(modelnew).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "REPLY_CUDA" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise ValueError("no REPLY_CUDA assignment")


# ---------------------------------------------------------------- KernelBench, loaded by path


def _placeholder(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__doc__ = f"stands in for {name}, not installed: KernelBench's evaluation never calls it"

    def missing(attr: str):
        if name == "dotenv" and attr == "load_dotenv":
            return lambda *a, **k: False  # no .env is read: KernelBench reads only API keys from one
        if attr.startswith("__"):
            raise AttributeError(attr)

        def absent(*args: object, **kwargs: object) -> object:
            raise RuntimeError(f"{name}.{attr} is not installed here (a placeholder for KernelBench's import)")

        return absent

    module.__getattr__ = missing  # type: ignore[method-assign]
    return module


def kernelbench_src(checkout: Path) -> Path:
    """The folder that holds the kernelbench package, or a one-line BenchError."""
    src = checkout / "src"
    if not (src / "kernelbench" / "eval.py").is_file():
        raise BenchError(
            f"{checkout} has no src/kernelbench/eval.py: copy a KernelBench checkout there with "
            f"`bash bench/kernelbench_copy.sh /path/to/KernelBench`, or pass --kernelbench DIR"
        )
    return src


def load_kernelbench(checkout: Path) -> tuple[types.ModuleType, list[str]]:
    """KernelBench's eval module, imported from the checkout; and the placeholders it needed."""
    src = kernelbench_src(checkout)
    stood_in = []
    for name in KB_UNUSED_IMPORTS:
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            sys.modules[name] = _placeholder(name)
            stood_in.append(name)
    sys.path.insert(0, str(src))
    return importlib.import_module("kernelbench.eval"), stood_in


def problem_file(checkout: Path, problem: str) -> Path:
    """level1/26_GELU_ -> CHECKOUT/KernelBench/level1/26_GELU_.py (a path is taken as it is)."""
    path = Path(problem)
    if path.suffix == ".py" and path.is_file():
        return path
    candidate = checkout / "KernelBench" / f"{problem.removesuffix('.py')}.py"
    if not candidate.is_file():
        raise BenchError(f"no problem {problem!r}: {candidate} is not a file (give level1/NAME or a .py path)")
    return candidate


def result_record(result: object) -> dict | None:
    """KernelBench's KernelExecResult (a pydantic model) as JSON: its metadata holds exceptions."""
    if result is None:
        return None
    record = json.loads(json.dumps(result.model_dump(), default=str))  # type: ignore[attr-defined]
    record["metadata"] = {k: str(v)[:600] for k, v in (record.get("metadata") or {}).items()}
    return record


def kb_child(args: argparse.Namespace) -> int:
    """The KernelBench side, in its own process: eval_kernel_against_ref, its result as JSON."""
    started = time.monotonic()
    kb_eval, stood_in = load_kernelbench(Path(args.kernelbench))
    import torch
    import torch.utils.cpp_extension as cpp_extension

    import_s = time.monotonic() - started
    # Where KernelBench's time goes, measured around two of its calls and changing neither: load_inline
    # (ModelNew's source imports it from torch when KernelBench execs it) and its CUDA-event timer
    # (the kernel's timing, then the reference's). The rest of eval is the correctness trials: inputs
    # drawn on the host, copied over, both models run and compared.
    spent: dict[str, float] = {"compile_s": 0.0, "timing_s": 0.0}

    def timed(fn, key):  # type: ignore[no-untyped-def]
        def call(*a, **k):  # type: ignore[no-untyped-def]
            t0 = time.monotonic()
            try:
                return fn(*a, **k)
            finally:
                spent[key] += time.monotonic() - t0

        return call

    cpp_extension.load_inline = timed(cpp_extension.load_inline, "compile_s")
    kb_timing = sys.modules["kernelbench.timing"]
    kb_timing.time_execution_with_cuda_event = timed(kb_timing.time_execution_with_cuda_event, "timing_s")
    device = torch.device(f"cuda:{args.gpu}")
    build = tempfile.mkdtemp(prefix="kb_build.")  # a fresh build: nvcc runs, as for a new kernel
    t0 = time.monotonic()
    result = kb_eval.eval_kernel_against_ref(
        original_model_src=Path(args.problem_path).read_text(encoding="utf-8"),
        custom_model_src=Path(args.modelnew).read_text(encoding="utf-8"),
        seed_num=KB_SEED,
        num_correct_trials=args.correct_trials,
        num_perf_trials=args.perf_trials,
        measure_performance=True,
        timing_method="cuda_event",
        verbose=False,
        build_dir=build,
        device=device,
        backend="cuda",
        precision=torch.float32,
    )
    eval_s = time.monotonic() - t0
    shutil.rmtree(build, ignore_errors=True)
    record = {
        "device": torch.cuda.get_device_name(device),
        "torch": torch.__version__,
        "placeholders": stood_in,
        "import_s": round(import_s, 2),
        "eval_s": round(eval_s, 2),
        **{k: round(v, 2) for k, v in spent.items()},
        "result": result_record(result),
    }
    Path(args.child_out).write_text(json.dumps(record, indent=1), encoding="utf-8")
    return 0


# ---------------------------------------------------------------- child processes and their memory


@dataclass
class ChildRun:
    argv: list[str]
    wall_s: float = 0.0
    rc: int | None = None
    timed_out: bool = False
    peak_rss_mib: float | None = None  # the largest single process of its tree (wait4, VmHWM)
    tree_rss_mib: float | None = None  # the tree's summed RSS, sampled every POLL_S
    stdout: str = ""
    stderr_tail: str = ""


def run_child(argv: list[str], timeout_s: float) -> ChildRun:
    """Run argv; its wall time, peak host memory and output; it and its descendants killed at timeout_s."""
    run = ChildRun(argv)
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        t0 = time.monotonic()
        # A child's ru_maxrss starts from this process's own high-water mark: it is spawned by vfork
        # (or fork) and exec, and the kernel carries the address space's peak across exec. Only a
        # figure above that mark is the child's own (else the polled VmHWM stands alone).
        inherited = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # In this process's group: a `timeout` around the bench ends the sides with it.
        proc = subprocess.Popen(argv, stdout=out_file, stderr=err_file, cwd=ROOT)
        hwm, tree_peak = 0, 0
        seen: set[int] = set()
        done = threading.Event()

        def poll() -> None:
            nonlocal hwm, tree_peak
            while not done.is_set():
                total = 0
                for p in descendants(proc.pid):
                    seen.add(p)
                    hwm = max(hwm, status_kib(p, "VmHWM") or 0)
                    total += status_kib(p, "VmRSS") or 0
                tree_peak = max(tree_peak, total)
                done.wait(POLL_S)

        def kill() -> None:
            run.timed_out = True
            for p in descendants(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        timer = threading.Timer(timeout_s, kill)
        timer.start()
        # wait4: the child's own rusage, whose ru_maxrss also covers the descendants it reaped.
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
        done.set()
        poller.join()
        run.wall_s = time.monotonic() - t0
        proc.returncode = run.rc = os.waitstatus_to_exitcode(status)
        for p in seen - {proc.pid}:  # nothing the side started outlives it
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        own = usage.ru_maxrss if usage.ru_maxrss > inherited else 0
        run.peak_rss_mib = max(own, hwm) / 1024
        run.tree_rss_mib = tree_peak / 1024 if tree_peak else None
        out_file.seek(0)
        err_file.seek(0)
        run.stdout = out_file.read().decode("utf-8", "replace")
        run.stderr_tail = err_file.read().decode("utf-8", "replace")[-2000:]
    return run


# ---------------------------------------------------------------- the two sides


def gpu_name(index: int) -> str:
    """The GPU's name from nvidia-smi, or a one-line BenchError when there is none."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader", "-i", str(index)],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        out = None
    if out is None or out.returncode != 0 or not out.stdout.strip():
        raise BenchError(
            f"no NVIDIA GPU {index} here (nvidia-smi found none): run this bench on a GPU machine; "
            "--dry-run imports the problem and writes the ModelNew without one"
        )
    name, _, driver = out.stdout.strip().splitlines()[0].partition(",")
    return f"{name.strip()} (driver {driver.strip()})"


def import_task(problem: Path, folder: Path, timeout_s: float) -> tuple[ChildRun, Path]:
    run = run_child(
        [sys.executable, "-m", "cuda_llm", "tasks", "import", str(problem), "--dir", str(folder)], timeout_s
    )
    made = sorted(p for p in folder.iterdir() if (p / "task.toml").is_file()) if folder.is_dir() else []
    if run.rc != 0 or len(made) != 1:
        raise BenchError(
            f"`cuda-llm tasks import {problem.name}` failed (exit {run.rc}): {run.stderr_tail.strip()[-300:]}"
        )
    return run, made[0]


def ours_summary(record: dict) -> dict:
    """What the table needs of `cuda-llm eval --json`."""
    j = record.get("judgement") or {}
    timing = j.get("timing") or {}
    figures = j.get("figures") or {}
    validation = j.get("validation") or {}
    median, speedup = timing.get("median_us"), figures.get("speedup")
    return {
        "device": record.get("device"),
        "status": j.get("status"),
        "message": (j.get("message") or "")[:300],
        "median_us": median,
        "samples": timing.get("samples"),
        "mode": timing.get("mode"),
        "speedup": speedup,
        # speedup is the baseline's median over this one's (engine/judge/metrics.py Figures)
        "baseline_us": median * speedup
        if isinstance(median, int | float) and isinstance(speedup, int | float)
        else None,
        "roofline_share": figures.get("roofline_share"),
        "cases": len(validation.get("cases") or []),
        "phases_s": record.get("phases_s"),
    }


def what_ours_checks(task_folder: Path) -> str:
    from cuda_llm.engine.task.loader import load_task

    task = load_task(task_folder)
    sizes = list(dict.fromkeys("x".join(str(v) for _, v in c.values) for c in task.validation))
    tol = task.tolerance
    scales = {"rms": "RMS(expected)", "rms_or_abs": "max(|expected|, RMS(expected))", "abs": "|expected|"}
    rule = (
        f"|err| <= {tol.rtol:g} x {scales[tol.scale]} + {tol.atol:g}"
        if tol.scale in scales
        else f"{tol.scale}: rtol {tol.rtol:g}, atol {tol.atol:g}"
    )
    return (
        f"{len(sizes)} sizes ({' '.join(sizes)}), {sum(c.seeds for c in task.validation)} cases, smallest first, "
        f"inputs from get_inputs() seeded per case on the GPU, against the module in float64; {rule}; "
        f"then the kernel and eager timed interleaved at {' '.join(f'{k}={v}' for k, v in task.timing.values)}, "
        "median reported"
    )


def what_kb_checks(args: argparse.Namespace) -> str:
    return (
        f"{args.correct_trials} trials at the file's size only, inputs from get_inputs() on the host, "
        f"against the fp32 module; torch.allclose atol = rtol = 1e-4; times {args.perf_trials} calls "
        "(after 3 warm-ups, first discarded) with CUDA events and an L2 flush each, mean reported, "
        f"then the reference the same way"
    )


def _fmt_mib(v: float | None) -> str:
    return f"{v / 1024:.2f} GiB" if v is not None else "-"


def _us(ms: object) -> str:
    """KernelBench's milliseconds in microseconds ("-" for its -1.0 of "not measured")."""
    return f"{float(ms) * 1000:.0f} us" if isinstance(ms, int | float) and ms > 0 else "-"


def comparison_rows(
    kb: ChildRun,
    kb_rec: dict,
    imported: ChildRun,
    ours: ChildRun,
    ours_rec: dict,
    device: str | None,
    kb_checks: str,
    ours_checks: str,
) -> list[tuple[str, str, str]]:
    """The side-by-side table: one row a figure, KernelBench's column, then ours."""
    res = kb_rec.get("result") or {}
    meta = res.get("metadata") or {}
    runtime, ref = res.get("runtime"), res.get("ref_runtime")
    kb_speedup = (
        f", {float(ref) / float(runtime):.2f}x"
        if isinstance(runtime, int | float) and isinstance(ref, int | float) and runtime > 0 and ref > 0
        else ""
    )
    median, speed, base = ours_rec.get("median_us"), ours_rec.get("speedup"), ours_rec.get("baseline_us")
    kb_wall = (
        f"{kb.wall_s:.1f} s (import {kb_rec.get('import_s', '-')} s, eval {kb_rec.get('eval_s', '-')} s, "
        f"of which load_inline {kb_rec.get('compile_s', '-')} s, timing {kb_rec.get('timing_s', '-')} s)"
    )
    ours_peak = max(imported.peak_rss_mib or 0, ours.peak_rss_mib or 0) or None
    return [
        ("", "KernelBench eval_kernel_against_ref", "cuda-llm tasks import + eval"),
        ("device", kb_rec.get("device") or "-", str(ours_rec.get("device") or device)),
        (
            "wall",
            kb_wall + (" (timed out)" if kb.timed_out else ""),
            f"{imported.wall_s + ours.wall_s:.1f} s (import {imported.wall_s:.1f} s, eval {ours.wall_s:.1f} s)"
            + (" (timed out)" if ours.timed_out else ""),
        ),
        (
            "peak host RSS, largest process",
            _fmt_mib(kb.peak_rss_mib),
            f"{_fmt_mib(ours_peak)} (import {_fmt_mib(imported.peak_rss_mib)}, eval {_fmt_mib(ours.peak_rss_mib)})",
        ),
        ("peak host RSS, process tree", _fmt_mib(kb.tree_rss_mib), _fmt_mib(ours.tree_rss_mib)),
        (
            "verdict",
            f"compiled {res.get('compiled')}, correct {res.get('correctness')} {meta.get('correctness_trials', '')}",
            f"{ours_rec.get('status')}, {ours_rec.get('cases')} cases",
        ),
        (
            "kernel latency",
            f"mean {_us(runtime)} (min {_us((res.get('runtime_stats') or {}).get('min'))})",
            f"median {median:.0f} us ({ours_rec.get('samples')} samples, {ours_rec.get('mode')})"
            if isinstance(median, int | float)
            else "-",
        ),
        (
            "eager and speedup",
            f"mean {_us(ref)}{kb_speedup}",
            (f"median {base:.0f} us, " if isinstance(base, int | float) else "")
            + (f"{speed:.2f}x eager" if isinstance(speed, int | float) else "-"),
        ),
        ("checks", kb_checks, ours_checks),
    ]


def table(rows: list[tuple[str, str, str]]) -> str:
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return "\n".join(f"{a:<{w0}} | {b:<{w1}} | {c}" for a, b, c in rows)


def main_run(args: argparse.Namespace) -> int:
    checkout = Path(args.kernelbench)
    kernelbench_src(checkout)
    problem = problem_file(checkout, args.problem)
    key = f"{problem.parent.name}/{problem.stem}"
    pairing = PAIRINGS.get(key)
    reply_path = Path(args.reply) if args.reply else (pairing.reply if pairing else None)
    if reply_path is None:
        raise BenchError(f"no reply of ours is paired with {key}: give one with --reply FILE.md (and --rename OLD=NEW)")
    if not reply_path.is_file():
        raise BenchError(f"--reply {reply_path}: no such file")
    renames = parse_renames(args.rename) if args.rename else (pairing.renames if pairing and not args.reply else {})
    device = None if args.dry_run else gpu_name(args.gpu)

    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="kb_side_by_side."))
    out.mkdir(parents=True, exist_ok=True)
    reply_file = out / "reply.md"
    reply_file.write_text(adapt_reply(reply_path.read_text(encoding="utf-8"), renames), encoding="utf-8")
    print(f"problem {problem} ; reply {reply_path.name}" + (f" (plan renamed {renames})" if renames else ""))
    print(f"device: {device or 'none (--dry-run)'} ; work folder {out}")

    imported, task_folder = import_task(problem, out / "tasks", args.ours_timeout)
    modelnew = out / "model_new.py"
    modelnew.write_text(
        modelnew_source(task_folder, reply_file.read_text(encoding="utf-8"), problem.stem), encoding="utf-8"
    )
    print(f"ours: tasks import {imported.wall_s:.1f} s -> {task_folder.name}; ModelNew written to {modelnew}")
    if args.dry_run:
        return 0

    ours = run_child(
        [sys.executable, "-m", "cuda_llm", "eval", str(task_folder), str(reply_file), "--json", "--gpu", str(args.gpu)],
        args.ours_timeout,
    )
    (out / "ours_eval.json").write_text(ours.stdout, encoding="utf-8")
    try:
        ours_rec = ours_summary(json.loads(ours.stdout))
    except json.JSONDecodeError:
        ours_rec = {"status": "no JSON", "message": (ours.stderr_tail or ours.stdout)[-300:]}
    print(f"ours: eval {ours.wall_s:.1f} s, {ours_rec.get('status')}" + (" (timed out)" if ours.timed_out else ""))
    ours_checks = what_ours_checks(task_folder)

    kb_out = out / "kernelbench.json"
    kb = run_child(
        [
            sys.executable,
            "-m",
            "bench.kernelbench_side_by_side",
            "--child-kb",
            "--kernelbench",
            str(checkout),
            "--problem-path",
            str(problem),
            "--modelnew",
            str(modelnew),
            "--child-out",
            str(kb_out),
            "--correct-trials",
            str(args.correct_trials),
            "--perf-trials",
            str(args.perf_trials),
            "--gpu",
            str(args.gpu),
        ],
        args.kb_timeout,
    )
    kb_rec = json.loads(kb_out.read_text(encoding="utf-8")) if kb_out.is_file() else {}
    (out / "kernelbench.log").write_text(kb.stdout + "\n--- stderr (tail)\n" + kb.stderr_tail, encoding="utf-8")
    print(f"kernelbench: {kb.wall_s:.1f} s" + (" (timed out)" if kb.timed_out else "") + f", exit {kb.rc}")
    if kb.rc != 0 or not kb_rec:
        print(kb.stderr_tail.strip()[-1500:])
    kb_result = kb_rec.get("result") or {}
    if kb_rec and not kb_result.get("correctness"):
        for key, value in (kb_result.get("metadata") or {}).items():
            print(f"  kernelbench {key}: {value[:300]}")

    rows = comparison_rows(kb, kb_rec, imported, ours, ours_rec, device, what_kb_checks(args), ours_checks)
    print()
    print(table(rows[:-1]))  # the checks in words below, too long for a column
    print(f"\nKernelBench checks: {rows[-1][1]}\nours checks: {rows[-1][2]}")
    print(f"\nours: {ours_rec.get('message')}")
    if kb_rec.get("placeholders"):
        print(f"kernelbench: placeholders stood in for {', '.join(kb_rec['placeholders'])} (imported, never called)")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "problem": str(problem),
                    "reply": str(reply_path),
                    "renames": renames,
                    "device": device,
                    "kernelbench": {"run": _run_record(kb), "record": kb_rec, "checks": what_kb_checks(args)},
                    "ours": {
                        "import": _run_record(imported),
                        "eval": _run_record(ours),
                        "record": ours_rec,
                        "checks": ours_checks,
                    },
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    return 0


def _run_record(run: ChildRun) -> dict:
    d = asdict(run)
    d.pop("stdout")
    d["wall_s"] = round(run.wall_s, 2)
    return d


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.kernelbench_side_by_side", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--kernelbench", default=str(DEFAULT_KERNELBENCH), help="a KernelBench checkout (src/ and KernelBench/level1)"
    )
    p.add_argument("--problem", default=DEFAULT_PROBLEM, help="level1/NAME, or a problem .py file")
    p.add_argument("--reply", help="our reply (.md); default: the one paired with the problem")
    p.add_argument(
        "--rename", action="append", default=[], metavar="OLD=NEW", help="rename a size or buffer in the reply's plan"
    )
    p.add_argument(
        "--correct-trials", type=_positive, default=KB_CORRECT_TRIALS, help="KernelBench's correctness trials"
    )
    p.add_argument("--perf-trials", type=_positive, default=KB_PERF_TRIALS, help="KernelBench's timed trials")
    p.add_argument("--kb-timeout", type=float, default=KB_TIMEOUT_S, help="seconds for KernelBench's side")
    p.add_argument("--ours-timeout", type=float, default=OURS_TIMEOUT_S, help="seconds for each of our commands")
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--out", help="work folder (default: a new temporary one)")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--dry-run", action="store_true", help="no GPU: import the problem and write the ModelNew only")
    # The KernelBench side's child process.
    p.add_argument("--child-kb", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--problem-path", help=argparse.SUPPRESS)
    p.add_argument("--modelnew", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be at least 1")
    return value


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return kb_child(args) if args.child_kb else main_run(args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
