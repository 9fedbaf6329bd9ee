"""Vectorised clients of unequal sizes (quantity skew): every padded client trains exactly as it would alone."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fedlib.data.datasets import Split
from fedlib.fl.batched import PAD, BatchedClients, client_sizes, stack_clients, stack_padded

SIZES = [7, 3, 12, 5]


def data(n=40, classes=3):
    gen = torch.Generator().manual_seed(0)
    return Split(torch.randn(n, 1, 4, 4, generator=gen), torch.randint(0, classes, (n,), generator=gen), classes)


def clients():
    order = torch.randperm(40, generator=torch.Generator().manual_seed(1))
    return list(torch.split(order[:sum(SIZES)], SIZES))


def models():
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(16, 5), nn.ReLU(), nn.Linear(5, 3))
    cnn = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3))
    return [mlp, cnn]


def test_stack_padded_keeps_each_clients_samples_first():
    split, parts = data(), clients()
    x, y, sizes = stack_padded(split, parts)
    assert sizes.tolist() == SIZES and client_sizes(y).tolist() == SIZES
    for i, c in enumerate(parts):
        assert torch.equal(x[i, :len(c)], split.x[c]) and torch.equal(y[i, :len(c)], split.y[c])
        assert (y[i, len(c):] == PAD).all()
    with pytest.raises(ValueError, match="at least one sample"):
        stack_padded(split, [parts[0], parts[0][:0]])


@pytest.mark.parametrize("model", models(), ids=["mlp", "cnn"])
@pytest.mark.parametrize("work", [dict(steps=[3, 1, 4, 2], batch_size=4), dict(steps=3, batch_size=6),
                                  dict(epochs=2, batch_size=4)], ids=["steps-per-client", "steps", "epochs"])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_unequal_clients_train_as_they_would_alone(model, work, momentum):
    split, parts = data(), clients()
    x, y, _ = stack_padded(split, parts)
    trainer = BatchedClients(model)
    start = torch.randn(trainer.dim, generator=torch.Generator().manual_seed(2)) * 0.3
    gens = [torch.Generator().manual_seed(10 + i) for i in range(len(parts))]
    together = trainer.train(start, x, y, lr=0.3, momentum=momentum, generators=gens, **work)
    for i, c in enumerate(parts):
        alone_work = dict(work, steps=work["steps"][i]) if isinstance(work.get("steps"), list) else work
        alone = trainer.train(start, split.x[c].unsqueeze(0), split.y[c].unsqueeze(0), lr=0.3, momentum=momentum,
                              generators=[torch.Generator().manual_seed(10 + i)], **alone_work)
        assert torch.allclose(together[i], alone[0], atol=1e-6), i
    assert not torch.allclose(together[0], together[1])  # the clients did train on their own data


def test_equal_clients_through_either_path_agree():
    split = data()
    parts = list(torch.split(torch.arange(32), 8))
    x, y = stack_clients(split, parts)
    xp, yp, sizes = stack_padded(split, parts)
    assert torch.equal(x, xp) and torch.equal(y, yp) and sizes.tolist() == [8] * 4
    trainer = BatchedClients(models()[0])
    start = torch.zeros(trainer.dim)
    run = [trainer.train(start, x, y, steps=steps, batch_size=4, lr=0.3,
                         generators=[torch.Generator().manual_seed(i) for i in range(4)]) for steps in (3, [3] * 4)]
    assert torch.allclose(run[0], run[1], atol=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_cpu_cnn_clients_take_their_gradients_one_at_a_time(weighted):
    """A CNN on a CPU: each client's gradient is exactly a lone module's backward pass (no vmap), and within float32
    rounding of the vmapped gradient the GPU takes; an MLP and a network with dropout keep their batched paths."""
    split, parts = data(), list(torch.split(torch.arange(32), 8))
    x, y = stack_clients(split, parts)
    w = torch.rand(y.shape, generator=torch.Generator().manual_seed(3))
    cnn = models()[1]
    trainer = BatchedClients(cnn)
    assert trainer.client_by_client
    theta = torch.randn(len(parts), trainer.dim, generator=torch.Generator().manual_seed(2)) * 0.3
    got = trainer._gradients(theta, x, y, w if weighted else None)
    for i in range(len(parts)):
        lone = copy.deepcopy(cnn)
        torch.nn.utils.vector_to_parameters(theta[i], lone.parameters())
        losses = F.cross_entropy(lone(x[i]), y[i], reduction="none")
        ((losses * w[i]).sum() if weighted else losses.mean()).backward()
        assert torch.equal(got[i], torch.cat([p.grad.reshape(-1) for p in lone.parameters()])), i
    params = trainer._unflatten(theta)
    vmapped = trainer._weighted_grads(params, x, y, w) if weighted else trainer._grads(params, x, y)
    assert torch.allclose(got, trainer._flatten(vmapped), rtol=1e-5, atol=1e-6)
    assert not BatchedClients(models()[0]).client_by_client
    assert not BatchedClients(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Dropout(0.1), nn.Flatten(),
                                            nn.Linear(8, 3))).client_by_client


def test_accuracy_ignores_padding():
    split, parts = data(), clients()
    x, y, _ = stack_padded(split, parts)
    trainer = BatchedClients(models()[0])
    params = torch.randn(trainer.dim, generator=torch.Generator().manual_seed(3))
    got = trainer.accuracy(params, x, y)
    for i, c in enumerate(parts):
        want = trainer.accuracy(params, split.x[c].unsqueeze(0), split.y[c].unsqueeze(0))[0]
        assert float(got[i]) == pytest.approx(float(want))


def test_bad_step_counts_are_named():
    split, parts = data(), clients()
    x, y, _ = stack_padded(split, parts)
    trainer = BatchedClients(models()[0])
    with pytest.raises(ValueError, match="steps per client"):
        trainer.train(torch.zeros(trainer.dim), x, y, steps=[1, 2], batch_size=4, lr=0.1,
                      generators=[torch.Generator() for _ in parts])
    with pytest.raises(ValueError, match="adam"):
        trainer.train(torch.zeros(trainer.dim), x, y, steps=2, batch_size=4, lr=0.1, adam=True,
                      generators=[torch.Generator() for _ in parts])


def test_data_moved_to_the_device_once_while_it_lives_unchanged():
    trainer = BatchedClients(models()[0], device="meta")  # a device that moves shapes only: the cache's logic
    assert trainer.net is not trainer.model and next(trainer.net.parameters()).device.type == "meta"
    assert next(trainer.model.parameters()).device.type == "cpu"  # the caller's model stays where it was
    x = torch.randn(3, 4)
    first = trainer._data(x)
    assert first.device.type == "meta" and trainer._data(x) is first
    x.add_(1)  # changed in place: moved again
    assert trainer._data(x) is not first
    del x, first
    assert trainer._moved == {}  # a freed tensor's copy is dropped with it
    same, z = BatchedClients(models()[0], device="cpu"), data().x
    assert same.net is same.model and same._data(z) is z and same._moved == {}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (scripts/device_units.sh runs it there)")
@pytest.mark.parametrize("index", [0, 1], ids=["mlp", "cnn"])
@pytest.mark.parametrize("work", [dict(steps=[3, 1, 4, 2], batch_size=4), dict(steps=3, batch_size=6)],
                         ids=["unequal", "equal"])
def test_clients_on_cuda_agree_with_the_cpu(index, work):
    split, parts = data(), clients()
    x, y, _ = stack_padded(split, parts)
    cpu, gpu = BatchedClients(models()[index]), BatchedClients(models()[index], device="cuda")
    start = torch.randn(cpu.dim, generator=torch.Generator().manual_seed(2)) * 0.3

    def run(trainer):
        gens = [torch.Generator().manual_seed(10 + i) for i in range(len(parts))]
        return trainer.train(start, x, y, lr=0.3, momentum=0.9, generators=gens, **work)

    here, there = run(cpu), run(gpu)
    assert there.device.type == "cpu" and torch.allclose(here, there, atol=1e-5)
    assert torch.equal(cpu.accuracy(here[0], x, y), gpu.accuracy(here[0], x, y))
    assert torch.allclose(cpu.losses(here[0], split.x, split.y), gpu.losses(here[0], split.x, split.y), atol=1e-5)
    assert gpu.losses(here[0], split.x, split.y).device.type == "cpu"
