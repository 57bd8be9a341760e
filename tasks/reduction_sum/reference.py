"""reduction_sum: out[0] = sum(x)."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sizes["n"]
    # A positive mean (0.5) so partial sums grow with n, as real data does; negative values so
    # the sum partly cancels.
    return {"x": rng.uniform(-1.0, 2.0, n).astype(np.float32)}


def _tree_sum(x: np.ndarray, dtype: type) -> np.ndarray:
    """Sum by pairwise halving with every partial sum rounded to `dtype`, as a GPU tree
    reduction does (NumPy's own float16 sum would quietly accumulate in float32)."""
    x = x.astype(dtype)
    while x.size > 1:
        if x.size % 2:
            x = np.append(x, x.dtype.type(0))
        x = x[0::2] + x[1::2]
    return x


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    return {"out": _tree_sum(inputs["x"], dtype)}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # The condition of the sum: what any summation order's rounding error is proportional to.
    return {"out": np.array([np.sum(np.abs(inputs["x"].astype(np.float64)))])}
