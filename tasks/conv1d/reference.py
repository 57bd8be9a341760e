"""conv1d: y[i] = sum_j x[i + j] * w[j] for 0 <= i <= n - k (valid cross-correlation)."""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n, k = sizes["n"], sizes["k"]
    # A zero-mean signal and filter taps scaled by 1/sqrt(k), so outputs stay of order one.
    return {
        "x": rng.standard_normal(n).astype(np.float32),
        "w": (rng.standard_normal(k) / np.sqrt(k)).astype(np.float32),
    }


def _correlate_fft(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Valid cross-correlation through float64 FFTs: O(n log n) instead of O(n k), and within
    ~1e-16 * sqrt(k) * |x| |w| of the exact sums, far below the tolerance."""
    n, k = x.size, w.size
    size = 1 << (n + k - 2).bit_length()  # >= n + k - 1: no wrap-around
    full = np.fft.irfft(np.fft.rfft(x, size) * np.fft.rfft(w[::-1], size), size)
    return full[k - 1:n]


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(dtype)
    w = inputs["w"].astype(dtype)
    if np.dtype(dtype) == np.float64:
        return {"y": _correlate_fft(x, w)}
    # Lower precisions (used to emulate fp32 and fp16 kernels) take the direct sums, rounded to
    # dtype as a kernel's would be.
    return {"y": sliding_window_view(x, w.size) @ w}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # sum_j |x[i + j]| |w[j]|: the condition of each output's dot product.
    scale = _correlate_fft(np.abs(inputs["x"].astype(np.float64)), np.abs(inputs["w"].astype(np.float64)))
    return {"y": np.maximum(scale, 0.0)}
