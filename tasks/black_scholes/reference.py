"""black_scholes: European call and put prices; N is the standard normal CDF."""

import math

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = sizes["n"]
    # The ranges of NVIDIA's BlackScholes CUDA sample.
    return {
        "price": rng.uniform(5.0, 30.0, n).astype(np.float32),
        "strike": rng.uniform(1.0, 100.0, n).astype(np.float32),
        "years": rng.uniform(0.25, 10.0, n).astype(np.float32),
    }


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    """N(x) = erfc(-x / sqrt(2)) / 2, with the C library's erfc (accurate in both tails) rounded
    once to x's dtype, like CUDA's normcdff. NumPy has no erfc of its own."""
    z = (-x.astype(np.float64) / math.sqrt(2.0)).tolist()
    cdf = 0.5 * np.fromiter(map(math.erfc, z), dtype=np.float64, count=x.size)
    return cdf.astype(x.dtype)


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    s = inputs["price"].astype(dtype)
    k = inputs["strike"].astype(dtype)
    t = inputs["years"].astype(dtype)
    # r and sigma reach the kernel as float32, so those are the values the reference uses.
    r = dtype(np.float32(params["r"]))
    sigma = dtype(np.float32(params["sigma"]))
    vol = sigma * np.sqrt(t)
    d1 = (np.log(s / k) + (r + dtype(0.5) * sigma * sigma) * t) / vol
    d2 = d1 - vol
    discounted = k * np.exp(-r * t)
    nd1 = _norm_cdf(d1)
    nd2 = _norm_cdf(d2)
    # N(-d) = 1 - N(d): half the erfc calls, and its absolute error is what the scale measures.
    one = dtype(1.0)
    return {
        "call": s * nd1 - discounted * nd2,
        "put": discounted * (one - nd2) - s * (one - nd1),
    }


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # Each price is the difference of two terms of size S and K e^(-rT): its rounding error is
    # proportional to them, not to the (possibly tiny) price.
    s = inputs["price"].astype(np.float64)
    k = inputs["strike"].astype(np.float64)
    t = inputs["years"].astype(np.float64)
    scale = s + k * np.exp(-float(np.float32(params["r"])) * t)
    return {"call": scale, "put": scale}
