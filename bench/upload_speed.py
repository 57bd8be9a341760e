"""Host-to-device copy speed from pageable and from page-locked (pinned) host memory, through the
engine's own driver wrapper: why the reference cache pins its large arrays (engine/gpu/reference_cache.py).
Prints GB/s per size (median of 5 copies) and the device.

    python -m bench.upload_speed [--gpu 0]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from cuda_llm.engine.gpu.driver import Context

SIZES_MB = (16, 128, 512)
COPIES = 5


def gbps(ctx: Context, host: np.ndarray) -> float:
    buf = ctx.alloc(host.nbytes)
    try:
        times = []
        for _ in range(COPIES):
            start = time.perf_counter()
            ctx.upload(buf, host)
            ctx.wait(60.0)
            times.append(time.perf_counter() - start)
        return host.nbytes / statistics.median(times) / 1e9
    finally:
        ctx.free(buf)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", type=int, default=0)
    args = p.parse_args(argv)
    ctx = Context(args.gpu)
    print(f"device: {ctx.name()} (GPU {args.gpu}); host-to-device, median of {COPIES} copies")
    for mb in SIZES_MB:
        host = np.random.default_rng(mb).random(mb * 2**20 // 8)
        pageable = gbps(ctx, host)
        start = time.perf_counter()
        pinned_ok = ctx.pin(host)
        pin_ms = (time.perf_counter() - start) * 1000
        if not pinned_ok:
            print(f"{mb:5d} MB: pageable {pageable:5.1f} GB/s; the driver refused to pin it")
            continue
        try:
            pinned = gbps(ctx, host)
        finally:
            ctx.unpin(host)
        print(f"{mb:5d} MB: pageable {pageable:5.1f} GB/s, pinned {pinned:5.1f} GB/s (pinning took {pin_ms:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
