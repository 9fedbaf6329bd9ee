import pytest
import torch

from fedlib.models import MODELS, build_model, num_parameters, register_model
from fedlib.rng import make_generator


def test_parameter_counts_of_the_thesis_models():  # spec card ch3 §9 check 22
    assert num_parameters(build_model("mlp", generator=make_generator(0))) == 199_210
    assert num_parameters(build_model("cnn_mnist", generator=make_generator(0))) == 83_466
    assert num_parameters(build_model("cnn_cifar", generator=make_generator(0))) == 94_666


def test_chapter4_models():  # spec card ch4 §9 check 12
    cnn6 = build_model("cnn6", generator=make_generator(0))
    assert num_parameters(cnn6) == 154_266 and cnn6(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    assert cnn6[:-1](torch.zeros(2, 3, 32, 32)).shape == (2, 3200)  # the flatten size of Table 4.2
    mlp_cifar100 = build_model("mlp", generator=make_generator(0), in_features=3072, hidden=(1024,) * 3,
                               num_classes=100)
    assert num_parameters(mlp_cifar100) == 5_348_452


@pytest.mark.parametrize("name,kwargs,count", [  # seed 003 spec card §4 (the authors' code)
    ("convnet", {}, 186_692), ("convnet", dict(in_channels=3, side=32), 253_612),
    ("lenet5", {}, 51_902), ("lenet5", dict(in_channels=3, side=32), 73_322),
    ("resnet_mini", {}, 17_986), ("resnet_mini", dict(in_channels=3, side=32), 22_874)])
def test_deniability_models(name, kwargs, count):
    model = build_model(name, generator=make_generator(0), **kwargs)
    side = kwargs.get("side", 28)
    assert num_parameters(model) == count
    assert model(torch.zeros(2, kwargs.get("in_channels", 1), side, side)).shape == (2, 10)


@pytest.mark.parametrize("name,shape", [("mlp", (4, 1, 28, 28)), ("cnn_mnist", (4, 1, 28, 28)),
                                        ("cnn_cifar", (4, 3, 32, 32))])
def test_forward_shapes(name, shape):
    model = build_model(name, generator=make_generator(0))
    assert model(torch.zeros(shape)).shape == (4, 10)


def test_init_is_deterministic_and_seeded():
    a, b, c = (build_model("mlp", generator=make_generator(s)) for s in (1, 1, 2))
    pa, pb, pc = (torch.cat([p.flatten() for p in m.parameters()]) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)


def test_init_follows_pytorch_default_bounds():
    model = build_model("mlp", generator=make_generator(0))
    w = model[1].weight.detach()
    assert float(w.abs().max()) <= 1 / 784**0.5 and float(w.abs().max()) > 0.9 / 784**0.5


def test_unknown_model_and_duplicate_registration():
    with pytest.raises(ValueError, match="model must be one of"):
        build_model("resnet9000", generator=make_generator(0))
    with pytest.raises(ValueError, match="already registered"):
        register_model("mlp")(MODELS["mlp"])
