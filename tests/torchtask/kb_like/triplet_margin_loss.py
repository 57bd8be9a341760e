"""Triplet margin loss, a 0-d output (shaped like KernelBench level 1's 99_TripletMarginLoss)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.loss_fn = torch.nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)


batch_size = 64
input_shape = (1000,)
dim = 1


def get_inputs():
    scale = torch.rand(())
    return [
        torch.rand(batch_size, *input_shape) * scale,
        torch.rand(batch_size, *input_shape),
        torch.rand(batch_size, *input_shape),
    ]


def get_init_inputs():
    return [1.0]
