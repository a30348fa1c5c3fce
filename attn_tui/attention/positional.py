"""Sinusoidal positional encoding (Vaswani et al., 2017): where a token is, as a vector."""

from __future__ import annotations

import torch


def sinusoidal(length: int, dim: int, dtype: torch.dtype = torch.float32,
               device: torch.device | str = "cpu") -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same); returns (length, dim).

    Computed in float64 and cast, so low-precision dtypes get the nearest value
    rather than accumulated rounding.
    """
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    even = torch.arange(0, dim, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = pos / torch.pow(10000.0, even / dim)  # (L, ceil(d/2))
    pe = torch.zeros(length, dim, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : dim // 2])
    return pe.to(dtype=dtype, device=device)


FORMULA = "PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d))"
