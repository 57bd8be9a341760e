"""monte_carlo_integration: result[0] = (b - a) * mean(y)."""

import numpy as np

# The interval [a, b] of task.toml; generate() receives only the sizes, so it is repeated here.
_A, _B = 0.0, 2.0


def _f(x: np.ndarray) -> np.ndarray:
    # A smooth integrand with an oscillation and a dip, between 0.68 and 2.9 on [0, 2] (mean 1.6).
    return 1.0 + np.sin(3.0 * x) * np.exp(-0.5 * x) + 0.5 * x * x - 0.8 * np.exp(-20.0 * (x - 1.3) ** 2)


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sizes["n"]
    # float32 throughout: the samples are the data, and it is 4x faster at 1e8 samples.
    x = rng.random(n, dtype=np.float32) * np.float32(_B - _A) + np.float32(_A)
    return {"y": _f(x).astype(np.float32, copy=False)}


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
    y = inputs["y"].astype(dtype)
    # a and b reach the kernel as float32, so those are the values the reference uses.
    a = dtype(np.float32(params["a"]))
    b = dtype(np.float32(params["b"]))
    n = dtype(y.size)
    return {"result": (b - a) * _tree_sum(y) / n}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # The condition of the estimate: what any summation order's rounding error is proportional to.
    y = inputs["y"].astype(np.float64)
    width = abs(float(np.float32(params["b"])) - float(np.float32(params["a"])))
    return {"result": np.array([width * np.sum(np.abs(y)) / y.size])}
