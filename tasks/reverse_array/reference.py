"""reverse_array: y[i] = x[n - 1 - i]."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sizes["n"]
    # Distinct values, so an element that lands in the wrong place is always caught.
    return {"x": rng.uniform(-1000.0, 1000.0, n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    # A reversal is exact at any precision: `dtype` does not apply.
    return {"y": inputs["x"][::-1].copy()}
