"""Smooth L1 (Huber) loss, a 0-d output (shaped like KernelBench level 1's 96_HuberLoss)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.smooth_l1_loss(predictions, targets)


batch_size = 64
input_shape = (1000,)
dim = 1


def get_inputs():
    scale = torch.rand(())
    return [torch.randn(batch_size, *input_shape) * 2 * scale, torch.randn(batch_size, *input_shape)]


def get_init_inputs():
    return []
