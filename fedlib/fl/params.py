"""Flat parameter vectors with per-layer views: the representation every transform works on."""

from __future__ import annotations

import torch
from torch import Tensor, nn


def layer_slices(model: nn.Module) -> list[slice]:
    """Slices of the flat vector, one per parameter tensor (weights and biases are separate layers)."""
    out, start = [], 0
    for p in model.parameters():
        out.append(slice(start, start + p.numel()))
        start += p.numel()
    return out


def get_flat(model: nn.Module) -> Tensor:
    """A flat copy of the model's parameters."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


@torch.no_grad()
def set_flat(model: nn.Module, flat: Tensor) -> None:
    """Copy ``flat`` into the model's parameters (no aliasing: later training never writes into ``flat``)."""
    start = 0
    for p in model.parameters():
        n = p.numel()
        p.copy_(flat[start:start + n].view_as(p))
        start += n
    if start != flat.numel():
        raise ValueError(f"flat vector has {flat.numel()} entries, the model has {start} parameters")


def as_dict(model: nn.Module, flat: Tensor) -> dict[str, Tensor]:
    """The flat vector split into the model's named parameter shapes (views, no copy)."""
    if flat.numel() != sum(p.numel() for p in model.parameters()):
        raise ValueError(f"flat vector has {flat.numel()} entries, the model has "
                         f"{sum(p.numel() for p in model.parameters())} parameters")
    return {name: flat[s].view_as(p) for (name, p), s in zip(model.named_parameters(), layer_slices(model))}
