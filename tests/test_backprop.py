import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fedlib.fl import LocalTrainer
from fedlib.fl.backprop import mlp_cross_entropy_grads, mlp_linears
from fedlib.models import build_model
from fedlib.rng import make_generator


@pytest.mark.parametrize("hidden", [(200, 200), (32,), ()])
def test_explicit_backprop_equals_autograd(hidden):
    model = build_model("mlp", generator=make_generator(0), hidden=hidden)
    gen = make_generator(1)
    x, y = torch.randn(37, 1, 28, 28, generator=gen), torch.randint(0, 10, (37,), generator=gen)
    grads, loss = mlp_cross_entropy_grads(mlp_linears(model), x, y)
    ref_loss = F.cross_entropy(model(x), y)
    ref = torch.autograd.grad(ref_loss, list(model.parameters()))
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-6)
    assert len(grads) == len(ref)
    for g, r in zip(grads, ref):
        assert g.shape == r.shape and torch.allclose(g, r, atol=1e-6)


def test_only_plain_mlps_take_the_fast_path():
    assert mlp_linears(build_model("cnn_mnist", generator=make_generator(0))) is None
    assert mlp_linears(nn.Sequential(nn.Linear(4, 4), nn.Sigmoid(), nn.Linear(4, 2))) is None
    assert mlp_linears(nn.Sequential(nn.Linear(4, 2, bias=False))) is None
    mlp = build_model("mlp", generator=make_generator(0))
    assert LocalTrainer(mlp).linears is not None
    assert LocalTrainer(mlp, penalty=lambda p, a, n: sum((x - y).pow(2).sum() for x, y in zip(p, a))).linears is None
    assert LocalTrainer(mlp, loss=lambda z, y, n: F.nll_loss(z, y)).linears is None
