"""Batch normalisation in training mode, with a 0-d buffer (KernelBench level 1's 33_BatchNorm).

num_batches_tracked is the 0-d buffer."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 16
features = 16
dim1 = 32
dim2 = 32


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features]
