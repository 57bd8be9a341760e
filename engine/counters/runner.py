"""Run the probe under ncu with a time limit and turn what ncu wrote into a CountersReport.

The step never raises for anything a machine lacks: no ncu, counters not permitted, a sandbox that
hides the profiling interface, a timeout, a probe that fails: each becomes one line in the report's
`unavailable`, and the caller goes on without counters.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cuda_llm.engine.core.secrets import without_secrets
from cuda_llm.engine.core.settings import CountersSettings, ValidationSettings
from cuda_llm.engine.counters import ncu_csv
from cuda_llm.engine.counters.derive import derive
from cuda_llm.engine.counters.metrics import CORE_METRICS, METRICS
from cuda_llm.engine.counters.model import CountersReport, KernelCounters, unavailable
from cuda_llm.engine.counters.probe import ProbeSpec, write_spec
from cuda_llm.engine.gpu.protocol import DeviceInfo, ProgramRef
from cuda_llm.engine.task.model import Task

NCU_ENV = "CUDA_LLM_NCU"
# Where the CUDA toolkit puts ncu when it is not on PATH.
NCU_FOLDERS = ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute")
# ncu runs at most this often per candidate: the whole set, without the metrics an ncu named as
# unknown, and the core set.
RUNS = 3
# The probe's stderr is kept to its last lines: its one-line error is the last.
_STDERR_TAIL = 4000

NO_NCU = f"ncu (Nsight Compute) was not found: install Nsight Compute, put ncu on PATH or name it in ${NCU_ENV}"
NOT_PERMITTED = (
    "the GPU's performance counters are restricted to administrators here (ERR_NVGPUCTRPERM): an "
    "administrator allows every user with 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in a "
    "file under /etc/modprobe.d/ and a reboot (or run cuda-llm as root)"
)
SANDBOXED = (
    "ncu cannot reach the GPU's profiling interface on this machine (LibraryNotLoaded: a sandboxed "
    "kernel such as gVisor hides it)"
)


def find_ncu(settings: CountersSettings) -> str | None:
    named = settings.ncu_path or os.environ.get(NCU_ENV)
    if named:
        return named if Path(named).is_file() else None
    on_path = shutil.which("ncu")
    if on_path:
        return on_path
    for folder in NCU_FOLDERS:
        hits = sorted(Path(folder).glob("ncu")) + sorted(Path(folder).glob("*/ncu"))
        if hits:
            return str(hits[-1])
    return None


def ncu_command(ncu: str, metrics: tuple[str, ...], log: Path, spec: Path) -> list[str]:
    """Clocks left alone (ncu's default locks them to base, which changes what a kernel is bound by);
    caches flushed between replay passes (ncu's default), as the profiler flushes the L2."""
    return [
        ncu,
        "--clock-control",
        "none",
        "--csv",
        "--print-units",
        "base",
        "--target-processes",
        "all",
        "--log-file",
        str(log),
        "--metrics",
        ",".join(metrics),
        sys.executable,
        "-m",
        "cuda_llm.engine.counters.probe",
        str(spec),
    ]


def problem(output: ncu_csv.NcuOutput, returncode: int, stderr: str) -> str | None:
    """Why no counters came back, in one line; None when they did."""
    text = " ".join(output.errors)
    if "ERR_NVGPUCTRPERM" in text or "ERR_NVGPUCTRPERM" in stderr:
        return NOT_PERMITTED
    if "LibraryNotLoaded" in text or "LibraryNotLoaded" in stderr:
        return SANDBOXED
    if output.rows:
        return None
    tail = [line for line in stderr.strip().splitlines() if line.strip() and not line.startswith("==")]
    if returncode != 0 and tail:
        return f"the plan could not be run for counters: {tail[-1].strip()}"
    if output.errors:
        return f"ncu failed: {output.errors[0]}"
    if any("no kernels were profiled" in w.lower() for w in output.warnings):
        return "ncu profiled no kernel of the plan"
    return f"ncu wrote no counters (exit status {returncode})"


def _about_metrics(errors: tuple[str, ...]) -> bool:
    return any("metric" in e.lower() for e in errors)


def match_launches(rows: tuple[ncu_csv.NcuRow, ...], kernels: tuple[str, ...]) -> tuple[KernelCounters, ...]:
    """ncu's launches in order against the plan's: the probe runs the plan once, so the n-th profiled
    launch is the plan's n-th; a name that disagrees is matched to the next launch of that kernel."""
    out: list[KernelCounters] = []
    taken: set[int] = set()
    for n, row in enumerate(rows):
        name = ncu_csv.kernel_base(row.kernel)
        if n < len(kernels) and kernels[n] == name and n not in taken:
            index = n
        else:
            index = next((i for i, k in enumerate(kernels) if k == name and i not in taken), n)
        taken.add(index)
        out.append(KernelCounters(index, name or (kernels[index] if index < len(kernels) else "?"), row.values))
    return tuple(sorted(out, key=lambda k: k.launch))


@dataclass
class NcuCounters:
    """Reads counters of programs on one local GPU with ncu."""

    settings: CountersSettings
    validation: ValidationSettings

    async def collect(self, task: Task, program: ProgramRef, device: DeviceInfo) -> CountersReport:
        started = time.monotonic()
        ncu = find_ncu(self.settings)
        if ncu is None:
            return unavailable(NO_NCU)
        metrics: tuple[str, ...] = METRICS
        dropped: tuple[str, ...] = ()
        with tempfile.TemporaryDirectory(prefix="cuda-llm-counters-") as tmp:
            spec = Path(tmp) / "spec.pkl"
            write_spec(ProbeSpec(str(task.folder), program, device, self.validation), spec)
            for attempt in range(RUNS):
                log = Path(tmp) / f"ncu-{attempt}.csv"
                remaining = self.settings.timeout_s - (time.monotonic() - started)
                outcome = await self._run(ncu_command(ncu, metrics, log, spec), remaining)
                if outcome is None:
                    return unavailable(
                        f"ncu took longer than {self.settings.timeout_s:.0f} s and was stopped",
                        time.monotonic() - started,
                    )
                returncode, stderr = outcome
                text = log.read_text(errors="replace") if log.is_file() else ""
                if self.settings.keep_logs and log.is_file():
                    kept = Path(self.settings.keep_logs)
                    kept.mkdir(parents=True, exist_ok=True)
                    shutil.copy(log, kept / f"{task.name}-{program.label}-{time.strftime('%H%M%S')}-{attempt}.csv")
                output = ncu_csv.parse(text)
                unknown = ncu_csv.unknown_metrics(output.errors, metrics)
                if unknown and not output.rows:
                    dropped += unknown
                    metrics = tuple(m for m in metrics if m not in unknown)
                    continue
                if not output.rows and _about_metrics(output.errors) and metrics != CORE_METRICS:
                    # An ncu that refuses a metric without naming it: the core set it is known to read.
                    dropped += tuple(m for m in metrics if m not in CORE_METRICS)
                    metrics = CORE_METRICS
                    continue
                break
        why = problem(output, returncode, stderr)
        elapsed = time.monotonic() - started
        if why is not None:
            return unavailable(why, elapsed)
        kernels = match_launches(output.rows, tuple(la.kernel for la in program.plan.launches))
        min_bytes, _flops = task.bytes_and_flops(task.timing)
        report = derive(kernels, min_bytes, device.sm_count)
        return dataclasses.replace(report, elapsed_s=elapsed, dropped_metrics=dropped)

    async def _run(self, command: list[str], timeout_s: float) -> tuple[int, str] | None:
        """(exit status, stderr tail), or None on a timeout (the whole process group is killed)."""
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # ncu and the probe it starts die together on a timeout
            env=without_secrets(os.environ),  # the probe runs model-written kernels (engine/core/secrets.py)
        )
        try:
            _, err = await asyncio.wait_for(proc.communicate(), max(1.0, timeout_s))
        except TimeoutError:
            await _kill(proc)
            return None
        except asyncio.CancelledError:  # the session stopped: ncu and the probe go with it
            await _kill(proc)
            raise
        return proc.returncode or 0, err.decode(errors="replace")[-_STDERR_TAIL:]


async def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()
