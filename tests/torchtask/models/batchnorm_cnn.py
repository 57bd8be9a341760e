"""A CNN with BatchNorm in miniature (a level-3 model's building block), in training mode as built."""

import torch
import torch.nn as nn

batch_size = 9
channels = 8
height = 10
width = 12


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        # Without its count of batches (a 0-d buffer) the layer behaves the same at momentum 0.1:
        # the fixture tests the training-mode rule, not 0-d tensors.
        self.bn.num_batches_tracked = None

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
