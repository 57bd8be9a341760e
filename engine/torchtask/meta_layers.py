"""Layers whose meta-device forward is slow: their results' shapes, without running them.

On the meta device PyTorch runs some layers through its Python decompositions: nn.LSTM, nn.GRU
and nn.RNN step by step (a 6-layer LSTM over 512 steps takes 50 s there for shapes alone),
BatchNorm as a dozen primitive ops each (ResNet101's 104 of them are 3.9 s of its 4.7 s forward),
and an in-place ReLU6 as several (1 s of EfficientNetB0's 1.5 s). An import probes the module
about ten times. The shapes follow from the layer's settings (PyTorch's documented contract), so
the probes give each such layer a forward that checks its inputs as the layer does and returns
empty tensors of the right shapes. The real layers still run in the probe's float64 run on the
CPU, and in the reference and eager.
"""

from __future__ import annotations

import types
from typing import Any


def _expect(what: str, actual: Any, shape: tuple[int, ...]) -> None:
    if tuple(actual.shape) != shape:
        raise RuntimeError(f"{what} has shape {tuple(actual.shape)}, the layer expects {shape}")


def _recurrent_shape(m: Any, input: Any, hx: Any = None) -> Any:
    import torch.nn as nn

    if not hasattr(input, "dim"):
        raise RuntimeError("a packed sequence has no shape before it runs")
    batched = input.dim() == 3
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{type(m).__name__}: expected a 2-D or 3-D input, got {input.dim()}-D")
    if input.shape[-1] != m.input_size:
        raise RuntimeError(
            f"input.size(-1) must be equal to input_size. Expected {m.input_size}, got {input.shape[-1]}"
        )
    d = 2 if m.bidirectional else 1
    out_size = m.proj_size if getattr(m, "proj_size", 0) > 0 else m.hidden_size
    if batched:
        batch, steps = (input.shape[0], input.shape[1]) if m.batch_first else (input.shape[1], input.shape[0])
        state: tuple[int, ...] = (d * m.num_layers, batch)
        out_shape: tuple[int, ...] = (batch, steps, d * out_size) if m.batch_first else (steps, batch, d * out_size)
    else:
        state, out_shape = (d * m.num_layers,), (input.shape[0], d * out_size)
    out = input.new_empty(out_shape)
    h = input.new_empty((*state, out_size))
    if isinstance(m, nn.LSTM):
        c = input.new_empty((*state, m.hidden_size))
        if hx is not None:
            _expect("h0", hx[0], tuple(h.shape))
            _expect("c0", hx[1], tuple(c.shape))
        return out, (h, c)
    if hx is not None:
        _expect("h0", hx, tuple(h.shape))
    return out, h


def _batch_norm_shape(m: Any, input: Any) -> Any:
    import torch.nn.functional as F

    m._check_input_dim(input)
    if input.shape[1] != m.num_features:
        raise RuntimeError(f"running_mean should contain {input.shape[1]} elements not {m.num_features}")
    if m.training:
        F._verify_batch_size(input.size())  # type: ignore[attr-defined]  # one value per channel: no statistics
    return input.new_empty(input.shape)


def _elementwise_shape(m: Any, input: Any) -> Any:
    return input if m.inplace else input.new_empty(input.shape)


def shapes_only(model: Any) -> None:
    """Give every recurrent and BatchNorm layer of `model` (built for one probe) its shape-only forward."""
    import torch.nn as nn

    for m in model.modules():
        if isinstance(m, nn.RNNBase):
            m.forward = types.MethodType(_recurrent_shape, m)
        elif isinstance(m, nn.modules.batchnorm._BatchNorm) and not isinstance(m, nn.SyncBatchNorm):
            m.forward = types.MethodType(_batch_norm_shape, m)  # type: ignore[method-assign]  # a probe's own model
        elif isinstance(m, nn.Hardtanh):  # ReLU6 too: an in-place clamp decomposes into several ops
            m.forward = types.MethodType(_elementwise_shape, m)  # type: ignore[method-assign]  # a probe's own model
