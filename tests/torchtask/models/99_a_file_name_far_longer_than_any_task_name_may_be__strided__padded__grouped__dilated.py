"""A file named as KernelBench names its convolutions: longer than a task's name may be."""

import torch
import torch.nn as nn

n = 24


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.rand(n, n)]


def get_init_inputs():
    return []
