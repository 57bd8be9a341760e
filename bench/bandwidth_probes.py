"""How fast can this GPU's memory go? Bandwidth probe variants against the physical limit.

The roofline's memory ceiling is only as good as the fastest kernel that measures it. This bench
times a family of streaming kernels (copy, triad, read, write; 1 to 8 float4 per thread in flight;
one pass or grid-stride) on buffers of the task library's sizes and larger, the way the profiler
times a candidate (L2 flushed, launch queued behind a delay kernel, CUDA events, median), and
prints each rate against the physical limit read from the device (memory clock x bus width x 2)
and against the engine's own probe. A probe variant that loses to a plain float4 vector_add is
not measuring the ceiling.

    python -m bench.bandwidth_probes [--samples 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# V float4 per thread, all loads issued before any store ("bytes in flight"); the V accesses of a
# thread are blockDim apart, so every warp-wide access stays coalesced.
VARIANTS_SOURCE = r"""
template <bool CS> __device__ __forceinline__ float4 load(const float4* p) { return CS ? __ldcs(p) : *p; }
template <bool CS> __device__ __forceinline__ void store(float4* p, float4 v) { if (CS) __stcs(p, v); else *p = v; }

template <int V, bool CS>
__device__ void copy_v(const float4* __restrict__ src, float4* __restrict__ dst, unsigned long long n4)
{
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * V + threadIdx.x;
    float4 r[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
        unsigned long long i = base + (unsigned long long)k * blockDim.x;
        if (i < n4) r[k] = load<CS>(src + i);
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
        unsigned long long i = base + (unsigned long long)k * blockDim.x;
        if (i < n4) store<CS>(dst + i, r[k]);
    }
}

template <int V, bool CS>
__device__ void triad_v(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c,
                        unsigned long long n4)
{
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * V + threadIdx.x;
    float4 x[V], y[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
        unsigned long long i = base + (unsigned long long)k * blockDim.x;
        if (i < n4) { x[k] = load<CS>(a + i); y[k] = load<CS>(b + i); }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
        unsigned long long i = base + (unsigned long long)k * blockDim.x;
        if (i < n4) store<CS>(c + i, make_float4(x[k].x + y[k].x, x[k].y + y[k].y, x[k].z + y[k].z, x[k].w + y[k].w));
    }
}

template <int V, bool CS>
__device__ void read_v(const float4* __restrict__ a, unsigned long long n4, float* sink)
{
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * V + threadIdx.x;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < V; ++k) {
        unsigned long long i = base + (unsigned long long)k * blockDim.x;
        if (i < n4) { float4 v = load<CS>(a + i); acc += (v.x + v.y) + (v.z + v.w); }
    }
    if (acc == 123.456f) *sink = acc;
}

template <int V, bool CS>
__device__ void write_v(float4* __restrict__ dst, unsigned long long n4)
{
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * V + threadIdx.x;
#pragma unroll
    for (int k = 0; k < V; ++k) {
        unsigned long long i = base + (unsigned long long)k * blockDim.x;
        if (i < n4) store<CS>(dst + i, make_float4(1.0f, 2.0f, 3.0f, 4.0f));
    }
}

typedef unsigned long long u64;
#define DEFINE(V, CS, TAG) \
extern "C" __global__ void copy##TAG##V(const float4* s, float4* d, u64 n4) { copy_v<V, CS>(s, d, n4); } \
extern "C" __global__ void triad##TAG##V(const float4* a, const float4* b, float4* c, u64 n4) \
    { triad_v<V, CS>(a, b, c, n4); } \
extern "C" __global__ void read##TAG##V(const float4* a, u64 n4, float* sink) { read_v<V, CS>(a, n4, sink); } \
extern "C" __global__ void write##TAG##V(float4* d, u64 n4) { write_v<V, CS>(d, n4); }
DEFINE(1, false, )
DEFINE(2, false, )
DEFINE(4, false, )
DEFINE(8, false, )
DEFINE(1, true, cs)
DEFINE(2, true, cs)
DEFINE(4, true, cs)
DEFINE(8, true, cs)

// Grid-stride triad with 4 float4 of each input in flight per thread, grid sized to the SMs.
extern "C" __global__ void triad_gs(const float4* __restrict__ a, const float4* __restrict__ b,
                                    float4* __restrict__ c, unsigned long long n4)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 x0 = a[i], x1 = a[i + stride], x2 = a[i + 2 * stride], x3 = a[i + 3 * stride];
        float4 y0 = b[i], y1 = b[i + stride], y2 = b[i + 2 * stride], y3 = b[i + 3 * stride];
        c[i] = make_float4(x0.x + y0.x, x0.y + y0.y, x0.z + y0.z, x0.w + y0.w);
        c[i + stride] = make_float4(x1.x + y1.x, x1.y + y1.y, x1.z + y1.z, x1.w + y1.w);
        c[i + 2 * stride] = make_float4(x2.x + y2.x, x2.y + y2.y, x2.z + y2.z, x2.w + y2.w);
        c[i + 3 * stride] = make_float4(x3.x + y3.x, x3.y + y3.y, x3.z + y3.z, x3.w + y3.w);
    }
    for (; i < n4; i += stride) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

// The held-out candidate vector_add (bench/heldout/vector_add_float4.md), for comparison.
extern "C" __global__ void vadd4(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n) {
        float4 x = *reinterpret_cast<const float4*>(a + i);
        float4 y = *reinterpret_cast<const float4*>(b + i);
        *reinterpret_cast<float4*>(c + i) = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    } else {
        for (int j = i; j < n; ++j) c[j] = a[j] + b[j];
    }
}
"""

# (kernel base name, buffers read, buffers written)
KINDS = {"copy": (1, 1), "triad": (2, 1), "read": (1, 0), "write": (0, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--sizes-mib", type=int, nargs="+", default=[128, 1024])
    parser.add_argument("--blocks", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from cuda_llm.engine.compile.nvrtc import compile_in_process
    from cuda_llm.engine.core.settings import Settings
    from cuda_llm.engine.gpu import peaks as peak_probe
    from cuda_llm.engine.gpu.driver import pack_params
    from cuda_llm.engine.gpu.worker_process import WorkerState

    state = WorkerState(0, Settings())
    ctx, info, harness = state.ctx, state.info, state.harness
    physical = info.spec_bandwidth
    result = compile_in_process(VARIANTS_SOURCE, info.arch)
    if not result.ok:
        print(result.log)
        return 1
    module = ctx.load_module(result.cubin)
    fn = lambda name: ctx.function(module, name)  # noqa: E731
    ev0, ev1 = ctx.event(), ctx.event()

    def timed_ms(launch) -> float:
        times = []
        for k in range(args.samples + 3):
            harness.flush_l2()
            harness.delay_us(50)
            ctx.record(ev0)
            launch()
            ctx.record(ev1)
            ctx.wait(30)
            if k >= 3:
                times.append(ctx.elapsed_ms(ev0, ev1))
        return statistics.median(times)

    rows = []
    clock = state.nvml.sm_clock() if state.nvml else None
    for mib in args.sizes_mib:
        nbytes = mib << 20
        n4 = nbytes // 16
        bufs = [ctx.alloc(nbytes) for _ in range(3)]
        for b in bufs:
            ctx.fill32(b, 0x3F800000)
        a, b, c = (x.ptr for x in bufs)
        for kind, (reads, writes) in KINDS.items():
            for v, tag in [(v, tag) for v in (1, 2, 4, 8) for tag in ("", "cs")]:
                for threads in args.blocks:
                    f = fn(f"{kind}{tag}{v}")
                    grid = (-(-n4 // (threads * v)), 1, 1)
                    ptrs = {"copy": [a, c], "triad": [a, b, c], "read": [a], "write": [c]}[kind]
                    values = [("ptr", p) for p in ptrs] + [("uint64", n4)]
                    if kind == "read":
                        values.append(("ptr", harness.sink.ptr))
                    params = pack_params(values)
                    ms = timed_ms(
                        lambda f=f, grid=grid, params=params, t=threads: ctx.launch(f, grid, (t, 1, 1), 0, params)
                    )
                    rate = (reads + writes) * nbytes / (ms / 1000)
                    rows.append(
                        {
                            "probe": f"{kind}{' streaming' if tag else ''} x{v} b{threads}",
                            "mib": mib,
                            "us": ms * 1000,
                            "tbs": rate / 1e12,
                        }
                    )
        for waves in (2, 4, 8):
            grid = (waves * info.sm_count * (2048 // 256), 1, 1)
            params = pack_params([("ptr", a), ("ptr", b), ("ptr", c), ("uint64", n4)])
            ms = timed_ms(lambda grid=grid, params=params: ctx.launch(fn("triad_gs"), grid, (256, 1, 1), 0, params))
            rows.append(
                {
                    "probe": f"triad grid-stride x4 {waves}w",
                    "mib": mib,
                    "us": ms * 1000,
                    "tbs": 3 * nbytes / (ms / 1000) / 1e12,
                }
            )
        n = nbytes // 4
        params = pack_params([("ptr", a), ("ptr", b), ("ptr", c), ("int32", n)])
        ms = timed_ms(lambda params=params, n=n: ctx.launch(fn("vadd4"), (-(-n // 1024), 1, 1), (256, 1, 1), 0, params))
        rows.append(
            {
                "probe": "vector_add float4 (held-out candidate)",
                "mib": mib,
                "us": ms * 1000,
                "tbs": 3 * nbytes / (ms / 1000) / 1e12,
            }
        )
        ms = timed_ms(lambda dst=bufs[2], src=bufs[0]: ctx.copy(dst, src))
        rows.append({"probe": "cuMemcpyDtoD", "mib": mib, "us": ms * 1000, "tbs": 2 * nbytes / (ms / 1000) / 1e12})
        for x in bufs:
            ctx.free(x)

    engine = peak_probe.measure(ctx, info, harness)
    print(f"device: {info.name} ({info.arch}), driver {info.driver_version}, SM clock now {clock} MHz")
    print(
        f"physical limit: {physical / 1e12:.3f} TB/s (memory clock {info.memory_clock_mhz} MHz x "
        f"{info.memory_bus_bits} bit x 2); engine probe today: {engine.bandwidth / 1e12:.3f} TB/s ({engine.method})"
    )
    print(f"{'probe':42s} {'MiB':>6s} {'us':>9s} {'TB/s':>7s} {'of physical':>11s}")
    for r in sorted(rows, key=lambda r: (r["mib"], -r["tbs"])):
        print(f"{r['probe']:42s} {r['mib']:6d} {r['us']:9.1f} {r['tbs']:7.3f} {r['tbs'] * 1e12 / physical:10.1%}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "device": info.name,
                    "physical_tbs": physical / 1e12,
                    "engine_probe_tbs": engine.bandwidth / 1e12,
                    "engine_method": engine.method,
                    "rows": rows,
                },
                indent=2,
            )
        )
    ctx.unload_module(module)
    state.refs.unpin_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
