"""matrix_transpose: output (cols x rows) = input (rows x cols) transposed, both row-major."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = sizes["rows"], sizes["cols"]
    # Distinct values everywhere, so an element that lands in the wrong place is always caught.
    x = rng.standard_normal((rows, cols)) * 100.0
    return {"input": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    # A transpose is exact at any precision: `dtype` does not apply.
    return {"output": np.ascontiguousarray(inputs["input"].T)}
