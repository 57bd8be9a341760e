"""Cumulative sum of the elements a bool mask keeps (shaped like KernelBench level 1's 93)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask):
        return torch.cumsum(x * mask, dim=self.dim)


batch_size = 64
input_shape = (1000,)
dim = 1


def get_inputs():
    x = torch.rand(batch_size, *input_shape)
    mask = torch.randint(0, 2, x.shape).bool()
    return [x, mask]


def get_init_inputs():
    return [dim]
