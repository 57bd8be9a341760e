"""Hinge loss, a 0-d output (shaped like KernelBench level 1's 100_HingeLoss).

The targets broadcast along the rows, so the two sizes must stay equal: the shapes stay the file's."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 256
input_shape = (256,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
