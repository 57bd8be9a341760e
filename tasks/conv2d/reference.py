"""conv2d: NCHW, 3x3 filters, zero padding 1, stride 1, no bias (cross-correlation)."""

import numpy as np


def generate(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    n, c_in, c_out, h, w = (sizes[s] for s in ("n", "c_in", "c_out", "h", "w"))
    # Normalised activations and He-initialised filters: zero-mean, outputs of order one.
    x = rng.standard_normal((n, c_in, h, w))
    weight = rng.standard_normal((c_out, c_in, 3, 3)) * np.sqrt(2.0 / (9 * c_in))
    return {"x": x.astype(np.float32), "weight": weight.astype(np.float32)}


def _conv3x3(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """im2col: each image's 9 shifted copies of the zero-padded input stacked into a
    (c_in * 9) x (h * w) matrix, multiplied by the (c_out) x (c_in * 9) filter matrix."""
    n, c_in, h, w = x.shape
    c_out = weight.shape[0]
    padded = np.zeros((n, c_in, h + 2, w + 2), dtype=x.dtype)
    padded[:, :, 1:h + 1, 1:w + 1] = x
    filters = weight.reshape(c_out, c_in * 9)
    y = np.empty((n, c_out, h, w), dtype=x.dtype)
    for b in range(n):  # one image at a time keeps the im2col matrix small
        cols = np.stack(
            [padded[b, :, dr:dr + h, dc:dc + w] for dr in range(3) for dc in range(3)], axis=1
        )  # c_in x 9 x h x w, matching weight's (ci, dr, dc) order
        y[b] = (filters @ cols.reshape(c_in * 9, h * w)).reshape(c_out, h, w)
    return y


def reference(inputs: dict[str, np.ndarray], params: dict[str, int | float],
              dtype: type = np.float64) -> dict[str, np.ndarray]:
    return {"y": _conv3x3(inputs["x"].astype(dtype), inputs["weight"].astype(dtype))}


def error_scale(inputs: dict[str, np.ndarray], params: dict[str, int | float]) -> dict[str, np.ndarray]:
    # The same convolution of |x| with |weight|: the condition of each output's dot product.
    # A magnitude only, so float32 is plenty.
    return {"y": _conv3x3(np.abs(inputs["x"]), np.abs(inputs["weight"]))}
