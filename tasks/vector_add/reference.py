"""vector_add: c = a + b."""

import numpy as np


def generate(sizes, rng):
    n = sizes["n"]
    return {
        "a": rng.uniform(-100.0, 100.0, n).astype(np.float32),
        "b": rng.standard_normal(n).astype(np.float32) * np.float32(10.0),
    }


def reference(inputs, params, dtype=np.float64):
    return {"c": inputs["a"].astype(dtype) + inputs["b"].astype(dtype)}
