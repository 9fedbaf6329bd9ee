"""Lean local training: one persistent model, data as tensors, batches by index, no optimizer objects.

Client i starts from the global model W^t, runs E epochs of mini-batch SGD (optionally with
momentum) on its samples and returns the thesis's "local gradient" ∇W_i^t = W^t − W_i^t
(thesis §2.1.2, Step 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedlib.fl.backprop import mlp_cross_entropy_grads, mlp_linears
from fedlib.fl.params import get_flat, set_flat
from fedlib.models import forward_in_chunks

#: loss(logits, labels, n_i) -> scalar, n_i the client's sample count; default: categorical cross-entropy
#: (thesis eq. 2.5), see :func:`cross_entropy`.
Loss = Callable[[Tensor, Tensor, int], Tensor]
#: penalty(params, start_params, n_i) -> scalar added to the loss (e.g. a proximal term). A penalty may carry
#: ``value_and_gradient(params, start_params, n_i) -> (value, gradients)``, its gradient written out: an MLP then
#: keeps the explicit back-propagation instead of autograd (Fed-nore-1's term, :func:`fedlib.algorithms.fednore`).
Penalty = Callable[[list[Tensor], list[Tensor], int], Tensor]


def cross_entropy(logits: Tensor, labels: Tensor, num_samples: int) -> Tensor:
    """The default local loss: mean categorical cross-entropy −Σ_o Y_o log a_K^o (thesis eq. 2.5)."""
    return F.cross_entropy(logits, labels)


@dataclass(frozen=True)
class LocalSGD:
    """Hyper-parameters of local training.

    Attributes:
        epochs: E, passes over the client's data per round.
        batch_size: B; the last batch of an epoch may be smaller.
        momentum: β of the momentum buffer v ← β v + (1 − dampening) g (0 = plain SGD, eq. 2.11).
        dampening: 0 gives heavy-ball momentum; dampening = β gives the thesis's "MGD"
            exponential moving average v ← β v + (1 − β) g.
    """

    epochs: int = 1
    batch_size: int = 50
    momentum: float = 0.0
    dampening: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.epochs, int) or self.epochs < 1:
            raise ValueError(f"epochs must be a positive int, got {self.epochs!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {self.batch_size!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {self.momentum!r}")
        if not 0 <= self.dampening <= 1:
            raise ValueError(f"dampening must be in [0, 1], got {self.dampening!r}")


def sgd_step_(params: list[Tensor], grads: list[Tensor], bufs: list[Tensor] | None, opt: LocalSGD,
              lr: float) -> None:
    """One local SGD step in place, as ``torch.optim.SGD``: v ← μ v + (1 − τ) g with momentum μ and dampening τ
    (``bufs`` None: no momentum, v = g), then θ ← θ − η v."""
    if bufs is not None:
        torch._foreach_mul_(bufs, opt.momentum)
        torch._foreach_add_(bufs, grads, alpha=1.0 - opt.dampening)
        grads = bufs
    torch._foreach_add_(params, grads, alpha=-lr)


class LocalTrainer:
    """Trains any client on one persistent ``model``.

    MLPs trained on the default cross-entropy, with no penalty or one that writes out its gradient
    (``value_and_gradient``), use the explicit back-propagation of thesis eqs. 2.6-2.10 (:mod:`fedlib.fl.backprop`);
    everything else uses autograd.

    ``channels_last``: a network with 2-d convolutions stores its weights and each epoch's batches channels-last
    (the model is converted in place). On a CPU a training step is 1.31x faster for cnn_mnist at B = 10, 1.23x for
    cnn_adpdfl at B = 20 and 1.05x for lenet5 at B = 128 (benchmarks/cnn_layout.py, one thread, 2026-12-01), with
    other convolution kernels: the numbers agree with the default layout to float32 rounding, not bitwise. No
    effect on other networks.
    """

    def __init__(self, model: nn.Module, loss: Loss | None = None, penalty: Penalty | None = None, *,
                 channels_last: bool = False) -> None:
        self.channels_last = channels_last and any(isinstance(m, nn.Conv2d) for m in model.modules())
        if self.channels_last:
            model.to(memory_format=torch.channels_last)
        self.model = model
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.loss = loss or cross_entropy
        self.penalty = penalty
        self.penalty_gradient = getattr(penalty, "value_and_gradient", None)
        self.num_samples = 0
        plain = (loss is None and (penalty is None or self.penalty_gradient is not None)
                 and len(self.params) == len(list(model.parameters())))
        self.linears = mlp_linears(model) if plain else None

    def gradients(self, x: Tensor, y: Tensor, anchor: list[Tensor] | None) -> tuple[list[Tensor], Tensor]:
        """Gradients of the local objective on one batch, and its value."""
        if self.linears is not None:
            grads, loss = mlp_cross_entropy_grads(self.linears, x, y)
            if self.penalty_gradient is not None:
                with torch.no_grad():
                    value, extra = self.penalty_gradient(self.params, anchor, self.num_samples)
                    torch._foreach_add_(grads, extra)
                loss = loss + value
            return grads, loss
        loss = self.loss(self.model(x), y, self.num_samples)
        if self.penalty is not None:
            loss = loss + self.penalty(self.params, anchor, self.num_samples)
        return list(torch.autograd.grad(loss, self.params)), loss.detach()

    def train(self, start: Tensor, x: Tensor, y: Tensor, indices: Tensor, *, lr: float, opt: LocalSGD,
              generator: torch.Generator) -> tuple[Tensor, float]:
        """Run local SGD from flat parameters ``start`` on samples ``x[indices], y[indices]``.

        Returns:
            The update ∇W_i = W^t − W_i (flat, on ``start``'s device; training runs on the model's) and the mean
            training loss of the last epoch.
        """
        set_flat(self.model, start)
        self.model.train()
        params = self.params
        anchor = [p.detach().clone() for p in params] if self.penalty is not None else None
        bufs = [torch.zeros_like(p) for p in params] if opt.momentum > 0 else None
        n = self.num_samples = len(indices)
        steps = math.ceil(n / opt.batch_size)
        last_loss = 0.0
        for _ in range(opt.epochs):
            order = indices[torch.randperm(n, generator=generator)].to(x.device)
            xs, ys = x.index_select(0, order), y.index_select(0, order)  # one gather per epoch; contiguous batches
            if self.channels_last:
                xs = xs.contiguous(memory_format=torch.channels_last)
            total = torch.zeros((), device=x.device)
            for s in range(steps):
                batch = slice(s * opt.batch_size, (s + 1) * opt.batch_size)
                grads, loss = self.gradients(xs[batch], ys[batch], anchor)
                with torch.no_grad():
                    sgd_step_(params, grads, bufs, opt, lr)
                total += loss
            last_loss = float(total) / steps
        return start - get_flat(self.model).to(start.device), last_loss


@torch.no_grad()
def evaluate_per_sample(model: nn.Module, flat: Tensor, x: Tensor, y: Tensor,
                        batch_size: int = 2000) -> tuple[Tensor, float]:
    """Which samples of (x, y) parameters ``flat`` classify correctly (an (N,) bool tensor on x's device) and the
    mean cross-entropy, the loss summed per block of ``batch_size`` samples; a CNN sees
    :data:`~fedlib.models.EVAL_CHUNK` of them at a time (:func:`~fedlib.models.forward_in_chunks`: 1.8x faster
    for cnn_cifar on 2,000 CIFAR-10 images)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")
    set_flat(model, flat)
    model.eval()
    correct, loss = [], 0.0
    for s in range(0, len(y), batch_size):
        logits = forward_in_chunks(model, x[s:s + batch_size], model)
        target = y[s:s + batch_size]
        loss += float(F.cross_entropy(logits, target, reduction="sum"))
        correct.append(logits.argmax(1) == target)
    return torch.cat(correct) if correct else torch.zeros(0, dtype=torch.bool), loss / len(y)


def evaluate(model: nn.Module, flat: Tensor, x: Tensor, y: Tensor, batch_size: int = 2000) -> tuple[float, float]:
    """Test accuracy and mean cross-entropy of parameters ``flat`` on (x, y) (:func:`evaluate_per_sample`)."""
    correct, loss = evaluate_per_sample(model, flat, x, y, batch_size)
    return int(correct.sum()) / len(y), loss
