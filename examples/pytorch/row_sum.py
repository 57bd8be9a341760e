"""Sum over the last dimension of a 3-D tensor."""

import torch
import torch.nn as nn

batch = 32
rows = 1024
cols = 1000


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=-1)


def get_inputs():
    return [torch.randn(batch, rows, cols)]


def get_init_inputs():
    return []
