"""The roofline's ceilings on one GPU: physical (what the hardware allows) and achievable (what our
probes reach), the latter measured once per GPU and cached.

Physical limits come from the device itself: DRAM bandwidth from the memory clock and bus width
(NVML, or the driver's attributes where NVML is missing), fp32 from the SM count, FP32 lanes per SM
and maximum SM clock. Achievable ones are measured: the fastest of the streaming probes (copy,
triad, read, write; python -m bench.bandwidth_probes compared them with everything faster we tried)
and an FMA-bound kernel. Tensor-core fp16 throughput is not measured (that needs an MMA kernel tuned
per architecture); it comes from the datasheet rate per SM and clock, and `Peaks.method` says so
wherever it is shown.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from functools import partial
from pathlib import Path

import numpy as np

from cuda_llm.engine.core.files import update_atomically
from cuda_llm.engine.core.paths import user_cache_dir
from cuda_llm.engine.gpu.driver import Context
from cuda_llm.engine.gpu.harness import FMA_PER_ITER, Harness
from cuda_llm.engine.gpu.protocol import DeviceInfo, Peaks

# The bandwidth probes run at two buffer sizes: the task library's typical buffer (128 MiB, twice
# the largest L2) and a large one. Which is faster depends on the GPU and the access mix (on an H100
# reads and triads ran 3-4% faster at 128 MiB, writes 2% faster at 1 GiB).
PROBE_BYTES = (128 << 20, 1 << 30)
# Threads per block of the probes: 256 and 512 were within 0.3% of each other, each winning somewhere.
PROBE_THREADS = (256, 512)
# Samples of each probe; the median is kept.
PEAK_SAMPLES = 15
# FMA probe: blocks per SM and threads per block that keep every FP32 pipe busy.
FMA_BLOCKS_PER_SM = 8
FMA_THREADS = 256
FMA_ITERS = 4096
# Dense fp16 tensor-core FLOP per SM per clock (fp32 accumulate), from NVIDIA's datasheets.
FP16_TENSOR_FLOP_PER_SM_CLOCK = {7: 512, 8: 1024, 9: 4096, 10: 8192, 12: 1024}
FP16_TENSOR_SM80 = 2048  # A100 (sm_80) doubles the other Ampere parts
# FP32 lanes per SM (each does one FMA, two flops, a clock), from the CUDA programming guide's
# table of arithmetic throughput: 64 on Volta, Turing and the A100, 128 on every later part.
FP32_LANES_PER_SM = {(7, 0): 64, (7, 2): 64, (7, 5): 64, (8, 0): 64}
FP32_LANES_DEFAULT = 128
# Bump when the measuring method changes, so old cached figures are not reused.
METHOD_VERSION = 4
# Before the probes, a few runs bring the clocks up and the pages in.
PROBE_WARMUP_RUNS = 3
# The probes' launches are queued behind this long a delay kernel, so host latency stays out.
PROBE_DELAY_US = 50.0


def _cache_file() -> Path:
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
    """Add this GPU's peaks to the cache file, which the workers of other GPUs may be updating at
    the same moment (each keeps the others' entries)."""

    def with_ours(old: str | None) -> str:
        try:
            data = json.loads(old) if old else {}
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        data[_cache_key(info)] = asdict(peaks)
        return json.dumps(data, indent=2)

    update_atomically(_cache_file(), with_ours)


def _median_ms(ctx: Context, harness: Harness, run: Callable[[], object], samples: int, timeout_s: float) -> float:
    """The median of `samples` runs, each timed the way the profiler times a candidate: L2 flushed,
    the launch queued behind a delay kernel, CUDA events around it."""
    ev0, ev1 = ctx.event(), ctx.event()
    times = []
    for _ in range(samples):
        harness.flush_l2()
        harness.delay_us(PROBE_DELAY_US)
        ctx.record(ev0)
        run()
        ctx.record(ev1)
        ctx.wait(timeout_s)
        times.append(ctx.elapsed_ms(ev0, ev1))
    return float(np.median(times))


def physical_bandwidth(info: DeviceInfo) -> float:
    """Bytes/s the DRAM interface can move at all: memory clock x bus width x 2 (DDR)."""
    return info.spec_bandwidth


def physical_fp32(info: DeviceInfo) -> float:
    """Flop/s of fp32 FMAs on every lane of every SM at the maximum SM clock."""
    lanes = FP32_LANES_PER_SM.get(info.compute_capability, FP32_LANES_DEFAULT)
    return 2.0 * lanes * info.sm_count * info.sm_clock_mhz * 1e6


def fp16_tensor_rate(info: DeviceInfo) -> float:
    major, minor = info.compute_capability
    per = FP16_TENSOR_SM80 if (major, minor) == (8, 0) else FP16_TENSOR_FLOP_PER_SM_CLOCK.get(major, 1024)
    return per * info.sm_count * info.sm_clock_mhz * 1e6


def _bandwidth(ctx: Context, harness: Harness, timeout_s: float) -> dict[str, float]:
    """Every probe's rate in bytes/s, by name ("triad 128 MiB b256")."""
    rates: dict[str, float] = {}
    for size in PROBE_BYTES:
        nbytes = min(size, ctx.free_memory() // 8) // 16 * 16
        bufs = [ctx.alloc(nbytes) for _ in range(3)]
        a, b, c = bufs
        try:
            for buf in bufs:
                ctx.fill32(buf, 0x3F800000)
            for threads in PROBE_THREADS:
                probes = {
                    "copy": (2, partial(harness.copy_launch, a, c, threads)),
                    "triad": (3, partial(harness.triad_launch, a, b, c, threads)),
                    "read": (1, partial(harness.read_launch, a, threads)),
                    "write": (1, partial(harness.write_launch, c, threads)),
                }
                for name, (passes, run) in probes.items():
                    for _ in range(PROBE_WARMUP_RUNS):
                        run()
                    ctx.wait(timeout_s)
                    ms = _median_ms(ctx, harness, run, PEAK_SAMPLES, timeout_s)
                    rates[f"{name} {nbytes >> 20} MiB b{threads}"] = passes * nbytes / (ms / 1000)
        finally:
            for buf in bufs:
                ctx.free(buf)
    return rates


def measure(ctx: Context, info: DeviceInfo, harness: Harness, timeout_s: float = 30.0) -> Peaks:
    rates = _bandwidth(ctx, harness, timeout_s)
    best = max(rates, key=rates.__getitem__)

    blocks = FMA_BLOCKS_PER_SM * info.sm_count
    fma = lambda: harness.fma_launch(FMA_ITERS, blocks, FMA_THREADS)  # noqa: E731
    for _ in range(PROBE_WARMUP_RUNS):
        fma()
    ctx.wait(timeout_s)
    fma_ms = _median_ms(ctx, harness, fma, PEAK_SAMPLES, timeout_s)
    flops = 2.0 * FMA_PER_ITER * FMA_ITERS * blocks * FMA_THREADS / (fma_ms / 1000)
    bandwidth_physical = physical_bandwidth(info)
    return Peaks(
        gpu_uuid=info.uuid,
        bandwidth=rates[best],
        fp32_flops=flops,
        fp16_tensor_flops=fp16_tensor_rate(info),
        method=(
            f"achievable bandwidth: the fastest of {len(rates)} streaming probes, {best} "
            f"({rates[best] / 1e12:.2f} TB/s, {rates[best] / bandwidth_physical:.0%} of physical); "
            f"physical: {info.memory_clock_mhz} MHz x {info.memory_bus_bits} bit x 2; "
            "fp32: FMA kernel against SMs x lanes x clock; fp16 tensor: datasheet rate"
        ),
        measured_at=time.strftime("%Y-%m-%d %H:%M"),
        bandwidth_physical=bandwidth_physical,
        fp32_physical=physical_fp32(info),
    )
