"""RMSNorm in bfloat16 as language-model code writes it: the statistics in fp32 inside, bf16 out."""

import torch
import torch.nn as nn

tokens = 8192
hidden = 4096


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter((torch.rand(hidden) + 0.5).to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(torch.bfloat16)


def get_inputs():
    return [torch.randn(tokens, hidden, dtype=torch.bfloat16)]


def get_init_inputs():
    return [hidden, 1e-6]
