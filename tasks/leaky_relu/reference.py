"""leaky_relu: y = x if x > 0 else alpha * x."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sizes["n"]
    # Activations: roughly half negative, magnitudes over several decades, and about 1% exact
    # zeros (never x[0], so that no input is all zero).
    x = rng.standard_normal(n) * np.exp(rng.uniform(-3.0, 3.0, n))
    x[1:][rng.random(n - 1) < 0.01] = 0.0
    return {"x": x.astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(dtype)
    # The kernel receives alpha as a float32, so that is the value the reference uses.
    alpha = dtype(np.float32(params["alpha"]))
    return {"y": np.where(x > 0, x, alpha * x)}
