"""The SwiGLU feed-forward block of a bf16 language model: down(silu(gate(x)) * up(x))."""

import torch
import torch.nn as nn
import torch.nn.functional as F

tokens = 2048
hidden = 1024
intermediate = 2816


class Model(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate = nn.Linear(hidden, intermediate, bias=False, dtype=torch.bfloat16)
        self.up = nn.Linear(hidden, intermediate, bias=False, dtype=torch.bfloat16)
        self.down = nn.Linear(intermediate, hidden, bias=False, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def get_inputs():
    return [torch.randn(tokens, hidden, dtype=torch.bfloat16)]


def get_init_inputs():
    return [hidden, intermediate]
