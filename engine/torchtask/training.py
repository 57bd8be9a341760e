"""The training-mode rule of imported tasks, checked on the module the file builds.

A module runs as the file leaves it: `Model(...)` is in training mode (PyTorch's default, and
KernelBench's files never call `.eval()`), for the reference, for eager and for the candidate
alike. What that means for the layers whose forward differs between the modes:
- BatchNorm (and InstanceNorm with running statistics) normalises each channel with the mean and
  biased variance of the batch being computed, never with its running_mean/running_var. Forward
  also updates those running buffers in place; a task's results are only what forward returns,
  so the update is not part of the task (the buffers are inputs, and inputs are read-only).
- A layer that draws random numbers in training (dropout with p > 0, a recurrent layer's dropout
  between layers, attention's dropout, RReLU) makes forward give other values on every run: a
  task compares against one expected output, so such a module is refused, naming the layer.
"""

from __future__ import annotations

from typing import Any

# The names of layers listed in a task's description; the rest are counted.
LISTED_LAYERS = 6


def random_layer(model: Any) -> str | None:
    """Why forward is random in training mode, naming the first such layer, or None."""
    import torch.nn as nn

    for name, m in model.named_modules():
        if not m.training:
            continue
        label = name or "Model"
        if isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0:
            return f"layer {label} ({type(m).__name__}, p={m.p}) drops random elements in training mode; set its p to 0"
        if isinstance(m, nn.RNNBase) and m.dropout > 0 and m.num_layers > 1:
            return (
                f"layer {label} ({type(m).__name__}, dropout={m.dropout}) drops random elements between its layers "
                "in training mode; set its dropout to 0"
            )
        if isinstance(m, nn.MultiheadAttention) and m.dropout > 0:
            return (
                f"layer {label} (MultiheadAttention, dropout={m.dropout}) drops random attention weights in "
                "training mode; set its dropout to 0"
            )
        if isinstance(m, nn.RReLU) and m.lower != m.upper:
            return f"layer {label} (RReLU) draws a random slope in training mode; give it lower == upper"
    return None


def batch_statistics_layers(model: Any) -> list[str]:
    """The layers that normalise with the batch's own statistics (training mode, running buffers)."""
    import torch.nn as nn

    norms = (nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)
    return [
        name or "Model"
        for name, m in model.named_modules()
        if isinstance(m, norms) and m.training and m.track_running_stats
    ]


def rule_text(layers: list[str] | tuple[str, ...]) -> str:
    """The task description's statement of the rule, for a module with such layers."""
    more = len(layers) - LISTED_LAYERS
    shown = ", ".join(layers[:LISTED_LAYERS]) + (f" and {more} more" if more > 0 else "")
    return (
        "The module runs in training mode, as the file leaves it (the reference and eager too): its "
        f"normalisation layers ({shown}) normalise with the mean and biased variance of the data being "
        "computed (BatchNorm: per channel over the batch and every position; InstanceNorm: per sample and "
        "channel), never with their running_mean/running_var. Those running buffers are inputs "
        "the outputs do not depend on; forward's update of them is not part of the task (only the tensors "
        "forward returns are judged): leave every input buffer unchanged."
    )
