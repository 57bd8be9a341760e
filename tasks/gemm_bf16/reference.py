"""gemm_bf16: C = bf16(A @ B) for bf16 A and B (held as their bits), accumulated in fp32 or better."""

import numpy as np

from cuda_llm.engine.task.bfloat16 import round_to_bf16, to_bits, to_float32


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    # Zero-mean unit-variance operands, with sums of magnitude sqrt(K).
    return {"A": to_bits(rng.standard_normal((m, k))), "B": to_bits(rng.standard_normal((k, n)))}


def accumulate_in_bf16(a_bits: np.ndarray, b_bits: np.ndarray) -> np.ndarray:
    """A @ B with the running sum rounded to bf16 after every step, one k at a time (fp32 products:
    what a kernel with a bf16 accumulator computes). For the tests, never for judging."""
    a, b = to_float32(a_bits), to_float32(b_bits)
    c = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for k in range(a.shape[1]):
        c = round_to_bf16(c + np.outer(a[:, k], b[k, :]))
    return c


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    # `dtype` is the accumulator's precision; the bf16 inputs are exact in float32 and float64.
    return {"C": to_float32(inputs["A"]).astype(dtype) @ to_float32(inputs["B"]).astype(dtype)}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # |A| @ |B|: the condition of each dot product. A magnitude only, so float32 is plenty.
    return {"C": np.abs(to_float32(inputs["A"])) @ np.abs(to_float32(inputs["B"]))}

