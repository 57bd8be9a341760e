"""A layer that is random in training mode: a task cannot compare it against one expected output."""

import torch
import torch.nn as nn

n = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(n, n), nn.Dropout(p=0.25))

    def forward(self, x):
        return self.head(x)


def get_inputs():
    return [torch.rand(16, n)]


def get_init_inputs():
    return []
