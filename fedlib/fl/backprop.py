"""Back-propagation of an MLP written out as in thesis §2.1.1 (eqs. 2.1-2.10).

For the thesis's networks (Linear/ReLU stacks with a softmax cross-entropy output) this computes the
same gradients as autograd with fewer, larger kernels and no graph bookkeeping, which makes local
training about 20 % faster on CPU. :class:`~fedlib.fl.client.LocalTrainer` uses it automatically
when the model is such a stack and the loss is the default cross-entropy.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def mlp_linears(model: nn.Module) -> list[nn.Linear] | None:
    """The Linear layers of ``model`` if it is ``Sequential([Flatten], Linear, ReLU, ..., ReLU, Linear)``
    with biases, else None."""
    if not isinstance(model, nn.Sequential):
        return None
    layers = list(model)
    if layers and isinstance(layers[0], nn.Flatten):
        layers = layers[1:]
    if len(layers) % 2 == 0:
        return None
    for k, layer in enumerate(layers):
        expected = nn.Linear if k % 2 == 0 else nn.ReLU
        if type(layer) is not expected or (expected is nn.Linear and layer.bias is None):
            return None
    return [layer for layer in layers if isinstance(layer, nn.Linear)]


def _forward(linears: list[nn.Linear], x: Tensor) -> tuple[list[Tensor], list[Tensor]]:
    """Layer inputs a_0..a_{K-1} and pre-activations z_1..z_K (eqs. 2.1-2.2)."""
    inputs, pre = [x.reshape(x.shape[0], -1)], []
    for k, layer in enumerate(linears):
        z = torch.addmm(layer.bias, inputs[-1], layer.weight.t())
        pre.append(z)
        if k < len(linears) - 1:
            inputs.append(torch.relu(z))
    return inputs, pre


def _deltas(linears: list[nn.Linear], pre: list[Tensor], y: Tensor) -> tuple[list[Tensor], Tensor]:
    """Per-sample dℓ_j/dz_k for every layer (rows = samples) and the per-sample losses ℓ_j (eqs. 2.4-2.7, 2.10)."""
    log_p = torch.log_softmax(pre[-1], dim=1)
    rows = torch.arange(len(y), device=y.device)
    losses = -log_p[rows, y]
    dz = log_p.exp_()
    dz[rows, y] -= 1.0  # dz_K = a_K − Y (2.6)
    deltas = [dz]
    for k in range(len(linears) - 1, 0, -1):
        dz = dz.mm(linears[k].weight).mul_(pre[k - 1] > 0)  # da_{k-1} = dz_k w_k (2.10), × g'(z) (2.7)
        deltas.append(dz)
    deltas.reverse()
    return deltas, losses


@torch.no_grad()
def mlp_cross_entropy_grads(linears: list[nn.Linear], x: Tensor, y: Tensor) -> tuple[list[Tensor], Tensor]:
    """Gradients of the mean cross-entropy of an MLP, in ``parameters()`` order (w_1, b_1, w_2, ...).

    Forward: z_k = a_{k-1} w_k^T + b_k (2.1), a_k = ReLU(z_k) (2.2), softmax output (2.4), cross-entropy
    (2.5). Backward: dz_K = a_K − Y (2.6); dw_k = (1/n') dz_k^T a_{k−1} (2.8); db_k = (1/n') Σ_j dz_k^j
    (2.9); da_{k−1} = dz_k w_k (2.10); dz_k = da_k × g'(z_k) (2.7).

    Returns:
        The gradients and the loss (0-d tensor).
    """
    inputs, pre = _forward(linears, x)
    deltas, losses = _deltas(linears, pre, y)
    grads: list[Tensor] = []
    for dz, a in zip(deltas, inputs):
        dz = dz / len(y)
        grads += [dz.t().mm(a), dz.sum(0)]
    return grads, losses.mean()


@torch.no_grad()
def mlp_clipped_gradient_sum(linears: list[nn.Linear], x: Tensor, y: Tensor, clip: float
                             ) -> tuple[list[Tensor], Tensor, Tensor]:
    """Σ_j g_j / max(1, ‖g_j‖ / C) over the batch, per-sample gradients g_j of the cross-entropy never stored.

    DP-SGD's per-example clipping (Abadi et al. 2016, Alg. 1). For a linear layer the per-sample gradient
    is dz_j a_j^T with squared norm ‖dz_j‖² ‖a_j‖² (plus ‖dz_j‖² for the bias) — the "ghost norm" —
    and the clipped sum is (f ⊙ dz)^T a with f_j = min(1, C / ‖g_j‖).

    Returns:
        The clipped gradient sum in ``parameters()`` order, the per-sample norms ‖g_j‖, the mean loss.
    """
    if not clip > 0:
        raise ValueError(f"clip must be > 0, got {clip!r}")
    inputs, pre = _forward(linears, x)
    deltas, losses = _deltas(linears, pre, y)
    sq = torch.zeros(len(y), dtype=x.dtype, device=x.device)
    for dz, a in zip(deltas, inputs):
        dz2 = dz.pow(2).sum(1)
        sq += dz2 * (a.pow(2).sum(1) + 1.0)
    norms = sq.sqrt()
    factor = torch.clamp(clip / (norms + 1e-12), max=1.0)
    grads: list[Tensor] = []
    for dz, a in zip(deltas, inputs):
        scaled = dz * factor[:, None]
        grads += [scaled.t().mm(a), scaled.sum(0)]
    return grads, norms, losses.mean()


@torch.no_grad()
def batched_mlp_grads(weights: list[Tensor], biases: list[Tensor], x: Tensor, y: Tensor,
                      sample_weights: Tensor | None = None) -> tuple[list[Tensor], Tensor]:
    """:func:`mlp_cross_entropy_grads` for m MLPs at once, each on its own batch (eqs. 2.1-2.10 with a leading
    client dimension: one batched matrix product per layer instead of m small ones).

    Args:
        weights, biases: per layer, (m, out, in) and (m, out).
        x: (m, B, ...) inputs, flattened per sample; y: (m, B) labels.
        sample_weights: (m, B) weights of the per-sample losses (padded batches of unequal clients: 1/b_i on a
            client's b_i real samples, 0 on padding); None: the mean over B.

    Returns:
        The gradients of each MLP's (weighted) mean cross-entropy, (w_1, b_1, w_2, ...) with a leading m dimension,
        and each MLP's (weighted) mean cross-entropy (m,).
    """
    m, b = y.shape
    inputs, pre = [x.reshape(m, b, -1)], []
    for k, (w, bias) in enumerate(zip(weights, biases)):
        z = torch.baddbmm(bias.unsqueeze(1), inputs[-1], w.transpose(1, 2))
        pre.append(z)
        if k < len(weights) - 1:
            inputs.append(torch.relu(z))
    per_sample = torch.logsumexp(pre[-1], dim=-1) - pre[-1].gather(-1, y.unsqueeze(-1)).squeeze(-1)  # (2.5)
    losses = per_sample.mean(1) if sample_weights is None else (per_sample * sample_weights.to(per_sample.dtype)).sum(1)
    dz = torch.softmax(pre[-1], dim=-1)
    dz.scatter_add_(-1, y.unsqueeze(-1), torch.full((m, b, 1), -1.0, dtype=dz.dtype, device=dz.device))  # a_K − Y (2.6)
    if sample_weights is None:
        dz.div_(b)
    else:
        dz.mul_(sample_weights.to(dz.dtype).unsqueeze(-1))
    grads: list[Tensor] = []
    for k in range(len(weights) - 1, -1, -1):
        grads = [torch.bmm(dz.transpose(1, 2), inputs[k]), dz.sum(1)] + grads  # (2.8), (2.9)
        if k > 0:
            dz = torch.bmm(dz, weights[k]).mul_(pre[k - 1] > 0)  # (2.10), (2.7)
    return grads, losses
