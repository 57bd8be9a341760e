"""layernorm: y = (x - mean) / sqrt(var + eps) * gamma + beta, per row (population variance)."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = sizes["rows"], sizes["cols"]
    # Transformer-like hidden states: per-row mean ~ N(0, 1), per-row std in [0.5, 4], and 1% of
    # the columns are outlier features 8x wider than the rest.
    mean = rng.standard_normal((rows, 1))
    std = np.exp(rng.uniform(np.log(0.5), np.log(4.0), (rows, 1)))
    width = np.where(rng.random(cols) < 0.01, 8.0, 1.0)
    x = mean + std * width * rng.standard_normal((rows, cols))
    gamma = 1.0 + 0.1 * rng.standard_normal(cols)
    beta = 0.1 * rng.standard_normal(cols)
    return {"x": x.astype(np.float32), "gamma": gamma.astype(np.float32), "beta": beta.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(dtype)
    gamma = inputs["gamma"].astype(dtype)
    beta = inputs["beta"].astype(dtype)
    # eps reaches the kernel as a float32, so that is the value the reference uses.
    eps = dtype(np.float32(params["eps"]))
    d = x - x.mean(axis=1, keepdims=True, dtype=dtype)
    var = (d * d).mean(axis=1, keepdims=True, dtype=dtype)
    return {"y": d / np.sqrt(var + eps) * gamma + beta}
