"""prefix_sum: inclusive scan, y[i] = x[0] + ... + x[i]."""

import numpy as np

# Elements per block of the blocked scan below (the association order of a typical GPU scan).
_BLOCK = 1024


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sizes["n"]
    # Increments of a random walk with drift: mixed signs, positive mean, so the prefix sums grow.
    return {"x": rng.normal(0.5, 1.0, n).astype(np.float32)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(dtype)
    n = x.size
    # Scan blocks of 1024, scan the block totals, add each block's carry: every partial sum is
    # rounded to `dtype` in the order a GPU scan uses (a single sequential cumsum in float32
    # would be far less accurate than any real kernel).
    blocks = -(-n // _BLOCK)
    padded = np.zeros(blocks * _BLOCK, dtype=dtype)
    padded[:n] = x
    local = np.cumsum(padded.reshape(blocks, _BLOCK), axis=1, dtype=dtype)
    carry = np.zeros(blocks, dtype=dtype)
    carry[1:] = np.cumsum(local[:-1, -1], dtype=dtype)
    return {"y": (local + carry[:, None]).reshape(-1)[:n]}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # The condition of y[i]: the running sum of |x|, which bounds any association order's error.
    return {"y": np.cumsum(np.abs(inputs["x"].astype(np.float64)))}
