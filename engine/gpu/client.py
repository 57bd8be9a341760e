"""The engine's side of a GPU worker: start it, send it jobs with a wall-clock limit, and bring it
back after a candidate crashed or hung it. A candidate can never take the engine down with it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import cuda_llm
from cuda_llm.engine.core.errors import UserError
from cuda_llm.engine.core.paths import user_cache_dir
from cuda_llm.engine.core.secrets import without_secrets
from cuda_llm.engine.core.settings import Settings
from cuda_llm.engine.gpu.protocol import (
    DeviceInfo,
    Fault,
    Peaks,
    PeaksRequest,
    ProfileReport,
    ProfileRequest,
    ProgramRef,
    Response,
    ShutdownRequest,
    TorchCompileRequest,
    ValidateRequest,
    ValidationReport,
    Verdict,
    WorkerHello,
)
from cuda_llm.engine.gpu.wire import frame, receive
from cuda_llm.engine.task.model import Task

# Lines of the worker's stderr quoted when it dies without answering.
_STDERR_TAIL_LINES = 6
# Time a worker gets to exit by itself after a fatal answer before it is killed.
_EXIT_GRACE_S = 5.0
# Allowance for computing a task's reference outputs at its timing size the first time (NumPy,
# float64): seconds on a workstation for the heaviest tasks.
_REFERENCE_ALLOWANCE_S = 120.0


class GpuUnavailable(UserError):
    """No usable GPU: the engine falls back to compile-only mode."""


class GpusLost(UserError):
    """Every GPU the judge had is out of reach (a Ray cluster went away): the session pauses, and
    continues with --resume once they are back. Nothing recorded is lost."""


@dataclass(frozen=True)
class ProfileFailure:
    """Profiling as a whole failed (a program crashed the worker mid-timing)."""

    fault: Fault


def _stderr_tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-_STDERR_TAIL_LINES:])


class GpuWorker:
    """One worker process for one GPU; requests are served one at a time."""

    def __init__(self, device_index: int = 0, settings: Settings | None = None, log_dir: Path | None = None) -> None:
        self.device_index = device_index
        self.settings = settings or Settings()
        self.log_dir = log_dir or user_cache_dir() / "workers"
        self.info: DeviceInfo | None = None
        self.restarts = 0
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._started_once = False

    # ---- process management --------------------------------------------------------------
    @property
    def stderr_path(self) -> Path:
        return self.log_dir / f"gpu{self.device_index}-stderr.log"

    @property
    def printf_path(self) -> Path:
        return self.log_dir / f"gpu{self.device_index}-printf.log"

    async def _spawn(self) -> DeviceInfo:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = without_secrets(os.environ)  # the worker runs model-written code: no key in its reach
        # The child imports `cuda_llm` from wherever this process did (installed or a checkout).
        root = str(Path(cuda_llm.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        with open(self.stderr_path, "wb") as err:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "cuda_llm.engine.gpu.worker_process",
                "--printf-log",
                str(self.printf_path),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
                env=env,
            )
        if self._started_once:
            self.restarts += 1
        self._started_once = True
        response = await self._exchange(
            WorkerHello(self.settings, self.device_index), self.settings.worker.start_timeout_s
        )
        if not response.ok:
            await self._reap()
            raise GpuUnavailable(response.error or "the GPU worker could not start")
        self.info = cast(DeviceInfo, response.result)
        return self.info

    async def _reap(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            await asyncio.wait_for(proc.wait(), _EXIT_GRACE_S)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        # Close the pipes' transport while the loop still runs; left to the garbage collector it
        # complains "Event loop is closed" after asyncio.run() returns.
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()

    async def _kill(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
        await self._reap()

    async def _exchange(self, message: Any, timeout_s: float) -> Response:
        """Send one message and wait for the answer; a dead or silent worker becomes a fatal Response."""
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        stdout = proc.stdout
        try:
            proc.stdin.write(frame(message))
            await proc.stdin.drain()
            response: Response = await asyncio.wait_for(receive(stdout), timeout_s)
        except TimeoutError:
            await self._kill()
            return Response(
                ok=False,
                fatal=True,
                error=f"the GPU worker did not answer within {timeout_s:.0f} s; it was killed and will be restarted",
                result=Fault("timed_out", "WORKER_TIMEOUT", "no answer in time"),
            )
        except (asyncio.IncompleteReadError, ConnectionError, BrokenPipeError):
            await self._reap()
            code = proc.returncode
            how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            tail = _stderr_tail(self.stderr_path)
            return Response(
                ok=False,
                fatal=True,
                error=f"the GPU worker died ({how})" + (f": {tail}" if tail else ""),
                result=Fault("crashed", "WORKER_DIED", f"the GPU worker process died ({how})"),
            )
        if response.fatal:
            await self._reap()
        return response

    def _alive(self) -> bool:
        """Whether the worker process still runs. asyncio learns of a child's death only when it gets
        round to it, so a worker killed from outside (OOM killer, a person) is also checked in /proc."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return False
        try:
            state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True  # no /proc (not Linux): trust asyncio
        return state not in ("Z", "X")

    async def _request(self, message: Any, timeout_s: float) -> Response:
        async with self._lock:
            if not self._alive():
                await self._reap()
                await self._spawn()
            return await self._exchange(message, timeout_s)

    # ---- jobs ------------------------------------------------------------------------------
    async def start(self) -> DeviceInfo:
        async with self._lock:
            if self._proc is None or self.info is None:
                await self._spawn()
            assert self.info is not None
            return self.info

    def validation_budget_s(self, task: Task) -> float:
        runs = sum(c.seeds for c in task.validation) * 2 + 2
        return (
            self.settings.worker.job_slack_s + _REFERENCE_ALLOWANCE_S + runs * self.settings.validation.launch_timeout_s
        )

    def profile_budget_s(self, programs: int) -> float:
        p = self.settings.profile
        per = p.max_gpu_time_s * 3 + p.warmup_ms / 1000 + 3 * self.settings.validation.launch_timeout_s
        return self.settings.worker.job_slack_s + _REFERENCE_ALLOWANCE_S + programs * per

    async def validate(self, task: Task, program: ProgramRef) -> ValidationReport:
        response = await self._request(ValidateRequest(str(task.folder), program), self.validation_budget_s(task))
        if response.ok:
            return cast(ValidationReport, response.result)
        fault = (
            response.result if isinstance(response.result, Fault) else Fault("crashed", "WORKER", response.error or "")
        )
        verdict: Verdict = "timed_out" if fault.kind == "timed_out" else "crashed"
        return ValidationReport(verdict=verdict, summary=response.error or fault.message, fault=fault)

    async def profile(
        self, task: Task, programs: list[ProgramRef], library: bool = False, torch_compile: bool = False
    ) -> ProfileReport | ProfileFailure:
        response = await self._request(
            ProfileRequest(str(task.folder), tuple(programs), library, torch_compile),
            self.profile_budget_s(len(programs) + int(library) + int(torch_compile)),
        )
        if response.ok:
            return cast(ProfileReport, response.result)
        fault = (
            response.result if isinstance(response.result, Fault) else Fault("crashed", "WORKER", response.error or "")
        )
        return ProfileFailure(fault)

    async def torch_compile(self, task: Task) -> str | None:
        """torch.compile an imported task's module in this worker (kept there for later profiles), with
        its own time limit: None when ready, else the one line saying why there is none. Past the
        limit the worker is killed (a compile cannot be interrupted) and restarted on its next job."""
        limit = self.settings.profile.torch_compile_timeout_s
        response = await self._request(
            TorchCompileRequest(str(task.folder)), limit + self.settings.worker.job_slack_s + _REFERENCE_ALLOWANCE_S
        )
        if response.ok:
            return cast("str | None", response.result)
        if isinstance(response.result, Fault) and response.result.kind == "timed_out":
            return f"torch.compile did not finish within {limit:.0f} s (settings: profile.torch_compile_timeout_s)"
        return f"torch.compile failed: {response.error or 'the GPU worker gave no reason'}"

    async def peaks(self, force: bool = False) -> Peaks:
        response = await self._request(PeaksRequest(force), 300.0)
        if not response.ok:
            raise RuntimeError(response.error or "peak measurement failed")
        return cast(Peaks, response.result)

    async def close(self) -> None:
        async with self._lock:
            proc = self._proc
            if proc is None:
                return
            if proc.returncode is None:
                # A worker that cannot say goodbye is killed below all the same.
                with contextlib.suppress(Exception):
                    await self._exchange(ShutdownRequest(), 10.0)
            await self._kill()

    async def __aenter__(self) -> GpuWorker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
