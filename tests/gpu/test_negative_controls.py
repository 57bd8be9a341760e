"""Negative controls: kernels that must fail, each for the right reason, and the next good candidate
judged normally in the same session afterwards (the worker comes back after a fault)."""

import pytest

pytestmark = pytest.mark.gpu

VADD = 'extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n)'
VADD_BODY = "{ int i = blockIdx.x * blockDim.x + threadIdx.x; %s }"


def vadd(body: str, signature: str = VADD) -> str:
    return signature + VADD_BODY % body


def reduction_variant(gpu, old: str, new: str) -> str:
    src = gpu.task("reduction_sum").baseline_source
    assert old in src, "the reduction baseline changed; update this control"
    return src.replace(old, new, 1)


def seen(observed, j) -> None:
    observed(f"{j.status}: {j.message}")


def assert_baseline_still_correct(gpu, task: str) -> None:
    j = gpu.judge(task)
    assert j.status == "correct", f"after the fault, the {task} baseline was judged {j.status}: {j.message}"


@pytest.mark.fault(
    "cheats",
    "reusing the reference's output left in memory (a no-op kernel)",
    "wrong: every output still holds the poison",
)
def test_noop_kernel_leaves_every_output_unwritten(observed, gpu):
    j = gpu.judge("vector_add", vadd(""))
    seen(observed, j)
    assert j.status == "wrong"
    first = next(c for c in j.validation.cases if not c.passed)
    assert first.unwritten == first.checked
    assert any("every element is unwritten" in p for p in j.validation.patterns)
    assert_baseline_still_correct(gpu, "vector_add")


@pytest.mark.fault(
    "kernels", "the last elements left unwritten", "wrong, with the pattern 'the last 3 elements are unwritten'"
)
def test_last_elements_unwritten(observed, gpu):
    j = gpu.judge("vector_add", vadd("if (i < n - 3) c[i] = a[i] + b[i];"))
    seen(observed, j)
    assert j.status == "wrong"
    assert any("the last 3 elements are unwritten" in p for p in j.validation.patterns), j.validation.patterns
    assert_baseline_still_correct(gpu, "vector_add")


@pytest.mark.fault(
    "cheats", "computing only part of the output (the first block)", "wrong at every size over one block"
)
def test_first_block_only(observed, gpu):
    j = gpu.judge("vector_add", vadd("if (blockIdx.x == 0 && i < n) c[i] = a[i] + b[i];"))
    seen(observed, j)
    assert j.status == "wrong"
    assert any("the last 744 elements are unwritten" in p and "n=1000" in p for p in j.validation.patterns)
    assert all(c.passed for c in j.validation.cases if c.label.startswith(("n=1 ", "n=3 ")))


@pytest.mark.fault("cheats", "computing only the first row", "wrong, with the pattern naming whole rows")
def test_first_row_only(observed, gpu):
    src = gpu.task("matmul").baseline_source.replace("if (row < M && col < N)", "if (row == 0 && col < N)")
    j = gpu.judge("matmul", src)
    seen(observed, j)
    assert j.status == "wrong"
    assert any("rows" in p and "unwritten" in p and "entirely" in p for p in j.validation.patterns), (
        j.validation.patterns
    )


@pytest.mark.fault("cheats", "writing the inputs", "wrong: 'the kernel wrote to input'")
def test_writes_its_input(observed, gpu):
    sig = VADD.replace("const float* a", "float* a")
    j = gpu.judge("vector_add", vadd("if (i < n) { c[i] = a[i] + b[i]; a[i] = 0.0f; }", sig))
    seen(observed, j)
    assert j.status == "wrong"
    assert "wrote to input 'a'" in (j.validation.cases[0].problem or "")


@pytest.mark.fault("kernels", "reading uninitialised shared memory", "wrong (garbage from the scrub)")
def test_reads_uninitialised_shared_memory(observed, gpu):
    src = reduction_variant(gpu, "s[tid] = i < n ? x[i] : 0.0f;", "if (i < n) { s[tid] = x[i]; }")
    j = gpu.judge("reduction_sum", src)
    seen(observed, j)
    assert j.status == "wrong", j.message
    assert_baseline_still_correct(gpu, "reduction_sum")


@pytest.mark.fault("kernels", "a racy reduction (missing __syncthreads)", "wrong")
def test_racy_reduction(observed, gpu):
    src = reduction_variant(
        gpu, "s[tid] += s[tid + stride];\n        }\n        __syncthreads();", "s[tid] += s[tid + stride];\n        }"
    )
    j = gpu.judge("reduction_sum", src)
    seen(observed, j)
    assert j.status == "wrong", j.message


@pytest.mark.fault("cheats", "fp16 arithmetic on an fp32 task", "wrong by the tolerance; reduced precision noted")
def test_fp16_arithmetic_fails_the_fp32_matmul(observed, gpu):
    src = """#include <cuda_fp16.h>
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        __half acc = __float2half(0.0f);
        for (int k = 0; k < K; ++k) {
            acc = __hfma(__float2half(A[row * K + k]), __float2half(B[k * N + col]), acc);
        }
        C[row * N + col] = __half2float(acc);
    }
}
"""
    j = gpu.judge("matmul", src)
    seen(observed, j)
    assert j.status == "wrong", j.message
    assert any("reduced precision" in w for w in j.warnings), j.warnings
    assert j.validation.mismatches and all(m.got == m.got for m in j.validation.mismatches)  # wrong values, not NaN


@pytest.mark.fault(
    "kernels",
    "illegal address (write)",
    "crashed: CUDA_ERROR_ILLEGAL_ADDRESS; worker restarted; next candidate correct",
)
def test_illegal_address_crashes_and_the_worker_comes_back(observed, gpu):
    j = gpu.judge("vector_add", vadd("c[i + (1ll << 40)] = 1.0f;"))
    seen(observed, j)
    assert j.status == "crashed"
    assert j.validation.fault.error == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert_baseline_still_correct(gpu, "vector_add")


@pytest.mark.fault("kernels", "__trap()", "crashed: CUDA_ERROR_LAUNCH_FAILED; worker restarted; next candidate correct")
def test_trap_crashes_and_the_worker_comes_back(observed, gpu):
    j = gpu.judge("vector_add", vadd("__trap();"))
    seen(observed, j)
    assert j.status == "crashed"
    assert j.validation.fault.error == "CUDA_ERROR_LAUNCH_FAILED"
    assert_baseline_still_correct(gpu, "vector_add")


@pytest.mark.fault(
    "kernels", "endless loop", "timed out after the launch limit; worker restarted; next candidate correct"
)
def test_endless_loop_times_out_and_the_worker_comes_back(observed, gpu):
    # c is poisoned with NaN before the run and NaN never equals anything: this never ends.
    j = gpu.judge("vector_add", vadd("while (*(volatile float*)c != 12345.0f) { }"))
    seen(observed, j)
    assert j.status == "timed_out", j.message
    assert "timed out" in j.message
    assert_baseline_still_correct(gpu, "vector_add")


@pytest.mark.fault("kernels", "a block of 2048 threads", "launch error naming the limit; nothing launched")
def test_block_over_the_limit_is_a_launch_error(observed, gpu):
    plan = {
        "launches": [{"kernel": "vector_add", "grid": ["cdiv(n, 2048)"], "block": [2048], "args": ["a", "b", "c", "n"]}]
    }
    j = gpu.judge("vector_add", plan=plan)
    seen(observed, j)
    assert j.status == "launch_error"
    assert "2048" in j.message and "1024" in j.message


@pytest.mark.fault("kernels", "dynamic shared memory over the device limit", "launch error; next candidate correct")
def test_too_much_shared_memory_is_a_launch_error(observed, gpu):
    plan = {
        "launches": [
            {
                "kernel": "vector_add",
                "grid": ["cdiv(n, 256)"],
                "block": [256],
                "shared_bytes": 400000,
                "args": ["a", "b", "c", "n"],
            }
        ]
    }
    j = gpu.judge("vector_add", plan=plan)
    seen(observed, j)
    assert j.status == "launch_error"
    assert "shared memory" in j.message
    assert_baseline_still_correct(gpu, "vector_add")
