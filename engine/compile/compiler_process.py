"""One compiler child process and the parent's blocking handle on it.

NVRTC runs in a child because a template bomb can keep it busy for hours and grow without bound:
only a process can be killed mid-compile, and only a process can have its memory capped. The
child loads NVRTC once and then compiles one source per request over a pipe.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys
import time
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnContext
from typing import Any

from cuda_llm.engine.compile import header_macros
from cuda_llm.engine.compile.header_macros import KnownMacros
from cuda_llm.engine.compile.result import CompileResult, CompilerUnavailableError, failed_result
from cuda_llm.engine.core.errors import describe
from cuda_llm.engine.core.secrets import scrub_own_environment, secrets_hidden
from cuda_llm.engine.core.settings import CompileSettings

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _limit_resources(settings: CompileSettings, parent_pid: int) -> None:
    # RLIMIT_DATA counts memory actually allocated (mmap included since Linux 4.7); RLIMIT_AS
    # also counts address space merely reserved, and the CUDA driver reserves tens of GiB when
    # something loads it (NVRTC does, for its cache, unless told --no-cache): under RLIMIT_AS that
    # load fails quietly and changes what NVRTC does. Both caps stop the memory bomb in the tests.
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = settings.memory_limit_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    # NVRTC aborting under the cap must not leave gigabytes of core files behind.
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Ctrl-C is the parent's to handle: it kills its children when it stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        # A compile still running when the engine dies (kill -9, a crash) dies with it.
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)


def prepare_child(
    settings: CompileSettings, parent_pid: int, known_macros: KnownMacros | None = None
) -> dict[str, Any]:
    """Everything a compiler process does before its first request: limits, NVRTC loaded and
    warmed, then the process shut in (sandbox.py). Returns what `doctor` and the pool show.
    `known_macros`: the parent's analysis of the header macros, if it has one."""
    _limit_resources(settings, parent_pid)
    from cuda_llm.engine.compile import header_macros, headers, nvrtc, sandbox

    # Everything a compile needs is loaded now (NVRTC, its builtins, the headers extracted, the
    # modules of the compile path imported): once confined, the process can open nothing else.
    info = nvrtc.warm_up()
    header_dirs = info.pop("header_dirs")
    # The policy's analysis of the headers' macros, while their real paths can still be read: every
    # source is checked again in here (compile_in_process). The parent's, where it was made of the
    # same folders (the scan is 1 s of CPU on an idle 2-core machine, 4 s under load, per process).
    info["header_macros"] = "from the parent" if header_macros.adopt(known_macros) else "scanned"
    header_macros.current()
    # Compiled from beside the headers, by relative names: no host path in __FILE__ or the options.
    workdir, relative = headers.neutral_names(tuple(str(d) for d in header_dirs))
    os.chdir(workdir)
    status = sandbox.confine(header_dirs, nvrtc.self_test_for(header_dirs), settings.sandbox)
    info["sandbox"] = (status.active, status.detail)
    info["sandbox_mechanism"] = status.mechanism
    # As this process names them from now on: a chroot's own names (/./cccl), else the relative ones.
    info["include_dirs"] = status.include_dirs if status.mechanism == "chroot" else relative
    info["memory_limit_bytes"] = resource.getrlimit(resource.RLIMIT_DATA)[0]
    return info


def child_main(
    conn: Connection, settings: CompileSettings, parent_pid: int, known_macros: KnownMacros | None = None
) -> None:
    """The child's whole life: prepare (prepare_child), then answer requests until told to stop."""
    # Spawned with the parent's environment (multiprocessing cannot choose one): its keys go first.
    scrub_own_environment()
    try:
        info = prepare_child(settings, parent_pid, known_macros)
        from cuda_llm.engine.compile import nvrtc
    except BaseException as exc:  # anything that stops NVRTC loading is the parent's to report
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", info))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if request is None:
            return
        source, arch = request
        try:
            # The parent checked the source already; checking again here costs milliseconds and
            # keeps the policy in force even if a caller bypasses the parent's check.
            conn.send(("result", nvrtc.compile_in_process(source, arch, settings, info["include_dirs"])))
        except BaseException as exc:
            conn.send(("error", describe(exc)))


def timed_out_result(arch: str, settings: CompileSettings, version: tuple[int, int]) -> CompileResult:
    message = f"compile timed out after {settings.timeout_s:g} s (template recursion?)"
    return failed_result(arch, message, elapsed=settings.timeout_s, version=version, timed_out=True)


def _crashed_result(arch: str, message: str, elapsed: float, version: tuple[int, int]) -> CompileResult:
    return failed_result(arch, message, elapsed=elapsed, version=version)


class CompilerProcess:
    """The parent's handle on one child. Every call blocks; the async pool runs them in threads.
    Start it from a long-lived thread: the child's parent-death signal follows that thread."""

    def __init__(self, ctx: SpawnContext, settings: CompileSettings) -> None:
        self.settings = settings
        parent_end, child_end = ctx.Pipe(duplex=True)
        self.process = ctx.Process(
            target=child_main,
            args=(child_end, settings, os.getpid(), header_macros.known()),
            name="cuda-llm-compiler",
            daemon=True,
        )
        with secrets_hidden():  # the child (and multiprocessing's resource tracker) start without keys
            self.process.start()
        child_end.close()
        self.conn = parent_end
        self.info: dict[str, Any] | None = None
        self.healthy = True  # False once it timed out, died or was cancelled: it must be replaced

    @property
    def sandbox(self) -> tuple[bool, str] | None:
        """(confined, what is allowed or why not), once the child is ready."""
        if not self.info or "sandbox" not in self.info:
            return None
        confined, detail = self.info["sandbox"]
        return bool(confined), str(detail)

    @property
    def version(self) -> tuple[int, int]:
        return (int(self.info["nvrtc_version"][0]), int(self.info["nvrtc_version"][1])) if self.info else (0, 0)

    def _death(self) -> str:
        self.process.join(1.0)
        code = self.process.exitcode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"signal {signal.Signals(-code).name}"
        return f"exit code {code}"

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.info is not None:
            return self.info
        try:
            if not self.conn.poll(timeout):
                self.kill()
                raise CompilerUnavailableError(f"the compiler process did not start within {timeout:g} s")
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            self.healthy = False
            raise CompilerUnavailableError(f"the compiler process died while starting ({self._death()})") from None
        if kind != "ready":
            self.kill()
            raise CompilerUnavailableError(f"the compiler could not start: {payload}")
        self.info = payload
        return payload

    def compile(self, source: str, arch: str, timeout: float) -> CompileResult:
        """Compile in the child; on timeout or death, return the failed result and mark this
        process unhealthy (the caller replaces it)."""
        started = time.perf_counter()
        try:
            self.conn.send((source, arch))
            if not self.conn.poll(timeout):
                self.kill()
                return timed_out_result(arch, self.settings, self.version)
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            self.healthy = False
            elapsed = time.perf_counter() - started
            # NVVM aborts ("LLVM ERROR: out of memory") where the front end would report it.
            limit = self.settings.memory_limit_bytes / 1024**3
            return _crashed_result(
                arch,
                f"the compiler process died while compiling this source ({self._death()}); "
                f"out of memory? (limit {limit:g} GiB)",
                elapsed,
                self.version,
            )
        if kind == "result":
            return payload
        # An exception inside the child (a MemoryError under the cap, say): the process may be in
        # any state, so it is replaced.
        self.kill()
        return _crashed_result(arch, f"the compiler failed: {payload}", time.perf_counter() - started, self.version)

    def kill(self) -> None:
        # The pipe stays open: a thread may still be polling it, and the child's death is what
        # wakes that thread (with EOF). It closes in close(), or when the handle is collected.
        self.healthy = False
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5.0)

    def close(self) -> None:
        """Ask the child to stop; kill it if it does not within a second."""
        if self.process.is_alive() and self.healthy:
            with contextlib.suppress(OSError):
                self.conn.send(None)
            self.process.join(1.0)
        self.kill()
        with contextlib.suppress(OSError):
            self.conn.close()
