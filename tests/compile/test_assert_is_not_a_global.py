"""assert() hands compiler-made strings to __assertfail: that is not a kernel writing state it could
use to cache results between runs, so it must not be flagged (a user's __device__ counter must)."""

from cuda_llm.engine.compile.nvrtc import compile_in_process


def test_assert_strings_are_not_flagged():
    r = compile_in_process('extern "C" __global__ void k(int n) { assert(n < 0); }', "sm_90")
    assert r.ok and r.device_globals == () and not r.writes_device_globals


def test_a_written_device_counter_is_flagged():
    r = compile_in_process(
        '__device__ int calls;\nextern "C" __global__ void k(int n) { atomicAdd(&calls, n); }', "sm_90"
    )
    assert r.ok and r.writes_device_globals and [g.name for g in r.device_globals] == ["calls"]
