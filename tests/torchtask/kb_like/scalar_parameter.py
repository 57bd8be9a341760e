"""Matmul, minimum and subtraction with a 0-d nn.Parameter (KernelBench level 2's 68)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x):
        x = self.linear(x)
        x = torch.min(x, self.constant)
        x = x - self.constant
        return x


batch_size = 32
in_features = 256
out_features = 256
constant = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, constant]
