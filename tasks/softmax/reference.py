"""softmax: y[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(x[r, :] - max(x[r, :])))."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = sizes["rows"], sizes["cols"]
    # Per-row offset in [-150, 150] (exp overflows fp32 past 88.7 and underflows below -103) and a
    # per-row spread from 0.5 (nearly uniform rows) to 30 (rows dominated by a few logits).
    offset = rng.uniform(-150.0, 150.0, (rows, 1))
    spread = np.exp(rng.uniform(np.log(0.5), np.log(30.0), (rows, 1)))
    x = offset + spread * rng.standard_normal((rows, cols))
    return {"x": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(dtype)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": e / e.sum(axis=1, keepdims=True)}
