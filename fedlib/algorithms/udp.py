"""Weng's thesis ch. 4: the user-level DP (UDP) client whose shared gradients the reconstruction attacks target.

A4.1/A4.2: each round the client clips what it shares to C (eq. 4.1) — flat, per layer (each
tensor to C; the card's reading of Table 4.1, §7.2) or at the running median of its own norms (§4.2.6) — and
adds N(0, (σC/n)²) to every coordinate (eq. 4.2; n its number of samples). In the single-end (SE) setting the
client shares the mean cross-entropy gradient of its n images at the round's starting weights and then trains
one epoch with Adam (lr 0.01) on them (``shared="gradient"``); the trajectory W^0, W^1, ... does not
depend on the noise, so one trajectory serves every noise setting. In the FL setting every client shares its
privatised model update W^t − W_i after local SGD and the server averages them (A4.1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedlib.fl import Algorithm, ClipPerLayer, GaussianNoise
from fedlib.privacy import (
    DEFAULT_ORDERS,
    RunningMedian,
    clip_by_norm,
    clip_per_layer,
    compute_rdp,
    gaussian_noise,
    rdp_to_epsilon,
)

Params = dict[str, Tensor]
ClipMode = Literal["flat", "per_layer", "median"]
Sensitivity = Literal["clipped", "per_sample"]


def privatize(grad: Params, *, bound: float, noise_multiplier: float, num_samples: int, generator: torch.Generator,
              mode: ClipMode = "per_layer", median: RunningMedian | None = None) -> Params:
    """ḡ = clip(g, C) + N(0, (σ C / n)² I) (eqs. 4.1-4.2).

    ``mode="median"`` clips each tensor at the running median of its norms in ``median`` (updated with this
    round's norms, so round 1 is not clipped) and uses that bound in the noise std; ``bound`` is then unused.
    """
    if mode not in ("flat", "per_layer", "median"):
        raise ValueError(f"mode must be 'flat', 'per_layer' or 'median', got {mode!r}")
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples!r}")
    if not noise_multiplier >= 0:
        raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}")
    names = list(grad)
    flat = torch.cat([grad[k].flatten() for k in names])
    sizes = [grad[k].numel() for k in names]
    starts = torch.tensor([0, *sizes]).cumsum(0).tolist()
    slices = [slice(a, b) for a, b in zip(starts, starts[1:])]
    if mode == "flat":
        clipped, stds = clip_by_norm(flat, bound), [noise_multiplier * bound / num_samples] * len(names)
    else:
        if mode == "median":
            if median is None:
                raise ValueError("mode='median' needs the client's RunningMedian (median=...)")
            bounds = median.observe(0, torch.stack([flat[s].norm() for s in slices]))
        else:
            bounds = torch.full((len(names),), float(bound))
        clipped = clip_per_layer(flat, slices, bounds)
        stds = [noise_multiplier * float(b) / num_samples for b in bounds]
    return {k: clipped[s].view_as(grad[k]) + gaussian_noise(grad[k].shape, std, generator=generator)
            for k, s, std in zip(names, slices, stds)}


@dataclass
class Trajectory:
    """What an SE client shared over T rounds: the starting weights of each round and the true gradients."""

    weights: list[Params]  # W^{t-1}, t = 1..T
    grads: list[Params]  # g_t: mean cross-entropy gradient of the client's images at W^{t-1}


def single_end_trajectory(model: nn.Module, x: Tensor, y: Tensor, *, rounds: int, batch_size: int, lr: float = 0.01,
                          generator: torch.Generator) -> Trajectory:
    """Run the SE client of A4.2 for ``rounds`` rounds (one Adam epoch of batch ``batch_size`` per round) and
    record, per round, W^{t-1} and the clean gradient it shares (before :func:`privatize`)."""
    params = [p for p in model.parameters()]
    opt = torch.optim.Adam(params, lr=lr)
    names = [n for n, _ in model.named_parameters()]
    weights, grads = [], []
    for _ in range(rounds):
        weights.append({n: p.detach().clone() for n, p in zip(names, params)})
        g = torch.autograd.grad(F.cross_entropy(model(x), y), params)
        grads.append({n: t.detach() for n, t in zip(names, g)})
        order = torch.randperm(len(y), generator=generator)
        for s in range(0, len(y), batch_size):
            batch = order[s:s + batch_size]
            opt.zero_grad()
            F.cross_entropy(model(x[batch]), y[batch]).backward()
            opt.step()
    return Trajectory(weights, grads)


def udp_fl(bound: float, noise_multiplier: float) -> Algorithm:
    """UDP-based DPFL (A4.1) as an engine algorithm: each client clips every layer of its update W^t − W_i to C and
    adds N(0, (σC/n_i)²) (eqs. 4.1-4.2); the server subtracts the uniform mean. Run it with
    ``FLConfig(weighting="uniform")`` and ``history="updates"`` to see what the attacker sees."""
    return Algorithm(transforms=[ClipPerLayer(bound), GaussianNoise(noise_multiplier, per_sample=True)])


def udp_epsilon(noise_multiplier: float, *, num_samples: int, tensors: int, releases: int, delta: float,
                sensitivity: Sensitivity = "clipped", sample_rate: float = 1.0) -> float:
    """ε (RDP accountant, improved conversion) of ``releases`` privatised uploads of one client (eqs. 4.1-4.2).

    Each release clips each of ``tensors`` tensors to C and adds N(0, (σC/n)²) to every coordinate, so tensor l
    alone is a Gaussian mechanism with noise multiplier z = (σC/n)/Δ, and the L tensors of a release compose to one
    Gaussian mechanism with multiplier z/√L. The sensitivity Δ of one tensor:

    * ``"clipped"``: 2C, what the mechanism as run guarantees. Nothing clips an image's own gradient, so one image
      (or the client's whole data, user-level) can move the clipped mean anywhere in the C-ball: z = σ/(2n).
    * ``"per_sample"``: C/n, the thesis's convention (its noise σC/n calibrated to z = σ); it would hold only if
      every image's gradient were clipped to C before averaging.

    ``sample_rate`` q < 1 amplifies by subsampling; the client's upload uses all its n samples (q = 1). The
    thesis's own accounting (spec A4.7, ε ≈ 8 at σ = 1) is ``sensitivity="per_sample"``, one tensor, 15
    releases at q = 0.25.
    """
    if sensitivity not in ("clipped", "per_sample"):
        raise ValueError(f"sensitivity must be 'clipped' or 'per_sample', got {sensitivity!r}")
    for name, value in (("num_samples", num_samples), ("tensors", tensors), ("releases", releases)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if not noise_multiplier > 0:
        return math.inf
    z = noise_multiplier / (2 * num_samples) if sensitivity == "clipped" else noise_multiplier
    rdp = compute_rdp(q=sample_rate, noise_multiplier=z, steps=releases * tensors, orders=DEFAULT_ORDERS)
    return rdp_to_epsilon(DEFAULT_ORDERS, rdp, delta, "improved")[0]
