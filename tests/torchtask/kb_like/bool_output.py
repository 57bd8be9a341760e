"""Which elements exceed a threshold: a bool output."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x > 0.5


n = 4096


def get_inputs():
    return [torch.rand(n)]


def get_init_inputs():
    return []
