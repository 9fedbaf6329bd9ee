"""Registry of the sources' networks.

``build_model(name, generator=...)`` returns a freshly initialised model. Initialisation draws
from the given generator (PyTorch's default U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and
biases), never from the global RNG, so two builds with equal generators are identical.
Chapters add their networks with :func:`register_model`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

MODELS: dict[str, Callable[..., nn.Module]] = {}


def register_model(name: str) -> Callable[[Callable[..., nn.Module]], Callable[..., nn.Module]]:
    """Decorator that adds a model constructor to the registry under ``name``."""
    def add(fn: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        if name in MODELS:
            raise ValueError(f"model {name!r} is already registered")
        MODELS[name] = fn
        return fn
    return add


@register_model("mlp")
def mlp(in_features: int = 784, hidden: tuple[int, ...] = (200, 200), num_classes: int = 10) -> nn.Module:
    """The thesis MLP, 784-200-200-10 with ReLU (eqs. 2.1-2.2; 199,210 parameters). Softmax is in the loss."""
    layers: list[nn.Module] = [nn.Flatten()]
    width = in_features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, num_classes))
    return nn.Sequential(*layers)


def _conv_net(in_channels: int, side: int, num_classes: int, fc: int | None) -> nn.Module:
    flat = 64 * (side // 4) ** 2
    head: list[nn.Module] = [nn.Linear(flat, num_classes)] if fc is None else [
        nn.Linear(flat, fc), nn.ReLU(), nn.Linear(fc, num_classes)]
    return nn.Sequential(
        nn.Conv2d(in_channels, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), *head,
    )


@register_model("cnn_mnist")
def cnn_mnist(num_classes: int = 10, fc: int | None = None) -> nn.Module:
    """Thesis §3.3 CNN for 1x28x28 inputs: conv5x5(32)-ReLU-pool2, conv5x5(64)-ReLU-pool2, FC + softmax.

    The source states no padding and "a fully connected layer with softmax": we use 'same' padding and a
    single FC layer (83,466 parameters). ``fc=512`` inserts McMahan et al.'s hidden
    layer of the FedAvg CNN instead.
    """
    return _conv_net(1, 28, num_classes, fc)


@register_model("cnn_cifar")
def cnn_cifar(num_classes: int = 10, fc: int | None = None) -> nn.Module:
    """The same CNN for 3x32x32 inputs (thesis §3.3, CIFAR-10; 94,666 parameters)."""
    return _conv_net(3, 32, num_classes, fc)


@register_model("cnn_adpdfl")
def cnn_adpdfl(num_classes: int = 10) -> nn.Module:
    """The CIFAR-10 CNN of thesis ch. 5 (§5.4.1): conv5x5(16)-ReLU-pool2, conv5x5(32)-ReLU-pool2, FC 512-ReLU,
    FC 10. Padding is not stated: none (flatten 32·5·5 = 800; 429,290 parameters)."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(800, 512), nn.ReLU(), nn.Linear(512, num_classes))


@register_model("logreg")
def logreg(in_features: int = 784, num_classes: int = 10) -> nn.Module:
    """Multinomial logistic regression, Linear(784 → 10) on flattened pixels (the SIFU paper's MNIST model)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(in_features, num_classes))


@register_model("cnn_sifu")
def cnn_sifu(in_channels: int = 1, side: int = 28, num_classes: int = 10) -> nn.Module:
    """The authors' Fashion-MNIST CNN for the SIFU paper: conv3x3(32, pad 1)-ReLU-pool2,
    conv3x3(64, pad 1)-ReLU-pool2, FC 256-ReLU-Dropout(0.1), FC 10 (the source's text says "three conv + two FC",
    A2). :class:`~fedlib.fl.batched.BatchedClients` draws a dropout mask per client and step."""
    flat = 64 * (side // 4) ** 2
    return nn.Sequential(nn.Conv2d(in_channels, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(flat, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, num_classes))


@register_model("cnn_sifu_cifar")
def cnn_sifu_cifar(num_classes: int = 10, fc: int = 64) -> nn.Module:
    """The authors' CIFAR CNN for the SIFU paper: conv3x3(32)-ReLU-pool2, conv3x3(64)-ReLU-pool2,
    conv3x3(64) without activation, FC ``fc``-ReLU, FC ``num_classes``; no padding, no dropout. CIFAR-10: fc 64
    (122,570 parameters); CIFAR-100: fc 256 and 100 classes."""
    return nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(64, 64, 3), nn.Flatten(), nn.Linear(1024, fc), nn.ReLU(),
                         nn.Linear(fc, num_classes))


@register_model("lenet5")
def lenet5(in_channels: int = 1, side: int = 28, num_classes: int = 10) -> nn.Module:
    """LeNet5 as in Varshney and Torra's code (no 84-unit layer): conv5x5(6, pad 2)-ReLU-pool2, conv5x5(16)-ReLU-pool2,
    FC 120-ReLU, FC 10; 51,902 parameters on MNIST (flatten size follows the input side)."""
    flat = 16 * ((side // 2 - 4) // 2) ** 2
    return nn.Sequential(nn.Conv2d(in_channels, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(flat, 120), nn.ReLU(), nn.Linear(120, num_classes))


@register_model("convnet")
def convnet(in_channels: int = 1, side: int = 28, num_classes: int = 10) -> nn.Module:
    """Varshney and Torra's "ConvNet" (Fig. 3; their code): conv3x3(20)-ReLU, conv3x3(10)-ReLU, FC 32-ReLU, FC 10, no
    padding or pooling; 186,692 parameters on MNIST, 253,612 on CIFAR-10."""
    return nn.Sequential(nn.Conv2d(in_channels, 20, 3), nn.ReLU(), nn.Conv2d(20, 10, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(10 * (side - 4) ** 2, 32), nn.ReLU(), nn.Linear(32, num_classes))


class _ResidualBlock(nn.Module):
    """[conv3x3(stride 2)+BN → ReLU → conv1x1+BN] + [conv1x1(stride 2)+BN], added, ReLU."""

    def __init__(self, c0: int, c1: int, c2: int) -> None:
        super().__init__()

        def bn(c: int) -> nn.BatchNorm2d:
            return nn.BatchNorm2d(c, track_running_stats=False)

        self.main = nn.Sequential(nn.Conv2d(c0, c1, 3, stride=2, padding=1), bn(c1), nn.ReLU(), nn.Conv2d(c1, c2, 1),
                                  bn(c2))
        self.shortcut = nn.Sequential(nn.Conv2d(c0, c2, 1, stride=2), bn(c2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.main(x) + self.shortcut(x))


@register_model("resnet_mini")
def resnet_mini(in_channels: int = 1, side: int = 28, num_classes: int = 10) -> nn.Module:
    """Varshney and Torra's "ResNet-mini" (their code): blocks (C, 4, 8) and (8, 16, 32), then FC; 17,986 parameters on
    MNIST. BatchNorm always uses batch statistics (no running buffers), as the code evaluates in train mode."""
    return nn.Sequential(_ResidualBlock(in_channels, 4, 8), _ResidualBlock(8, 16, 32), nn.Flatten(),
                         nn.Linear(32 * ((side + 3) // 4) ** 2, num_classes))


@register_model("cnn6")
def cnn6(in_channels: int = 3, num_classes: int = 10) -> nn.Module:
    """CNN6 of thesis Table 4.2 for 3x32x32 inputs: six convolutions, each followed by LeakyReLU(0.2), and one
    linear layer (3200 -> classes). Output channels 12-36-36-36-64-128 and bias-free convolutions as in R-GAP's
    CNN6 (the table lists input channels only); 154,266 parameters for 10 classes."""
    layers: list[nn.Module] = []
    for c_in, c_out, kernel, stride, pad in ((in_channels, 12, 4, 2, 2), (12, 36, 3, 2, 1), (36, 36, 3, 1, 1),
                                             (36, 36, 3, 1, 1), (36, 64, 3, 2, 1), (64, 128, 3, 1, 1)):
        layers += [nn.Conv2d(c_in, c_out, kernel, stride, pad, bias=False), nn.LeakyReLU(0.2)]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(3200, num_classes))


#: samples per forward pass when a CPU evaluates a CNN on many: its activations for thousands of images fall out of
#: the cache (cnn_sifu on 6,000 Fashion-MNIST-sized images, one thread: 10.5 s at once, 2.9 s 100 at a time)
EVAL_CHUNK = 100


def uses_batch_statistics(model: nn.Module) -> bool:
    """Whether ``model`` normalises with the statistics of its input batch (a BatchNorm in training mode or without
    running statistics, as ResNet-mini's): its output for one sample then depends on the rest of the batch."""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) and (m.training or not m.track_running_stats)
               for m in model.modules())


def forward_in_chunks(forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, model: nn.Module,
                      chunk: int = EVAL_CHUNK) -> torch.Tensor:
    """``forward(x)`` computed ``chunk`` samples at a time when ``model`` is a CNN on a CPU: the same outputs up to
    float32 rounding (a matrix product's kernel may depend on the batch size; at most 1.8e-7 apart over the
    registered CNNs in tests/test_engine.py). Anything else gets the whole batch, as before: an MLP (already fast,
    so its numbers stay bit for bit), a GPU, or a model normalising with batch statistics (its outputs depend on
    the batch)."""
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk!r}")
    if (x.is_cuda or len(x) <= chunk or uses_batch_statistics(model)
            or not any(isinstance(m, nn.modules.conv._ConvNd) for m in model.modules())):
        return forward(x)
    return torch.cat([forward(x[i:i + chunk]) for i in range(0, len(x), chunk)])


@torch.no_grad()
def init_parameters(model: nn.Module, generator: torch.Generator) -> nn.Module:
    """Re-draw every Linear/Conv weight and bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with ``generator``.

    This is the distribution of PyTorch's default initialisation for these layers.
    """
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            fan_in = module.weight[0].numel()
            bound = 1.0 / math.sqrt(fan_in)
            for p in (module.weight, module.bias):
                if p is not None:
                    p.copy_(torch.rand(p.shape, generator=generator) * (2 * bound) - bound)
    return model


def build_model(name: str, *, generator: torch.Generator, **kwargs) -> nn.Module:
    """Build registered model ``name`` with its parameters drawn from ``generator``."""
    if name not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {name!r}")
    return init_parameters(MODELS[name](**kwargs), generator)


def num_parameters(model: nn.Module) -> int:
    """Number of trainable scalars."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
