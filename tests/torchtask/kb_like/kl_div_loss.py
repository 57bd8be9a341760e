"""Kullback-Leibler divergence, a 0-d output (shaped like KernelBench level 1's 98_KLDivLoss)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.kl_div(torch.log(predictions), targets, reduction="batchmean")


batch_size = 64
input_shape = (1000,)
dim = 1


def get_inputs():
    scale = torch.rand(())
    return [
        (torch.rand(batch_size, *input_shape) * scale).softmax(dim=-1),
        torch.rand(batch_size, *input_shape).softmax(dim=-1),
    ]


def get_init_inputs():
    return []
