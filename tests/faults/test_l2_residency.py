"""Benchmark cheats through the L2: data marked to outlive the profiler's flush must gain nothing.

Peers' harnesses have been beaten by kernels that keep their inputs in L2 between timed runs with
PTX eviction-priority hints (a `createpolicy` evict_last policy on the loads, `prefetch.global.L2::
evict_last` of the next run's data). The profiler flushes the L2 before every sample; these tests
time, through the real profiler, a vector_add whose whole working set (12 MiB) fits in the L2 of an
H100 and an H200, once plainly and once with each trick, and require the tricks to gain nothing.
A positive control times the plain kernel without the flush, to show that the measurement would
see data left in the L2: without it, "gains nothing" could mean "cannot tell".
"""

from __future__ import annotations

import dataclasses
import json
import statistics

import pytest

from cuda_llm.engine.judge.judgement import Candidate, Compiled
from cuda_llm.engine.task.model import SizeCase

pytestmark = pytest.mark.gpu

GROUP = "benchmark cheats through the L2"
# 2^20 floats a buffer: a, b and c together 12 MiB, well inside a 50 MiB (H100) or 60 MiB (H200) L2.
N = 1 << 20
# The positive control: a cached run must be clearly faster, or the test cannot see a gain.
HOT_AT_MOST = 0.85
# A trick "gains nothing" when its median is no more than this much under the plain kernel's
# (the spread of two medians of the same kernel measured here stays under 2%).
GAIN_AT_MOST = 0.03

PLAIN = """extern "C" __global__ void vadd4(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int n)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i + 3 < n) {
        float4 x = LOAD(a + i);
        float4 y = LOAD(b + i);
        *reinterpret_cast<float4*>(c + i) = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
        AFTER
    } else {
        for (int j = i; j < n; ++j) c[j] = a[j] + b[j];
    }
}"""
PLAIN_LOAD = "#define LOAD(p) (*reinterpret_cast<const float4*>(p))\n#define AFTER\n"
# Every load carries an L2 evict_last policy: the inputs are meant to outlive the flush.
POLICY_LOAD = r"""
__device__ __forceinline__ float4 load_evict_last(const float* p)
{
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    float4 v;
    asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(policy));
    return v;
}
#define LOAD(p) load_evict_last(p)
#define AFTER
"""
# After its work, the kernel prefetches its inputs into the L2 as evict_last, for the next run.
PREFETCH_AFTER = r"""
#define LOAD(p) (*reinterpret_cast<const float4*>(p))
#define AFTER asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(a + i)); \
              asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(b + i));
"""
PLAN = {
    "launches": [{"kernel": "vadd4", "grid": ["cdiv(cdiv(n, 4), 256)"], "block": [256], "args": ["a", "b", "c", "n"]}]
}


@pytest.fixture(scope="module")
def l2_bench(gpu):
    """Profile (label, prelude) programs on the L2-sized vector_add; returns {label: median us}.
    Every program is timed as a candidate (events, one run a sample, the flush before each), never as
    a graph of replays, which would leave the L2 warm between replays by design."""
    from cuda_llm.engine.gpu import profile as prof
    from cuda_llm.engine.gpu.worker_process import WorkerState

    base = gpu.task("vector_add")
    case = SizeCase(f"l2-resident n={N}", (("n", N),), 1, is_timing=True)
    task = dataclasses.replace(base, timing=case, fingerprint=base.fingerprint + "-l2-resident")
    judge = gpu.env.judge(base, gpu.settings)
    state = WorkerState(0, gpu.settings)
    settings = dataclasses.replace(gpu.settings.profile, graph_threshold_us=0.0, placements=1)

    def compiled(prelude: str) -> Compiled:
        cand = judge.parse("cand", f"```cuda\n{prelude}{PLAIN}\n```\n```json\n{json.dumps(PLAN)}\n```")
        assert isinstance(cand, Candidate), cand
        result = gpu.run(judge.compile(cand))
        assert isinstance(result, Compiled), result
        return result

    def run(programs: dict[str, str], flush: bool = True) -> dict[str, float]:
        profiler = prof.Profiler(
            state.ctx, state.info, state.harness, state.refs, state.nvml, settings, gpu.settings.validation
        )
        if not flush:
            state.harness.flush_l2 = lambda: None  # type: ignore[method-assign]
        built = {label: compiled(prelude) for label, prelude in programs.items()}
        modules = {label: state.ctx.load_module(c.compile.cubin) for label, c in built.items()}
        try:
            report = profiler.profile(task, [(label, modules[label], built[label].bound, False) for label in programs])
        finally:
            for m in modules.values():
                state.ctx.unload_module(m)
            if not flush:
                del state.harness.flush_l2
        for t in report.timings:
            assert t.fault is None and t.state_check is None, t
            assert t.mode == "events" and t.replays == 1, "each sample is one run after a flush"
        return {t.label: t.median_us for t in report.timings}

    yield run
    state.refs.unpin_all()


@pytest.mark.fault(
    GROUP, "positive control: the plain kernel with no flush", "clearly faster: the measurement sees a warm L2"
)
def test_the_measurement_sees_a_warm_l2(l2_bench, observed):
    flushed = statistics.median(l2_bench({"plain": PLAIN_LOAD})["plain"] for _ in range(2))
    warm = l2_bench({"plain": PLAIN_LOAD}, flush=False)["plain"]
    assert warm <= HOT_AT_MOST * flushed, f"warm {warm:.2f} us vs flushed {flushed:.2f} us: no visible gain"
    observed(f"flushed {flushed:.2f} us, no flush {warm:.2f} us ({warm / flushed:.0%})")


@pytest.mark.fault(
    GROUP,
    "loads with a createpolicy L2::evict_last policy",
    "gains nothing over the plain kernel (within 3%)",
)
def test_an_evict_last_policy_gains_nothing(l2_bench, observed):
    t = l2_bench({"plain": PLAIN_LOAD, "evict_last": POLICY_LOAD})
    assert t["evict_last"] >= (1 - GAIN_AT_MOST) * t["plain"], t
    observed(f"plain {t['plain']:.2f} us, evict_last loads {t['evict_last']:.2f} us")


@pytest.mark.fault(
    GROUP,
    "prefetch.global.L2::evict_last of the next run's inputs",
    "gains nothing over the plain kernel (within 3%)",
)
def test_an_evict_last_prefetch_gains_nothing(l2_bench, observed):
    t = l2_bench({"plain": PLAIN_LOAD, "prefetch": PREFETCH_AFTER})
    assert t["prefetch"] >= (1 - GAIN_AT_MOST) * t["plain"], t
    observed(f"plain {t['plain']:.2f} us, prefetching {t['prefetch']:.2f} us")
