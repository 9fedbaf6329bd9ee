"""Norm clipping of update vectors: flat, per layer, and at a running median (thesis §2.1.5, §3.3)."""

from __future__ import annotations

import torch
from torch import Tensor


def _check_bound(name: str, value: float | Tensor) -> None:
    if torch.any(torch.as_tensor(value) <= 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")


def clip_by_norm(update: Tensor, bound: float) -> Tensor:
    """Scale ``update`` to L2 norm at most ``bound``: ``W / max(1, ‖W‖₂ / C)``.

    Thesis eq. 2.28 (LDP-FL client-side clipping with bound C_i); a copy is returned.
    """
    _check_bound("bound", bound)
    norm = torch.linalg.vector_norm(update)
    return update / torch.clamp(norm / bound, min=1.0)


def clip_rows(updates: Tensor, bounds: float | Tensor) -> Tensor:
    """Clip each row of ``updates`` (m, d) to its bound (a scalar or one per row)."""
    _check_bound("bounds", bounds)
    norms = torch.linalg.vector_norm(updates, dim=1, keepdim=True)
    bounds = torch.as_tensor(bounds, dtype=updates.dtype).reshape(-1, 1)
    return updates / torch.clamp(norms / bounds, min=1.0)


def median_clip_rows(updates: Tensor) -> tuple[Tensor, float]:
    """CDP-FL server-side clipping at the median norm of the round's updates (thesis eq. 2.27, Geyer et al.).

    Returns:
        The clipped updates (m, d) and the bound S = median_i ||W_i||_2 used.
    """
    norms = torch.linalg.vector_norm(updates, dim=1)
    bound = float(torch.median(norms))
    if bound <= 0:
        return updates.clone(), bound
    return clip_rows(updates, bound), bound


def layer_norms(update: Tensor, slices: list[slice]) -> Tensor:
    """L2 norm of each layer's block of a flat update."""
    return torch.stack([torch.linalg.vector_norm(update[s]) for s in slices])


def clip_per_layer(update: Tensor, slices: list[slice], bounds: Tensor | list[float]) -> Tensor:
    """Clip each layer block ``update[slices[l]]`` to ``bounds[l]`` (thesis eq. 3.8, applied per layer)."""
    bounds = torch.as_tensor(bounds, dtype=update.dtype)
    if bounds.numel() != len(slices):
        raise ValueError(f"bounds must have one entry per layer ({len(slices)}), got {bounds.numel()}")
    _check_bound("bounds", bounds)
    scale = torch.clamp(layer_norms(update, slices) / bounds, min=1.0)
    out = update.clone()
    for s, f in zip(slices, scale):
        out[s] /= f
    return out


class RunningMedian:
    """A client's running median of its own update norms (thesis §2.1.5: C_i = median of the client's
    update norms during training; §3.3 eq. 3.8 per layer).

    ``observe(norms)`` appends the current norms and returns the median of all norms seen so far,
    current included, so a client's first clip is a no-op.
    """

    def __init__(self) -> None:
        self.history: dict[int, list[Tensor]] = {}

    def observe(self, client: int, norms: Tensor) -> Tensor:
        seen = self.history.setdefault(int(client), [])
        seen.append(norms.detach().clone())
        return torch.stack(seen).median(dim=0).values

    def state_dict(self) -> dict:
        return {"history": {k: torch.stack(v) for k, v in self.history.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.history = {int(k): list(v.unbind(0)) for k, v in state["history"].items()}
