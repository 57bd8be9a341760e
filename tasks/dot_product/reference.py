"""dot_product: out[0] = sum(a * b)."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sizes["n"]
    # Two correlated vectors (correlation 0.8, like similar embeddings): the products have a
    # positive mean, so the dot product is large and does not cancel away.
    a = rng.standard_normal(n)
    b = 0.8 * a + 0.6 * rng.standard_normal(n)
    return {"a": a.astype(np.float32), "b": b.astype(np.float32)}


def _tree_sum(x: np.ndarray) -> np.ndarray:
    """Sum by pairwise halving with every partial sum rounded to x's dtype, as a GPU tree
    reduction does (NumPy's own float16 sum would quietly accumulate in float32)."""
    while x.size > 1:
        if x.size % 2:
            x = np.append(x, x.dtype.type(0))
        x = x[0::2] + x[1::2]
    return x


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    return {"out": _tree_sum(inputs["a"].astype(dtype) * inputs["b"].astype(dtype))}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # The condition of the dot product: what any summation order's rounding error is proportional to.
    products = inputs["a"].astype(np.float64) * inputs["b"].astype(np.float64)
    return {"out": np.array([np.sum(np.abs(products))])}
