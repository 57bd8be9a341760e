"""matrix_copy: b = a for a row-major rows x cols float32 matrix."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = sizes["rows"], sizes["cols"]
    # Normal values with a spread of magnitudes and signs: a copy that converts through another
    # type or drops bits changes some of them.
    a = rng.standard_normal((rows, cols)) * np.exp(rng.uniform(-8.0, 8.0, (rows, cols)))
    return {"a": a.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    # A copy is exact at any precision: `dtype` does not apply.
    return {"b": inputs["a"].copy()}
