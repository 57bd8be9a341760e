"""Two ops PyTorch eager runs as separate kernels: relu(alpha * x + y)."""

import torch
import torch.nn as nn

n = 1 << 24
alpha = 0.75


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(alpha * x + y)


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
