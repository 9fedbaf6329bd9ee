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


@torch.no_grad()
def mlp_cross_entropy_grads(linears: list[nn.Linear], x: Tensor, y: Tensor) -> tuple[list[Tensor], Tensor]:
    """Gradients of the mean cross-entropy of an MLP, in ``parameters()`` order (w_1, b_1, w_2, ...).

    Forward: z_k = a_{k-1} w_k^T + b_k (2.1), a_k = ReLU(z_k) (2.2), softmax output (2.4), cross-entropy
    (2.5). Backward: dz_K = a_K − Y (2.6); dw_k = (1/n') dz_k^T a_{k−1} (2.8); db_k = (1/n') Σ_j dz_k^j
    (2.9); da_{k−1} = dz_k w_k (2.10); dz_k = da_k × g'(z_k) (2.7). The 1/n' is applied once, to dz_K.

    Returns:
        The gradients and the loss (0-d tensor).
    """
    a = x.reshape(x.shape[0], -1)
    inputs, pre = [a], []
    for k, layer in enumerate(linears):
        z = torch.addmm(layer.bias, inputs[-1], layer.weight.t())
        pre.append(z)
        if k < len(linears) - 1:
            inputs.append(torch.relu(z))
    log_p = torch.log_softmax(pre[-1], dim=1)
    rows = torch.arange(len(y))
    loss = -log_p[rows, y].mean()
    dz = log_p.exp_()
    dz[rows, y] -= 1.0
    dz.div_(len(y))
    grads: list[Tensor] = []
    for k in range(len(linears) - 1, -1, -1):
        grads.append(dz.sum(0))
        grads.append(dz.t().mm(inputs[k]))
        if k > 0:
            dz = dz.mm(linears[k].weight).mul_(pre[k - 1] > 0)
    grads.reverse()
    return grads, loss
