"""matmul: C = A @ B in fp32 accuracy, all row-major."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    # Zero-mean operands, like activations (unit variance) and weights (1/sqrt(K) scale).
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n)) / np.sqrt(k)
    return {"A": a.astype(np.float32), "B": b.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    return {"C": inputs["A"].astype(dtype) @ inputs["B"].astype(dtype)}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # |A| @ |B|: the condition of each dot product, which any summation order's error is
    # proportional to. A magnitude only, so float32 arithmetic is plenty (and twice as fast).
    return {"C": np.abs(inputs["A"]) @ np.abs(inputs["B"])}
