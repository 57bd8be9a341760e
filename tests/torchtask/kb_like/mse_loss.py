"""Mean squared error, a 0-d output (shaped like KernelBench level 1's 94_MSELoss)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


batch_size = 64
input_shape = (1000,)
dim = 1


def get_inputs():
    scale = torch.rand(())
    return [torch.rand(batch_size, *input_shape) * scale, torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return []
