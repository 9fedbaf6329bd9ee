"""Sample-level DP-SGD (Abadi et al. 2016), the centralised reference the thesis compares DP-FL with (T3.1).

Poisson sampling with rate q, per-example clipping at C, Gaussian noise N(0, σ²C²) on the clipped sum,
division by the expected batch size qN (as Opacus does), and the RDP accountant with q per step. For
the thesis's MLPs the per-example norms come from :func:`fedlib.fl.backprop.mlp_clipped_gradient_sum`
(no per-example gradients stored); the result equals Opacus's (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from fedlib.data.datasets import Split
from fedlib.fl.backprop import mlp_clipped_gradient_sum, mlp_linears
from fedlib.fl.client import evaluate
from fedlib.fl.params import get_flat
from fedlib.privacy.accountant import RDPAccountant
from fedlib.rng import make_generator


@dataclass(frozen=True)
class DPSGDConfig:
    """DP-SGD hyper-parameters: epochs, expected batch size B = qN, lr, C, σ, δ, seed."""

    epochs: int = 1
    batch_size: int = 256
    lr: float = 0.1
    clip: float = 1.0
    noise_multiplier: float = 1.0
    delta: float = 1e-5
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("lr", "clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not self.noise_multiplier >= 0:
            raise ValueError(f"noise_multiplier must be >= 0, got {self.noise_multiplier!r}")


@dataclass
class DPSGDResult:
    accuracy: float
    epsilon: float
    steps: int


def train_dpsgd(model: nn.Module, train: Split, test: Split, config: DPSGDConfig) -> DPSGDResult:
    """Train ``model`` (a Linear/ReLU MLP) with DP-SGD; returns test accuracy and the ε spent at δ."""
    linears = mlp_linears(model)
    if linears is None:
        raise ValueError("train_dpsgd needs a Linear/ReLU MLP (see fedlib.fl.backprop.mlp_linears)")
    n = len(train)
    q = config.batch_size / n
    steps = math.ceil(config.epochs / q)
    params = list(model.parameters())
    accountant = RDPAccountant()
    for t in range(steps):
        take = torch.rand(n, generator=make_generator(config.seed, "dpsgd_sample", t)) < q
        idx = torch.nonzero(take).flatten()
        if len(idx) > 0:
            grads, _, _ = mlp_clipped_gradient_sum(linears, train.x[idx], train.y[idx], config.clip)
        else:
            grads = [torch.zeros_like(p) for p in params]
        noise_gen = make_generator(config.seed, "dpsgd_noise", t)
        with torch.no_grad():
            for p, g in zip(params, grads):
                g += torch.randn(g.shape, generator=noise_gen) * (config.noise_multiplier * config.clip)
                p -= config.lr * g / config.batch_size
        if config.noise_multiplier > 0:
            accountant.step(noise_multiplier=config.noise_multiplier, sample_rate=q)
    accuracy, _ = evaluate(model, get_flat(model), test.x, test.y)
    epsilon = accountant.get_epsilon(config.delta) if config.noise_multiplier > 0 else math.inf
    return DPSGDResult(accuracy, epsilon, steps)
