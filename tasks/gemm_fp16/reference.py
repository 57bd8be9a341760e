"""gemm_fp16: C (float32) = A (float16) @ B (float16), accumulated in fp32 or better."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    # Zero-mean unit-variance operands: well inside fp16's range, with sums of magnitude sqrt(K).
    return {
        "A": rng.standard_normal((m, k)).astype(np.float16),
        "B": rng.standard_normal((k, n)).astype(np.float16),
    }


def _accumulate_in(a: np.ndarray, b: np.ndarray, dtype: type) -> np.ndarray:
    """A @ B with every product and running sum rounded to `dtype`, one k at a time (NumPy's own
    float16 matmul accumulates in float32, which is not what an fp16 accumulator does)."""
    a = a.astype(dtype)
    b = b.astype(dtype)
    c = np.zeros((a.shape[0], b.shape[1]), dtype=dtype)
    for k in range(a.shape[1]):
        c += np.outer(a[:, k], b[k, :])
    return c


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    # `dtype` is the accumulator's precision; the fp16 inputs are exact in any of them.
    if np.dtype(dtype).itemsize < 4:
        return {"C": _accumulate_in(inputs["A"], inputs["B"], dtype)}
    return {"C": inputs["A"].astype(dtype) @ inputs["B"].astype(dtype)}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # |A| @ |B|: the condition of each dot product. A magnitude only, so float32 is plenty.
    return {"C": np.abs(inputs["A"].astype(np.float32)) @ np.abs(inputs["B"].astype(np.float32))}
