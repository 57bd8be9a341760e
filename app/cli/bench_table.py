"""The paper's table: one row per task (baseline against the best the loop found), its summary, the
Markdown a paper can cite and bench.json (two runs side by side: app/cli/bench_compare.py). Pure data
and text: running the sessions is app/cli/bench_cmd.py's job.

What the table promises:
- "correct" means validated on a GPU: a candidate that only compiled (compile-only mode) is "not
  validated", and one judged `suspect` (its timing cannot be trusted) is not counted as correct;
- the best is named with the round and the candidate that found it;
- two geometric means, each named: over the tasks that improved, and over every validated task (a
  task where nothing beat the baseline counts as 1.00x there); never across GPU models: when the rows
  ran on several (a Ray cluster's), the two are given for each model;
- which GPU model each row ran on, in a GPU column whenever the rows ran on more than one model or on
  a Ray cluster (bench.json's rows name the node and GPU as well);
- the vendor library's latency beside the best, and the best as "x of library" (the library's time
  over the best's: above 1, faster than the library), or why there is no library figure;
- every row carries the settings and the environment (versions, GPU, clocks) that reproduce it;
- over the tasks imported from PyTorch modules (their baseline is PyTorch eager), the field's
  figures: fast_p, the share of those problems where a correct kernel is more than p times faster
  than eager (fast_0: the share with a correct kernel at all), for p = 0, 1, 2, and the geometric
  mean over the correct ones of their fastest correct kernel's speedup over eager (below 1 where
  eager stayed faster).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from cuda_llm.engine.judge.metrics import EAGER_NAME, PHYSICAL_NAME, ROOFLINE_NAME, speedups_text

BASELINE = "baseline"
NOT_VALIDATED = "not validated"
BENCH_FILE = "bench.json"
# bench.json's layout version (1: the rows had no settings, environment or summary; 2: one summary,
# no summaries per GPU model).
BENCH_FORMAT = 3
# The baseline of a task imported from a PyTorch module (engine/torchtask/): BenchRow.baseline_kind.
EAGER = "eager"
# The p of fast_p the table reports (the field's: correct; faster than eager; twice as fast).
FAST_P = (0.0, 1.0, 2.0)


@dataclass
class BenchRow:
    task: str
    session: int | None
    model: str
    status: str  # the session's: finished | stopped | paused | failed
    validated: bool  # judged on a GPU (False: compile-only, nothing ran)
    message: str = ""  # why the session ended
    candidates: int = 0  # candidates judged, the baseline aside
    compiled: int = 0  # of them, compiled and bound
    correct: int = 0  # of them, validated correct on the GPU (suspect ones excluded)
    suspect: int = 0  # correct, but timed faster than the physical limit allows: not trusted
    baseline_us: float | None = None
    best_label: str = BASELINE  # the candidate that found the best ("baseline": none beat it)
    best_round: int | None = None  # the round that found it
    best_us: float | None = None
    speedup: float | None = None  # baseline over best, timed in the same session (None: not validated)
    roofline_share: float | None = None  # of the achievable roofline
    physical_share: float | None = None
    sm_clock_mhz: float | None = None  # the SM clock while the best was timed
    library: dict[str, Any] = field(default_factory=dict)  # app/cli/yardstick.library_record
    # --torch-compile: torch.compile's figure (app/cli/yardstick.torch_compile_record) and its time
    # over the best's, shown beside the speedup over eager
    torch_compile: dict[str, Any] = field(default_factory=dict)
    torch_compile_speedup: float | None = None
    rounds_run: int = 0
    tokens: int = 0
    seconds: float = 0.0
    server: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # the LoopSettings the session ran with
    environment: dict[str, Any] = field(default_factory=dict)  # versions, host, GPU, clocks, peaks
    baseline_kind: str = "cuda"  # "eager": a task imported from a PyTorch module, PyTorch eager its baseline
    # The fastest correct candidate's speedup over the baseline, even below 1 (where the best is the
    # baseline itself, `speedup` says 1.00x): what fast_p and the speedup over eager are made of.
    fastest_correct_speedup: float | None = None

    @property
    def is_correct(self) -> bool | None:
        """Whether the loop found a correct kernel; None when nothing was validated."""
        return self.correct > 0 if self.validated else None

    @property
    def improved(self) -> bool:
        return self.validated and self.best_label != BASELINE and (self.speedup or 0.0) > 1.0

    @property
    def of_library(self) -> float | None:
        return self.library.get("of_library")

    @property
    def gpu(self) -> str | None:
        """The GPU model it was judged on (None: compile-only, or a row from an older cuda-llm)."""
        return (self.environment.get("gpu") or {}).get("name") if self.validated else None

    @property
    def nodes(self) -> list[str]:
        """The Ray cluster's nodes it was judged on, by Ray's id (host names may repeat there); none:
        this machine."""
        gpus = (self.environment.get("cluster") or {}).get("gpus") or []
        return sorted({str(g.get("node_id") or g.get("node")) for g in gpus})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchRow:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "validated" not in values:  # format 1: no such column; correct was a boolean
            values["validated"] = data.get("baseline_us") is not None
            values["correct"] = int(bool(data.get("correct")))
        if "rounds_run" not in values and "rounds" in data:
            values["rounds_run"] = data["rounds"]
        return cls(**values)


@dataclass(frozen=True)
class GeoMean:
    name: str
    value: float | None
    tasks: int


@dataclass(frozen=True)
class FastP:
    """The field's figures over the problems imported from PyTorch modules, against eager."""

    problems: int  # validated imported problems
    fast: dict[str, float]  # "fast_0": share of problems, ...
    counts: dict[str, int]  # "fast_0": problems, ...
    geomean_vs_eager: float | None  # over the correct problems' fastest correct kernels
    correct: int


def fast_p(rows: list[BenchRow]) -> FastP | None:
    """fast_0, fast_1, fast_2 and the geometric mean speedup over eager; None without imported rows."""
    imported = [r for r in rows if r.baseline_kind == EAGER and r.validated]
    if not imported:
        return None
    counts = {}
    for p in FAST_P:
        counts[f"fast_{p:g}"] = sum(
            bool(r.is_correct) and (p == 0 or (r.fastest_correct_speedup or 0.0) > p) for r in imported
        )
    speeds = [r.fastest_correct_speedup for r in imported if r.is_correct and r.fastest_correct_speedup]
    return FastP(
        problems=len(imported),
        fast={k: v / len(imported) for k, v in counts.items()},
        counts=counts,
        geomean_vs_eager=geomean(speeds),
        correct=len(speeds),
    )


@dataclass(frozen=True)
class Summary:
    validated: bool
    improved: GeoMean
    overall: GeoMean
    correct: int  # tasks with a correct kernel
    tasks: int
    compiled: int = 0  # tasks with a candidate that compiled and bound (what compile-only can say)
    gpu: str | None = None  # the GPU model of its rows (None: compile-only, or not recorded)
    fast_p: FastP | None = None  # over the rows of tasks imported from PyTorch modules


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def gpu_models(rows: list[BenchRow]) -> list[str]:
    """The GPU models the rows were judged on, each once."""
    return sorted({r.gpu for r in rows if r.gpu})


def on_cluster(rows: list[BenchRow]) -> bool:
    return any(r.nodes for r in rows)


def shows_gpu(rows: list[BenchRow]) -> bool:
    """Whether the table needs a GPU column: the header's one device does not say it all."""
    return len(gpu_models(rows)) > 1 or on_cluster(rows)


def summaries(rows: list[BenchRow]) -> list[Summary]:
    """One summary per GPU model (speedups are never averaged across models; one summary when the
    rows ran on one model, or on none)."""
    models = gpu_models(rows)
    if len(models) <= 1:
        return [summarize(rows, models[0] if models else None)]
    out = [summarize([r for r in rows if r.gpu == m], m) for m in models]
    unknown = [r for r in rows if r.gpu is None]  # rows of a GPU that was not recorded
    if unknown:
        out.append(summarize(unknown, "a GPU not recorded"))
    return out


def summarize(rows: list[BenchRow], gpu: str | None = None) -> Summary:
    """The summary of rows judged on one GPU model (`gpu`), or compile-only."""
    validated = [r for r in rows if r.validated and r.speedup]
    improved = [r.speedup for r in validated if r.improved and r.speedup is not None]
    overall = [1.0 if r.best_label == BASELINE else r.speedup for r in validated]
    return Summary(
        validated=any(r.validated for r in rows),
        improved=GeoMean("geometric mean speedup over the tasks that improved", geomean(improved), len(improved)),
        overall=GeoMean(
            "geometric mean speedup over every validated task (a task with no improvement counts as 1.00x)",
            geomean(overall),  # type: ignore[arg-type]  # a validated row has a speedup
            len(overall),
        ),
        correct=sum(bool(r.is_correct) for r in rows),
        tasks=len(rows),
        compiled=sum(r.compiled > 0 for r in rows),
        gpu=gpu,
        fast_p=fast_p(rows),
    )


# ---- cells ---------------------------------------------------------------------------------------


def _us(v: float | None) -> str:
    return f"{v:.1f}" if v else "-"


def _x(v: float | None) -> str:
    return f"{v:.2f}x" if v else "-"


def _pct(v: float | None) -> str:
    return f"{v:.0%}" if v else "-"


def correct_cell(r: BenchRow) -> str:
    if r.status == "failed" and not r.candidates:
        return "failed"
    if not r.validated:
        return f"{NOT_VALIDATED} ({r.compiled} of {r.candidates} compiled)"
    text = f"yes ({r.correct} of {r.candidates})" if r.correct else f"no (0 of {r.candidates})"
    return text + (f", {r.suspect} suspect" if r.suspect else "")


def best_cell(r: BenchRow) -> str:
    if not r.validated:
        return f"- ({NOT_VALIDATED})"
    if r.best_label == BASELINE:
        return "baseline (nothing beat it)"
    return f"{r.best_label} (round {r.best_round})"


def library_cells(r: BenchRow) -> tuple[str, str]:
    lib = r.library or {}
    if lib.get("median_us"):
        return _us(lib["median_us"]), _x(lib.get("of_library"))
    return ("none" if not lib.get("name") else "-"), "-"


def library_notes(rows: list[BenchRow]) -> list[str]:
    """Why library cells are empty, each reason once, with the tasks it applies to."""
    reasons: dict[str, list[str]] = {}
    for r in rows:
        lib = r.library or {}
        if not lib.get("median_us"):
            reasons.setdefault(lib.get("note") or "not timed", []).append(r.task)
    return [f"library: no figure for {', '.join(tasks)}: {why}" for why, tasks in reasons.items()]


COLUMNS = (
    "task",
    "baseline (us)",
    "best (us)",
    "speedup",
    "library (us)",
    "x of library",
    "achievable roofline",
    "physical limit",
    "correct",
    "best found by",
    "rounds",
    "tokens",
    "session",
)


def columns(rows: list[BenchRow]) -> tuple[str, ...]:
    return (COLUMNS[0], GPU_COLUMN, *COLUMNS[1:]) if shows_gpu(rows) else COLUMNS


GPU_COLUMN = "GPU"


def cells(r: BenchRow, with_gpu: bool = False) -> list[str]:
    lib_us, of_lib = library_cells(r)
    gpu = [r.gpu or ("-" if not r.validated else "?")] if with_gpu else []
    return [
        r.task,
        *gpu,
        _us(r.baseline_us),
        _us(r.best_us) if r.validated else "-",
        speedup_cell(r),
        lib_us,
        of_lib,
        _pct(r.roofline_share),
        _pct(r.physical_share),
        correct_cell(r),
        best_cell(r),
        str(r.rounds_run),
        str(r.tokens),
        str(r.session if r.session is not None else "-"),
    ]


def speedup_cell(r: BenchRow) -> str:
    """'2.50x', or with torch.compile timed (an imported task): '2.50x eager, 1.30x torch.compile'."""
    if not r.validated:
        return "-"
    if r.speedup and r.torch_compile_speedup is not None:
        return speedups_text(r.speedup, EAGER_NAME, r.torch_compile_speedup)
    return _x(r.speedup)


def torch_compile_notes(rows: list[BenchRow]) -> list[str]:
    """Why torch.compile has no figure where it was asked for, each reason once, with its tasks."""
    reasons: dict[str, list[str]] = {}
    for r in rows:
        tc = r.torch_compile or {}
        if tc.get("asked") and not tc.get("median_us"):
            reasons.setdefault(tc.get("note") or "not timed", []).append(r.task)
    return [f"torch.compile: no figure for {', '.join(tasks)}: {why}" for why, tasks in reasons.items()]


def _md_table(headers: tuple[str, ...] | list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def _rows(bench: dict[str, Any]) -> list[BenchRow]:
    return [BenchRow.from_json(r) for r in bench.get("rows") or []]


def _each(values: list[Any]) -> str:
    """One value, or each of several once ("13.0, 12.8")."""
    seen = list(dict.fromkeys(str(v) for v in values if v is not None))
    return ", ".join(seen) if seen else "None"


def device_line(bench: dict[str, Any]) -> str:
    env = bench.get("environment") or {}
    gpu = env.get("gpu") or {}
    if not bench.get("validated"):
        envs = [r.environment for r in _rows(bench) if r.environment] or [env]
        return (
            f"compile-only for {env.get('arch') or bench.get('arch')} (no GPU): {NOT_VALIDATED}; kernels were "
            f"compiled (NVRTC {_each([e.get('nvrtc') for e in envs])}) and bound, never run or timed"
        )
    rows = _rows(bench)
    nodes = sorted({n for r in rows for n in r.nodes})
    where = f" on {len(nodes)} node(s) of a Ray cluster" if nodes else ""
    envs = [r.environment for r in rows if r.environment] or [env]
    versions = f"driver {_each([e.get('driver') for e in envs])}, NVRTC {_each([e.get('nvrtc') for e in envs])}"
    models = gpu_models(rows)
    if len(models) > 1:
        kinds = ", ".join(f"{m} ({_each([r.environment.get('arch') for r in rows if r.gpu == m])})" for m in models)
        return f"{len(models)} GPU models{where}: {kinds} (the GPU column says each row's), {versions}"
    clocks = f", max SM clock {gpu.get('max_sm_clock_mhz')} MHz" if gpu.get("max_sm_clock_mhz") else ""
    return f"{gpu.get('name') or bench.get('device')} ({env.get('arch')}{clocks}){where}, {versions}"


def markdown(bench: dict[str, Any]) -> str:
    rows = _rows(bench)
    per_gpu = summaries(rows)
    with_gpu = shows_gpu(rows)
    settings = bench.get("settings") or {}
    lines = [
        f"# cuda-llm bench: {bench['model']}",
        "",
        f"- device: {device_line(bench)}",
        f"- run: {bench.get('created', '?')} with cuda-llm {bench.get('cuda_llm', '?')}; {settings_text(settings)}",
    ]
    if any(s.validated for s in per_gpu):
        gpu = "the row's GPU" if with_gpu else "this GPU"
        lines.append(
            f"- latencies: medians timed interleaved with the baseline on {gpu}; speedup is the baseline's "
            f"over the best's; achievable roofline is the best's share of {ROOFLINE_NAME} (our probes' measured "
            f"ceilings: the one the loop's roofline stop is against), physical limit its share of {PHYSICAL_NAME} "
            "(the hardware's own ceilings); x of library is the library's time over the best's (above 1: faster "
            "than the library)" + ("; geometric means are per GPU model" if len(per_gpu) > 1 else "")
        )
    else:
        lines.append(f"- correct: {NOT_VALIDATED}: without a GPU nothing was run, so nothing is known correct")
    eager = [r.task for r in rows if r.baseline_kind == EAGER]
    if eager:
        lines.append(
            f"- baseline: PyTorch eager (the module run by our profiler) for the tasks imported from PyTorch "
            f"modules: {', '.join(eager)}"
        )
    lines += ["", *_md_table(columns(rows), [cells(r, with_gpu) for r in rows]), ""]
    lines += summary_lines(per_gpu)
    notes = library_notes(rows) + torch_compile_notes(rows)
    if notes:
        lines += ["", *[f"- {n}" for n in notes]]
    return "\n".join(lines) + "\n"


def _off(value: Any) -> str:
    return "off" if value in (None, 0) else str(value)


def _given(value: Any) -> str:
    """A sampling setting as sent, or that none was: the model server's default applies."""
    return "server default" if value is None else str(value)


def _target(value: Any) -> str:
    return "no roofline stop" if value in (None, 0) else f"stop at {value} of {ROOFLINE_NAME}"


def settings_text(settings: dict[str, Any]) -> str:
    """N, D, R, K and the sampling settings, as the paper's table states them."""
    gen = settings.get("generate") or {}
    return (
        f"N={settings.get('candidates')} D={settings.get('rounds')} R={settings.get('repairs')} "
        f"K={_off(settings.get('patience'))}, {_target(settings.get('target_roofline'))}, "
        f"temperature {_given(gen.get('temperature'))}, seed {_given(gen.get('seed'))}, "
        f"max tokens {_given(gen.get('max_tokens'))}"
    )


def summary_lines(per_gpu: list[Summary]) -> list[str]:
    """The summary of a table: its named geometric means, for each GPU model when there are several."""
    if len(per_gpu) == 1:
        return _summary_lines(per_gpu[0])
    out = []
    for s in per_gpu:
        out.append(f"- on {s.gpu} ({s.tasks} task(s)):")
        out += [f"  {line}" for line in _summary_lines(s)]
    return out


def _summary_lines(summary: Summary) -> list[str]:
    if not summary.validated:
        return [
            f"No speedups: compile-only ({NOT_VALIDATED}); a candidate compiled and bound on {summary.compiled} "
            f"of {summary.tasks} task(s)."
        ]
    out = []
    for g in (summary.improved, summary.overall):
        value = f"{g.value:.2f}x" if g.value else "-"
        out.append(f"- {g.name} ({g.tasks}): {value}")
    out.append(f"- correct on {summary.correct} of {summary.tasks} task(s)")
    f = summary.fast_p
    if f is not None:
        shares = ", ".join(f"{k} = {v:.2f} ({f.counts[k]}/{f.problems})" for k, v in f.fast.items())
        mean = f"{f.geomean_vs_eager:.2f}x" if f.geomean_vs_eager else "-"
        out.append(f"- against PyTorch eager over {f.problems} imported problem(s): {shares}")
        what = "geometric mean speedup over eager of the correct problems' fastest kernels"
        out.append(f"- {what} ({f.correct}): {mean}")
    return out


def summary_json(summary: Summary) -> dict[str, Any]:
    return dataclasses.asdict(summary)


def bench_document(
    rows: list[BenchRow], request: dict[str, Any], created: str, version: str, command: list[str]
) -> dict[str, Any]:
    """bench.json: the rows, their summary, and what reproduces them (the request a rerun repeats, the
    settings, the environment, the command line)."""
    first = rows[0] if rows else None
    env = first.environment if first else {}
    validated = any(r.validated for r in rows)
    per_gpu = summaries(rows)
    models = gpu_models(rows)
    device = ", ".join(models) if len(models) > 1 else None
    return {
        "format": BENCH_FORMAT,
        "cuda_llm": version,
        "created": created,
        "command": command,
        "model": request["model"],
        "device": device
        or (env.get("gpu") or {}).get("name")
        or f"compile-only ({env.get('arch') or request.get('arch')})",
        "validated": validated,
        "arch": env.get("arch") or request.get("arch"),
        "request": request,
        "settings": first.settings if first else request.get("loop", {}),
        "environment": env,
        # The run's summary when its rows ran on one GPU model (or none); else null, and each model's
        # in "summaries" (speedups are never averaged across GPU models).
        "summary": summary_json(per_gpu[0]) if len(per_gpu) == 1 else None,
        "summaries": [summary_json(s) for s in per_gpu],
        "rows": [dataclasses.asdict(r) for r in rows],
    }


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"
