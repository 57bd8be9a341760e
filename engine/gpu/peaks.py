"""The roofline's ceilings, measured once per GPU and cached: copy bandwidth and fp32 FMA rate.

Tensor-core fp16 throughput is not measured (that needs an MMA kernel tuned per architecture); it
comes from the datasheet rate per SM and clock, and `Peaks.method` says so wherever it is shown.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import numpy as np

from cuda_llm.engine.gpu.driver import Context
from cuda_llm.engine.gpu.harness import FMA_PER_ITER, Harness
from cuda_llm.engine.gpu.protocol import DeviceInfo, Peaks
from cuda_llm.engine.paths import user_cache_dir

# Bytes per buffer of the bandwidth probes: far beyond any L2 (60 MiB on H200), small next to memory.
COPY_BYTES = 1 << 30
# Samples of each probe; the median is kept.
PEAK_SAMPLES = 15
# FMA probe: blocks per SM and threads per block that keep every FP32 pipe busy.
FMA_BLOCKS_PER_SM = 8
FMA_THREADS = 256
FMA_ITERS = 4096
# Dense fp16 tensor-core FLOP per SM per clock (fp32 accumulate), from NVIDIA's datasheets.
FP16_TENSOR_FLOP_PER_SM_CLOCK = {7: 512, 8: 1024, 9: 4096, 10: 8192, 12: 1024}
FP16_TENSOR_SM80 = 2048  # A100 (sm_80) doubles the other Ampere parts
# Bump when the measuring method changes, so old cached figures are not reused.
METHOD_VERSION = 3


def _cache_file():
    return user_cache_dir() / "peaks.json"


def _cache_key(info: DeviceInfo) -> str:
    return f"{info.uuid}|{info.driver_version}|v{METHOD_VERSION}"


def load_cached(info: DeviceInfo) -> Peaks | None:
    try:
        data = json.loads(_cache_file().read_text())
        return Peaks(**data[_cache_key(info)])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(info: DeviceInfo, peaks: Peaks) -> None:
    path = _cache_file()
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        data = {}
    data[_cache_key(info)] = asdict(peaks)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(path)


def _median_ms(ctx: Context, run, samples: int, timeout_s: float) -> float:
    ev0, ev1 = ctx.event(), ctx.event()
    times = []
    for _ in range(samples):
        ctx.record(ev0)
        run()
        ctx.record(ev1)
        ctx.wait(timeout_s)
        times.append(ctx.elapsed_ms(ev0, ev1))
    return float(np.median(times))


def fp16_tensor_rate(info: DeviceInfo) -> float:
    major, minor = info.compute_capability
    per = FP16_TENSOR_SM80 if (major, minor) == (8, 0) else FP16_TENSOR_FLOP_PER_SM_CLOCK.get(major, 1024)
    return per * info.sm_count * info.sm_clock_mhz * 1e6


def measure(ctx: Context, info: DeviceInfo, harness: Harness, timeout_s: float = 30.0) -> Peaks:
    nbytes = min(COPY_BYTES, ctx.free_memory() // 8) // 16 * 16
    bufs = [ctx.alloc(nbytes) for _ in range(3)]
    a, b, c = bufs
    try:
        for buf in bufs:
            ctx.fill32(buf, 0x3F800000)
        probes = {
            "copy": (2, lambda: harness.copy_launch(a, c)),
            "triad": (3, lambda: harness.triad_launch(a, b, c)),
            "read": (1, lambda: harness.read_launch(a)),
        }
        rates = {}
        for name, (passes, run) in probes.items():
            for _ in range(3):
                run()
            ctx.wait(timeout_s)
            rates[name] = passes * nbytes / (_median_ms(ctx, run, PEAK_SAMPLES, timeout_s) / 1000)
    finally:
        for buf in bufs:
            ctx.free(buf)
    bandwidth = max(rates.values())

    blocks = FMA_BLOCKS_PER_SM * info.sm_count
    for _ in range(3):
        harness.fma_launch(FMA_ITERS, blocks, FMA_THREADS)
    ctx.wait(timeout_s)
    fma_ms = _median_ms(ctx, lambda: harness.fma_launch(FMA_ITERS, blocks, FMA_THREADS), PEAK_SAMPLES, timeout_s)
    flops = 2.0 * FMA_PER_ITER * FMA_ITERS * blocks * FMA_THREADS / (fma_ms / 1000)
    return Peaks(
        gpu_uuid=info.uuid,
        bandwidth=bandwidth,
        fp32_flops=flops,
        fp16_tensor_flops=fp16_tensor_rate(info),
        method=(
            "bandwidth: best of "
            + ", ".join(f"{name} {rate / 1e12:.2f} TB/s" for name, rate in rates.items())
            + f" over {nbytes >> 20} MiB buffers; fp32: FMA kernel; fp16 tensor: datasheet rate"
        ),
        measured_at=time.strftime("%Y-%m-%d %H:%M"),
    )
