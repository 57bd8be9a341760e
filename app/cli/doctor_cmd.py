"""`cuda-llm doctor`: what works here - packages, NVRTC and headers, the driver and GPUs, NVML, the
model servers, the database, and with --cluster a Ray cluster's nodes and GPUs. Exit code 1 when
something needed for compiling (or the cluster asked about) is broken."""

from __future__ import annotations

import argparse
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuda_llm.app.cli.argtypes import arch
from cuda_llm.app.cli.output import print_json

if TYPE_CHECKING:
    from cuda_llm.engine.core.settings import CompileSettings

# How long a model server gets to answer before it is reported unreachable.
SERVER_PROBE_TIMEOUT_S = 3.0
_PROBE_KERNEL = 'extern "C" __global__ void probe(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 1.0f; }'


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str


def _version(dist: str) -> str | None:
    try:
        from importlib import metadata  # here: `cuda-llm --help` need not import it

        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_packages() -> list[Check]:
    out = [Check("python", "ok", f"{platform.python_version()} ({platform.machine()})")]
    for dist in (
        "cuda-bindings",
        "nvidia-cuda-nvrtc",
        "nvidia-ml-py",
        "numpy",
        "textual",
        "ollama",
        "openai",
    ):
        v = _version(dist)
        out.append(
            Check(
                dist,
                "ok" if v else ("warn" if dist == "nvidia-cuda-nvrtc" else "fail"),
                v or "not installed",
            )
        )
    from cuda_llm.engine.cluster.doctor import ray_row  # (does not import Ray)

    out.append(Check(*ray_row()))
    return out


def check_compiler(arch: str) -> list[Check]:
    from cuda_llm.engine.compile.nvrtc import compile_in_process

    try:
        start = time.monotonic()
        result = compile_in_process(_PROBE_KERNEL, arch)
        took = time.monotonic() - start
    except Exception as exc:
        return [Check("nvrtc", "fail", f"cannot compile: {exc}")]
    major, minor = result.nvrtc_version
    checks = [
        Check(
            "nvrtc",
            "ok" if result.ok else "fail",
            f"NVRTC {major}.{minor}: compiled a kernel for {arch} in {took:.2f} s"
            if result.ok
            else f"NVRTC {major}.{minor} failed: {result.error}",
        )
    ]
    try:
        from cuda_llm.engine.compile import nvrtc_library

        dirs = nvrtc_library.header_folders()
        checks.append(
            Check(
                "cuda headers",
                "ok" if dirs else "warn",
                dirs.origin
                if dirs
                else "none found: kernels that #include <cuda_fp16.h> cannot compile; install "
                "nvidia-cuda-nvrtc>=13.3 or set CUDA_HOME",
            )
        )
    except Exception as exc:
        checks.append(Check("cuda headers", "warn", f"not checked: {exc}"))
    return checks


async def check_sandbox(settings: CompileSettings | None = None) -> Check:
    """Whether the compiler processes are shut in (engine/compile/sandbox.py): a hostile reply that
    got past the include policy could otherwise make the compiler read the host's files."""
    from cuda_llm.engine.compile.compiler_pool import CompilerPool

    try:
        async with CompilerPool(settings, workers=1) as pool:
            confined, detail = await pool.sandbox()
    except Exception as exc:
        return Check("compiler sandbox", "warn", f"not checked: {exc}")
    if confined:
        return Check("compiler sandbox", "ok", detail)
    return Check(
        "compiler sandbox",
        "warn",
        f"NOT ACTIVE: {detail}; only the include policy keeps a reply from making the compiler read "
        "host files (a Linux kernel with Landlock, 5.13 or later, or unprivileged user namespaces "
        "for a chroot jail close that)",
    )


async def check_gpu() -> tuple[list[Check], str | None]:
    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.gpu.client import GpuUnavailable, GpuWorker
    from cuda_llm.engine.gpu.peaks import load_cached
    from cuda_llm.engine.judge.judge_environment import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason:
        return [Check("gpu", "warn", f"{reason}: compile-only mode (cuda-llm still compiles and binds)")], None
    worker = GpuWorker(0, Settings())
    try:
        start = time.monotonic()
        info = await worker.start()
        took = time.monotonic() - start
    except GpuUnavailable as exc:
        return [Check("gpu", "fail", str(exc))], None
    finally:
        await worker.close()
    peaks = load_cached(info)
    checks = [
        Check("driver", "ok", f"CUDA driver {info.driver_version}"),
        Check(
            "gpu",
            "ok",
            f"{info.name} ({info.arch}), {info.sm_count} SMs, {info.memory_bytes / 2**30:.0f} GiB, "
            f"L2 {info.l2_bytes >> 20} MiB; worker started in {took:.1f} s",
        ),
        Check(
            "peaks",
            "ok" if peaks else "warn",
            f"{peaks.bandwidth / 1e12:.2f} TB/s, {peaks.fp32_flops / 1e12:.1f} TFLOP/s fp32 ({peaks.measured_at})"
            if peaks
            else "not measured yet (measured once, at the first run on this GPU)",
        ),
    ]
    return checks, info.arch


def check_counters() -> Check:
    """Where ncu is, for the counters step (engine/counters); whether this user may read the counters
    shows at the first run, as one line (it needs a GPU and seconds)."""
    from cuda_llm.engine.core.settings import CountersSettings
    from cuda_llm.engine.counters.runner import NO_NCU, find_ncu

    ncu = find_ncu(CountersSettings())
    if ncu is None:
        return Check("ncu", "warn", f"{NO_NCU}; without it there is no 'what limits it' line")
    return Check("ncu", "ok", f"{ncu}: hardware counters say what limits each round's best")


def check_nvml() -> Check:
    from cuda_llm.engine.gpu.telemetry import Nvml, list_gpus

    gpus = list_gpus()
    if gpus is None:
        return Check("nvml", "warn", "NVML unavailable: no live clocks, temperature or throttle checks")
    parts = [
        f"GPU{i}: {g.sm_clock_mhz} MHz, {g.temperature_c} C, {g.power_w or 0:.0f} W, {g.utilization_gpu}% busy"
        + (f", {g.other_processes} other process(es)" if g.other_processes else "")
        for i, g in enumerate(gpus)
    ]
    return Check("nvml", "ok", f"driver {Nvml.driver_version()}; " + "; ".join(parts))


def _models_text(models: list[str]) -> str:
    """'3 model(s): a, b, c' (the first MODELS_LISTED of them), or 'no models'."""
    from cuda_llm.engine.llm.http_errors import MODELS_LISTED

    if not models:
        return "no models (pull or load one first)"
    more = f" and {len(models) - MODELS_LISTED} more" if len(models) > MODELS_LISTED else ""
    return f"{len(models)} model(s): {', '.join(models[:MODELS_LISTED])}{more}"


async def check_servers(host: str | None, base_url: str | None) -> list[Check]:
    import httpx

    checks = []
    ollama = host or os.environ.get("OLLAMA_HOST") or "http://127.0.0.1:11434"
    if "://" not in ollama:
        ollama = f"http://{ollama}"
    if ollama.count(":") < 2:
        ollama = f"{ollama}:11434"
    async with httpx.AsyncClient(timeout=SERVER_PROBE_TIMEOUT_S) as client:
        try:
            r = await client.get(f"{ollama.rstrip('/')}/api/tags")
            r.raise_for_status()
            models = [str(m.get("name")) for m in r.json().get("models", []) if isinstance(m, dict)]
            checks.append(Check("ollama", "ok" if models else "warn", f"{ollama}: {_models_text(models)}"))
        except Exception as exc:
            checks.append(
                Check(
                    "ollama",
                    "warn",
                    f"cannot reach {ollama} ({type(exc).__name__}); start `ollama serve` or set --host/OLLAMA_HOST",
                )
            )
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        if url:
            headers = (
                {"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"} if os.environ.get("OPENAI_API_KEY") else {}
            )
            try:
                r = await client.get(f"{url.rstrip('/')}/models", headers=headers)
                r.raise_for_status()
                models = [str(m.get("id")) for m in r.json().get("data", []) if isinstance(m, dict)]
                checks.append(Check("openai", "ok" if models else "warn", f"{url}: {_models_text(models)}"))
            except Exception as exc:
                checks.append(Check("openai", "warn", f"cannot list models at {url} ({type(exc).__name__})"))
        else:
            checks.append(Check("openai", "ok", "no OPENAI_BASE_URL set (only needed for openai:MODEL)"))
    return checks


def check_storage(db: str | None) -> Check:
    from cuda_llm.engine.store.sessions import SessionStore, StoreError, default_db_path

    path = Path(db) if db else default_db_path()
    if not path.exists():
        # Looking creates nothing: a mistyped --db must not leave a folder and an empty database behind.
        where = "(created at the first run)" if path.parent.is_dir() or not db else "(its folder does not exist either)"
        return Check("database", "ok" if not db else "warn", f"no database yet at {path} {where}")
    try:
        store = SessionStore(db, read_only=True)
    except StoreError as exc:
        return Check("database", "fail", str(exc))
    try:
        n = len(store.sessions(10_000))
        return Check("database", "ok", f"{store.path}: {n} session(s)")
    finally:
        store.close()


async def _doctor(args: argparse.Namespace) -> int:
    checks = check_packages()
    gpu_checks, device_arch = await check_gpu()
    checks += check_compiler(device_arch or args.arch or "sm_90")
    checks.append(await check_sandbox())
    checks += gpu_checks
    checks.append(check_nvml())
    checks.append(check_counters())
    if getattr(args, "cluster", None):
        from cuda_llm.engine.cluster.doctor import cluster_rows

        checks += [Check(*row) for row in await cluster_rows(args.cluster)]
    checks += await check_servers(args.host, args.base_url)
    checks.append(check_storage(args.db))
    if args.json:
        print_json(checks)
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"{c.status:4}  {c.name.ljust(width)}  {c.detail}")
    return 1 if any(c.status == "fail" for c in checks) else 0


def doctor(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_doctor(args))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check the driver, GPU, NVRTC, NVML, model servers and database")
    p.add_argument("--arch", type=arch, help="arch to test-compile for when there is no GPU (default sm_90)")
    p.add_argument("--host", help="ollama server to probe")
    p.add_argument("--base-url", help="OpenAI-compatible server to probe")
    p.add_argument("--db", help="sessions database")
    p.add_argument("--cluster", metavar="ADDRESS", help="also check a Ray cluster: its nodes, and its GPUs by model")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=doctor)
