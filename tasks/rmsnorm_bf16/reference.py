"""rmsnorm_bf16: y = bf16(x / sqrt(mean(x^2) + eps) * w) per row, on bf16 buffers held as their bits."""

import numpy as np

from cuda_llm.engine.task.bfloat16 import to_bits, to_float32


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = sizes["rows"], sizes["cols"]
    scale = np.exp(rng.uniform(np.log(0.25), np.log(4.0), size=(rows, 1)))
    feature = np.where(rng.random(cols) < 0.01, 8.0, 1.0)
    x = rng.standard_normal((rows, cols)) * scale * feature
    w = rng.uniform(0.5, 1.5, size=cols)
    return {"x": to_bits(x), "w": to_bits(w)}


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    # `dtype` is the arithmetic's precision; the bf16 inputs are exact in any float of 16+ bits.
    x = to_float32(inputs["x"]).astype(dtype)
    w = to_float32(inputs["w"]).astype(dtype)
    ms = np.mean(x * x, axis=1, keepdims=True, dtype=dtype)
    return {"y": x / np.sqrt(ms + dtype(params["eps"])) * w}
