"""A two-layer bidirectional GRU with its initial state given (a level-3 recurrent model)."""

import torch
import torch.nn as nn

seq_len = 12
batch_size = 9
input_size = 10
hidden_size = 16
num_layers = 2


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bidirectional=True)

    def forward(self, x, h0):
        _output, h_n = self.gru(x, h0)
        return h_n


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size), torch.rand(num_layers * 2, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
