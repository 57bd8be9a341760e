"""Cross-entropy over classes, a 0-d output (shaped like KernelBench level 1's 95_CrossEntropyLoss)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)


batch_size = 64
num_classes = 1000
input_shape = (num_classes,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
