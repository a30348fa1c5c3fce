"""Seeded learned parameters: each from its own generator so adding one never shifts another."""

from __future__ import annotations

import math
import zlib

import torch


def _generator(seed: int, name: str) -> torch.Generator:
    return torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % (2**63))


class ParamFactory:
    """Makes named parameters deterministically from (seed, name) and records them.

    Drawn on the CPU in float64 and then cast and moved, so CPU and CUDA runs, and
    every dtype, start from the same numbers.
    """

    def __init__(self, seed: int, dtype: torch.dtype, device: torch.device,
                 record: dict[str, torch.Tensor]) -> None:
        self.seed = seed
        self.dtype = dtype
        self.device = device
        self.record = record

    def normal(self, name: str, *shape: int, std: float) -> torch.Tensor:
        values = torch.randn(*shape, generator=_generator(self.seed, name), dtype=torch.float64) * std
        tensor = values.to(dtype=self.dtype, device=self.device)
        self.record[name] = tensor
        return tensor

    def ones_near(self, name: str, width: int, std: float) -> torch.Tensor:
        """A norm's weight (width,): 1 + N(0, std²), near the ones a model starts from but never all ones."""
        values = 1 + torch.randn(width, generator=_generator(self.seed, name), dtype=torch.float64) * std
        tensor = values.to(dtype=self.dtype, device=self.device)
        self.record[name] = tensor
        return tensor

    def weight(self, name: str, out_features: int, in_features: int) -> torch.Tensor:
        """(out, in) like nn.Linear's weight, scaled by 1/√in so products stay near unit size."""
        return self.normal(name, out_features, in_features, std=1 / math.sqrt(in_features))

    def bias(self, name: str, out_features: int, in_features: int) -> torch.Tensor:
        """(out,) like nn.Linear's bias, drawn from U(−1/√in, 1/√in) as nn.Linear starts it."""
        bound = 1 / math.sqrt(in_features)
        values = (torch.rand(out_features, generator=_generator(self.seed, name), dtype=torch.float64) * 2 - 1) * bound
        tensor = values.to(dtype=self.dtype, device=self.device)
        self.record[name] = tensor
        return tensor

    def token_rows(self, tokens: list[str], dim: int, pad_token: str) -> torch.Tensor:
        """Embedding table (V, dim): a row per distinct token, seeded by the token itself.

        The same word gets the same vector in every sentence; `<pad>` is the zero row,
        as nn.Embedding's padding_idx makes it.
        """
        rows = []
        for token in tokens:
            if token == pad_token:
                rows.append(torch.zeros(dim, dtype=torch.float64))
            else:
                gen = _generator(self.seed, "embedding:" + token)
                rows.append(torch.randn(dim, generator=gen, dtype=torch.float64))
        table = torch.stack(rows).to(dtype=self.dtype, device=self.device)  # (V, dim)
        self.record["embedding"] = table
        return table
