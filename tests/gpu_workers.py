"""One GPU per pytest-xdist worker, so that the GPU suite of a multi-GPU host runs on all its GPUs
at once without two workers timing each other on one device:

    CUDA_LLM_TEST_GPU_PER_WORKER=1 python -m pytest -m gpu -n auto

`-n auto` then starts one worker per GPU (tests/conftest.py), and each worker sees only its own
GPU through CUDA_VISIBLE_DEVICES, set before anything in it initialises CUDA. Tests that need
several GPUs skip under it (each worker has one); run them after with every GPU visible.
"""

from __future__ import annotations

import os

GPU_PER_WORKER = "CUDA_LLM_TEST_GPU_PER_WORKER"


class GpuWorkerError(Exception):
    """More workers than GPUs: two of them would share one and time each other."""


def wanted() -> bool:
    return os.environ.get(GPU_PER_WORKER, "") not in ("", "0")


def visible_gpus(cuda_visible_devices: str | None, host_count: int) -> list[str]:
    """The GPUs the run may use: CUDA_VISIBLE_DEVICES's list where it is set, else every GPU of the host."""
    if cuda_visible_devices is not None and cuda_visible_devices.strip():
        return [d.strip() for d in cuda_visible_devices.split(",") if d.strip()]
    return [str(i) for i in range(host_count)]


def worker_gpu(worker: str, gpus: list[str]) -> str:
    """The GPU that the xdist worker named `worker` ("gw2") keeps to itself."""
    index = int(worker.removeprefix("gw"))
    if index >= len(gpus):
        raise GpuWorkerError(
            f"{GPU_PER_WORKER}: worker {worker} has no GPU of its own ({len(gpus)} visible: "
            f"{','.join(gpus) or 'none'}); run with -n {len(gpus)} or -n auto"
        )
    return gpus[index]


def check_workers(workers: int | None, gpus: list[str]) -> None:
    """Refuse more workers than GPUs (None or 0: no workers, nothing to share)."""
    if workers:
        worker_gpu(f"gw{workers - 1}", gpus)


def host_gpu_count() -> int:
    """The host's GPUs, from NVML (which, unlike CUDA, leaves no state that CUDA_VISIBLE_DEVICES
    could no longer change)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return 0
