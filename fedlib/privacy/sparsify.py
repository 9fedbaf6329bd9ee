"""Top-k sparsification of updates (thesis §3.2.1.1)."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def top_k_count(numel: int, rate: float) -> int:
    """K = ceil(rate · d), the number of entries kept at top-rate ``rate`` (at least 1)."""
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}")
    return max(1, math.ceil(rate * numel))


def top_k(update: Tensor, rate: float) -> tuple[Tensor, Tensor]:
    """Keep the ``rate`` fraction of entries with the largest magnitude, zero the rest.

    Returns:
        The sparse update (same shape) and the int64 indices I of the kept entries.
    """
    flat = update.reshape(-1)
    k = top_k_count(flat.numel(), rate)
    idx = torch.topk(flat.abs(), k, sorted=False).indices
    out = torch.zeros_like(flat)
    out[idx] = flat[idx]
    return out.view_as(update), idx
