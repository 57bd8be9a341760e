"""A forward whose result's shape depends on the input's values: the elements above a threshold."""

import torch
import torch.nn as nn

n = 64


class Model(nn.Module):
    def forward(self, x):
        return x[x > 0.5]


def get_inputs():
    return [torch.rand(n, n)]


def get_init_inputs():
    return []
