"""The harness's own kernels: the shared-memory scrub, the L2 flush, the byte comparison, and the
peak probes.

They live in a module of their own, so a candidate's kernel that happens to share a name with one of
them cannot collide with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cuda_llm.engine.gpu.driver import Context, DeviceBuffer, pack_params
from cuda_llm.engine.task.dtypes import DTYPES
from cuda_llm.engine.task.model import Tolerance

_HARNESS_TEMPLATE = r"""
// Overwrite every byte of the block's shared memory with a pattern. Launched on every SM with the
// largest dynamic allocation, it leaves garbage where a kernel might hope to find data left behind.
extern "C" __global__ void harness_scrub_shared(unsigned int pattern, unsigned int words)
{
    extern __shared__ unsigned int smem[];
    for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) {
        smem[i] = pattern ^ (i * 2654435761u & 0x00010001u);
    }
    __syncthreads();
}

// Read a buffer larger than the L2 so that none of the kernel-under-test's data stays cached.
// Reading (not writing) leaves only clean lines behind: no write-back lands in the timed region
// (a write flush, as triton's do_bench does, adds 5-10 us of write-back to the next kernel: python
// -m bench.timing_methods). The loads carry an evict_last policy so that they also displace lines a
// kernel marked evict_last to make them outlive a flush (a plain read left 7% of such a gain on an
// H100: python -m bench.l2_residency); harness_demote_l2 then returns the flush buffer's own lines
// to normal priority, so they do not squat in the L2 the next kernel may legitimately use.
extern "C" __global__ void harness_flush_l2(const float4* __restrict__ buf, unsigned long long n4,
                                            float* sink)
{
    float acc = 0.0f;
#if __CUDA_ARCH__ >= 800
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
#endif
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
         i += (unsigned long long)gridDim.x * blockDim.x) {
#if __CUDA_ARCH__ >= 800
        float x, y, z, w;
        asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "l"(buf + i), "l"(policy));
        acc += x + y + z + w;
#else
        float4 v = __ldcg(buf + i);
        acc += v.x + v.y + v.z + v.w;
#endif
    }
    if (acc == 123.456f) { *sink = acc; }  // never true for the zero-filled buffer; keeps the loads
}

extern "C" __global__ void harness_demote_l2(const char* __restrict__ buf, unsigned long long lines)
{
#if __CUDA_ARCH__ >= 800
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < lines;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        asm volatile("applypriority.global.L2::evict_normal [%0], 128;" :: "l"(buf + i * 128));
    }
#endif
}

// Keep the GPU busy for `ns` nanoseconds. Enqueued just before a timed region, it hides the host's
// launch latency: the timed launches are already queued when the GPU reaches them (nvbench's
// "blocking kernel" idea, without host-mapped memory).
extern "C" __global__ void harness_delay(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

// Bandwidth probes with 16-byte accesses, one vector per thread over a grid that covers the buffer.
// Measured on an H100 and an H200 (python -m bench.bandwidth_probes) against variants with 2-8
// vectors in flight per thread, streaming cache hints and grid-stride loops: one vector per thread
// was as fast as any, within 0.5%. Which access mix reaches the highest DRAM throughput differs by
// GPU and by buffer size, so the achievable ceiling is the best of a copy (1 read, 1 write), a triad
// (2 reads, 1 write: a vector add), a read-only and a write-only pass, each at two sizes.
extern "C" __global__ void harness_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                        unsigned long long n4)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n4) {
        dst[i] = src[i];
    }
}

extern "C" __global__ void harness_triad(const float4* __restrict__ a, const float4* __restrict__ b,
                                         float4* __restrict__ c, unsigned long long n4)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

extern "C" __global__ void harness_read(const float4* __restrict__ a, unsigned long long n4, float* sink)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = a[i];
        if (v.x + v.y + v.z + v.w == 123.456f) { *sink = v.x; }  // never true: keeps the load
    }
}

extern "C" __global__ void harness_write(float4* __restrict__ dst, unsigned long long n4)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n4) {
        dst[i] = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    }
}

// Count the bytes in which two equally long buffers differ, into *count (zeroed by the caller).
// The validator compares a buffer with a copy made on the device (inputs before the run, the first
// run's outputs) instead of bringing both to the host: at the timing size that saves a download and
// a host pass over hundreds of megabytes per check. Buffers start on 2 MiB boundaries (driver.py).
extern "C" __global__ void harness_count_diff(const uint4* __restrict__ a, const uint4* __restrict__ b,
                                              unsigned long long nbytes, unsigned long long* count)
{
    unsigned long long n16 = nbytes / 16, bits = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n16;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 x = a[i], y = b[i];
        // __vcmpne4 sets all 8 bits of every byte that differs.
        bits += __popc(__vcmpne4(x.x, y.x)) + __popc(__vcmpne4(x.y, y.y))
              + __popc(__vcmpne4(x.z, y.z)) + __popc(__vcmpne4(x.w, y.w));
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const unsigned char* ca = (const unsigned char*)a;
        const unsigned char* cb = (const unsigned char*)b;
        for (unsigned long long j = n16 * 16; j < nbytes; ++j) {
            bits += ca[j] != cb[j] ? 8 : 0;
        }
    }
    if (bits) {
        atomicAdd(count, bits / 8);
    }
}

// Compare an output with the float64 reference on the device, exactly as engine/gpu/compare.py
// does on the host: err = |double(got) - expected|; "exact" wants err == 0, the other rules
// err <= rtol * base + atol (base = |expected|, the output's RMS, or a per-element scale), rounded
// step by step as NumPy does (no fused multiply-add). Elements still holding the poison bit pattern
// were never written. Totals land in out[0..5]: wrong, unwritten, the bits of the largest finite
// error/bound ratio (non-negative doubles order like their bits), how many ratios were not finite,
// the complement of the first wrong element's index (the largest complement is the smallest index;
// 0: none) and the last wrong index plus one (0: none). A passing output needs nothing more; a failing
// one is described on the host, whole or, when too large to bring there, from the first wrong index.
// Rules: 0 exact, 1 |expected|, 2 the output's RMS, 3 a per-element scale, 4 the larger of |expected|
// and the output's RMS.
__device__ __forceinline__ float harness_half_to_float(unsigned short b)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b));
    return f;
}

template <typename Bits, typename ToDouble>
__device__ void compare_output(const Bits* __restrict__ got, const double* __restrict__ expected,
                               const double* __restrict__ scale, unsigned long long n, int mode, double rtol,
                               double atol, double rms, unsigned long long poison, int has_poison,
                               unsigned long long* out)
{
    const double inf = __longlong_as_double(0x7FF0000000000000ull);
    unsigned long long wrong = 0, unwritten = 0, nonfinite = 0, first_not = 0, last_plus = 0;
    double worst = 0.0;
    ToDouble to_double;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        Bits bits = got[i];
        double e = expected[i];
        double err = fabs(__dsub_rn(to_double(bits), e));
        bool ok;
        double ratio;
        if (mode == 0) {  // exact
            ok = err == 0.0;
            ratio = ok ? 0.0 : inf;
        } else {
            double base = mode == 1 ? fabs(e) : mode == 2 ? rms : mode == 3 ? scale[i] : fmax(rms, fabs(e));
            double bound = __dadd_rn(__dmul_rn(base, rtol), atol);
            ok = err <= bound;  // NaN never passes
            ratio = bound > 0.0 ? __ddiv_rn(err, bound) : (err > 0.0 ? inf : 0.0);
        }
        if (has_poison && (unsigned long long)bits == poison) {
            ++unwritten;
            ok = false;
        }
        if (!ok) {
            ++wrong;
            first_not = first_not ? first_not : ~i;  // a thread's indices rise: its first is its smallest
            last_plus = i + 1;
        }
        if (isfinite(ratio)) {
            worst = fmax(worst, ratio);
        } else {
            ++nonfinite;
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        wrong += __shfl_down_sync(0xffffffffu, wrong, offset);
        unwritten += __shfl_down_sync(0xffffffffu, unwritten, offset);
        nonfinite += __shfl_down_sync(0xffffffffu, nonfinite, offset);
        worst = fmax(worst, __shfl_down_sync(0xffffffffu, worst, offset));
        unsigned long long f = __shfl_down_sync(0xffffffffu, first_not, offset);
        unsigned long long l = __shfl_down_sync(0xffffffffu, last_plus, offset);
        first_not = f > first_not ? f : first_not;
        last_plus = l > last_plus ? l : last_plus;
    }
    if ((threadIdx.x & 31) == 0) {
        if (wrong) atomicAdd(out, wrong);
        if (unwritten) atomicAdd(out + 1, unwritten);
        atomicMax(out + 2, (unsigned long long)__double_as_longlong(worst));
        if (nonfinite) atomicAdd(out + 3, nonfinite);
        if (first_not) atomicMax(out + 4, first_not);
        if (last_plus) atomicMax(out + 5, last_plus);
    }
}

#define HARNESS_COMPARE(NAME, BITS, TO_DOUBLE)                                                               \
    extern "C" __global__ void NAME(const BITS* got, const double* expected, const double* scale,             \
                                    unsigned long long n, int mode, double rtol, double atol, double rms,     \
                                    unsigned long long poison, int has_poison, unsigned long long* out)        \
    {                                                                                                         \
        compare_output<BITS, TO_DOUBLE>(got, expected, scale, n, mode, rtol, atol, rms, poison, has_poison, out); \
    }
@COMPARE_KERNELS@
// Eight independent FMA chains per thread: the fp32 arithmetic ceiling.
extern "C" __global__ void harness_fma(float* out, int iters, float a, float b)
{
    float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
    float x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int j = 0; j < 16; ++j) {
            x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
            x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
        }
    }
    float s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
    if (s == 0.125f) { out[blockIdx.x] = s; }
}
"""


def _compare_kernels() -> str:
    """One harness_compare_<dtype> per dtype of the table, reading its bits as the table says."""
    lines = []
    for d in DTYPES.values():
        functor = f"ToDouble_{d.name}"
        call = f"__device__ double operator()({d.compare_bits} b) const {{ return {d.to_double}; }}"
        lines.append(f"struct {functor} {{ {call} }};")
        lines.append(f"HARNESS_COMPARE(harness_compare_{d.name}, {d.compare_bits}, {functor})")
    return "\n".join(lines)


HARNESS_SOURCE = _HARNESS_TEMPLATE.replace("@COMPARE_KERNELS@", _compare_kernels())
FMA_PER_ITER = 8 * 16  # per thread per outer iteration of harness_fma


def compile_harness(arch: str) -> bytes:
    """Compile the harness kernels for this device (in the worker, once per start)."""
    from cuda_llm.engine.compile.nvrtc import compile_in_process

    result = compile_in_process(HARNESS_SOURCE, arch)
    if not result.ok or result.cubin is None:
        raise RuntimeError(f"the harness kernels failed to compile: {result.error}\n{result.log}")
    return result.cubin


# The tolerance rules the comparison knows.
_COMPARE_MODES = {"exact": 0, "abs": 1, "rms": 2, "custom": 3, "rms_or_abs": 4}


@dataclass(frozen=True)
class DeviceComparison:
    wrong: int  # elements outside the tolerance, unwritten ones included
    unwritten: int  # still holding the poison
    worst_ratio: float  # the largest finite |error| / allowed error
    nonfinite: int  # elements whose ratio is infinite or NaN (only ever wrong ones)
    first_wrong: int | None = None  # the smallest flat index of a wrong element (None: none wrong)
    last_wrong: int | None = None  # the largest


@dataclass
class Harness:
    ctx: Context
    module: Any
    scrub: Any
    flush: Any
    demote: Any
    copy: Any
    fma: Any
    delay: Any
    triad: Any
    read: Any
    write: Any
    diff: Any
    compare_fns: dict[str, Any]  # output dtype -> harness_compare_<dtype>
    flush_buffer: DeviceBuffer
    sink: DeviceBuffer
    counter: DeviceBuffer
    totals: DeviceBuffer  # the comparison's six counters
    sm_count: int
    shared_optin: int

    @classmethod
    def load(
        cls, ctx: Context, cubin: bytes, l2_bytes: int, flush_factor: int, sm_count: int, shared_optin: int
    ) -> Harness:
        module = ctx.load_module(cubin)
        flush_buffer = ctx.alloc(max(l2_bytes * flush_factor, 16 * 2**20))
        ctx.zero(flush_buffer.ptr, flush_buffer.nbytes)
        sink = ctx.alloc(4)
        counter = ctx.alloc(8)
        totals = ctx.alloc(6 * 8)
        fn = lambda name: ctx.function(module, name)  # noqa: E731
        harness = cls(
            ctx=ctx,
            module=module,
            scrub=fn("harness_scrub_shared"),
            flush=fn("harness_flush_l2"),
            demote=fn("harness_demote_l2"),
            copy=fn("harness_copy"),
            fma=fn("harness_fma"),
            delay=fn("harness_delay"),
            triad=fn("harness_triad"),
            read=fn("harness_read"),
            write=fn("harness_write"),
            diff=fn("harness_count_diff"),
            compare_fns={dtype: fn(f"harness_compare_{dtype}") for dtype in DTYPES},
            flush_buffer=flush_buffer,
            sink=sink,
            counter=counter,
            totals=totals,
            sm_count=sm_count,
            shared_optin=shared_optin,
        )
        ctx.set_max_dynamic_shared(harness.scrub, shared_optin)
        return harness

    def scrub_shared(self, pattern: int) -> None:
        # Two blocks per SM: the scheduler places at least one on every SM.
        params = pack_params([("uint32", pattern & 0xFFFFFFFF), ("uint32", self.shared_optin // 4)])
        self.ctx.launch(self.scrub, (2 * self.sm_count, 1, 1), (1024, 1, 1), self.shared_optin, params)

    def flush_l2(self) -> None:
        """Leave nothing of the last kernel's data in the L2: persisting lines back to normal, a read
        of the flush buffer that displaces normal and evict_last lines alike, its own lines demoted."""
        self.ctx.reset_persisting_l2()
        buf = self.flush_buffer
        grid, block = (4 * self.sm_count, 1, 1), (512, 1, 1)
        read = pack_params([("ptr", buf.ptr), ("uint64", buf.nbytes // 16), ("ptr", self.sink.ptr)])
        self.ctx.launch(self.flush, grid, block, 0, read)
        self.ctx.launch(self.demote, grid, block, 0, pack_params([("ptr", buf.ptr), ("uint64", buf.nbytes // 128)]))

    def count_diff(self, a: DeviceBuffer, b: DeviceBuffer, timeout_s: float) -> int:
        """Bytes in which two device buffers differ (over the shorter length); waits for the answer."""
        nbytes = min(a.nbytes, b.nbytes)
        if not nbytes:
            return 0
        self.ctx.zero(self.counter.ptr, 8)
        params = pack_params([("ptr", a.ptr), ("ptr", b.ptr), ("uint64", nbytes), ("ptr", self.counter.ptr)])
        self.ctx.launch(self.diff, (4 * self.sm_count, 1, 1), (512, 1, 1), 0, params)
        return int(self._read_counters(self.counter, 1, timeout_s)[0])

    def _read_counters(self, buf: DeviceBuffer, count: int, timeout_s: float) -> np.ndarray:
        """Wait for the kernel that fills `buf` and bring its `count` uint64 counters back."""
        out = np.zeros(count, dtype=np.uint64)
        self.ctx.download(buf, out, timeout_s)
        return out

    def compare(
        self,
        got: DeviceBuffer,
        dtype: str,
        count: int,
        expected: DeviceBuffer,
        scale: DeviceBuffer | None,
        tol: Tolerance,
        rms: float,
        timeout_s: float,
    ) -> DeviceComparison:
        """Compare `count` elements of `got` with the float64 `expected` (and `scale`) on the device."""
        if not count:
            return DeviceComparison(0, 0, 0.0, 0)
        poison = DTYPES[dtype].poison
        self.ctx.zero(self.totals.ptr, self.totals.nbytes)
        params = pack_params(
            [
                ("ptr", got.ptr),
                ("ptr", expected.ptr),
                ("ptr", scale.ptr if scale is not None else 0),
                ("uint64", count),
                ("int32", _COMPARE_MODES[tol.scale]),
                ("float64", tol.rtol),
                ("float64", tol.atol),
                ("float64", rms),
                ("uint64", poison or 0),
                ("int32", int(poison is not None)),
                ("ptr", self.totals.ptr),
            ]
        )
        self.ctx.launch(self.compare_fns[dtype], (4 * self.sm_count, 1, 1), (256, 1, 1), 0, params)
        out = self._read_counters(self.totals, 6, timeout_s)
        worst = float(out[2:3].view(np.float64)[0])
        first = int(~out[4]) if out[4] else None  # stored as its complement (see the kernel)
        return DeviceComparison(
            wrong=int(out[0]),
            unwritten=int(out[1]),
            worst_ratio=worst,
            nonfinite=int(out[3]),
            first_wrong=first,
            last_wrong=int(out[5]) - 1 if out[5] else None,
        )

    def delay_us(self, us: float) -> None:
        self.ctx.launch(self.delay, (1, 1, 1), (1, 1, 1), 0, pack_params([("uint64", int(us * 1000))]))

    def _probe(self, func: Any, buffers: tuple[DeviceBuffer, ...], threads: int, sink: bool = False) -> None:
        """One bandwidth probe pass: a float4 per thread over the shortest of `buffers`."""
        n4 = min(b.nbytes for b in buffers) // 16
        values: list[tuple[str, int | float]] = [("ptr", b.ptr) for b in buffers]
        values.append(("uint64", n4))
        if sink:
            values.append(("ptr", self.sink.ptr))
        self.ctx.launch(func, (max(1, -(-n4 // threads)), 1, 1), (threads, 1, 1), 0, pack_params(values))

    def copy_launch(self, src: DeviceBuffer, dst: DeviceBuffer, threads: int = 256) -> None:
        self._probe(self.copy, (src, dst), threads)

    def triad_launch(self, a: DeviceBuffer, b: DeviceBuffer, c: DeviceBuffer, threads: int = 256) -> None:
        self._probe(self.triad, (a, b, c), threads)

    def read_launch(self, buf: DeviceBuffer, threads: int = 256) -> None:
        self._probe(self.read, (buf,), threads, sink=True)

    def write_launch(self, buf: DeviceBuffer, threads: int = 256) -> None:
        self._probe(self.write, (buf,), threads)

    def fma_launch(self, iters: int, blocks: int, threads: int) -> None:
        params = pack_params([("ptr", self.sink.ptr), ("int32", iters), ("float32", 0.999999), ("float32", 1e-7)])
        self.ctx.launch(self.fma, (blocks, 1, 1), (threads, 1, 1), 0, params)
