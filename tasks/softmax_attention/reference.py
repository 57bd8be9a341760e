"""softmax_attention: o = softmax(q k^T / sqrt(d)) v for every head, no mask."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    bh, sq, sk, d = sizes["bh"], sizes["sq"], sizes["sk"], sizes["d"]
    # q and k with standard deviation 1.4, so the scores have a standard deviation of ~2 and each
    # softmax row is dominated by a handful of keys, as in trained models; v of unit scale.
    return {
        "q": (1.4 * rng.standard_normal((bh, sq, d))).astype(np.float32),
        "k": (1.4 * rng.standard_normal((bh, sk, d))).astype(np.float32),
        "v": rng.standard_normal((bh, sk, d)).astype(np.float32),
    }


def _probabilities(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """softmax over the keys of q k^T / sqrt(d), in q's dtype: bh x sq x sk."""
    scores = (q @ np.swapaxes(k, 1, 2)) / np.sqrt(q.dtype.type(q.shape[2]))
    e = np.exp(scores - scores.max(axis=2, keepdims=True))
    return e / e.sum(axis=2, keepdims=True)


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    p = _probabilities(inputs["q"].astype(dtype), inputs["k"].astype(dtype))
    return {"o": p @ inputs["v"].astype(dtype)}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # p @ |v|: the size of the terms each output is a weighted average of.
    p = _probabilities(inputs["q"].astype(np.float64), inputs["k"].astype(np.float64))
    return {"o": p @ np.abs(inputs["v"].astype(np.float64))}
