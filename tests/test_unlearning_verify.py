"""The shared unlearning-verification module: watermark, membership inference, distance, accuracies."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedlib.fl.batched import BatchedClients
from fedlib.fl.params import get_flat
from fedlib.unlearning.stage import Federation
from fedlib.unlearning.verify import (
    add_watermark,
    matched_nonmembers,
    membership_auc,
    verify,
    watermark_positions,
)


def test_watermark_positions_are_per_group_and_sets_image_max():
    a, b = watermark_positions(3, (1, 28, 28)), watermark_positions(13 % 10, (1, 28, 28))
    assert torch.equal(a, b) and len(a.unique()) == 10
    assert not torch.equal(a, watermark_positions(4, (1, 28, 28)))
    images = torch.rand(5, 1, 28, 28) * 0.5
    marked = add_watermark(images, a)
    flat, before = marked.reshape(5, -1), images.reshape(5, -1)
    assert torch.equal(flat[:, a], before.max(1, keepdim=True).values.expand(5, 10))
    assert int((flat != before).sum(1).max()) <= 10  # only the 10 pattern entries change
    with pytest.raises(ValueError, match="count"):
        watermark_positions(0, (1, 2, 2), count=5)


def test_membership_auc():
    assert membership_auc(torch.zeros(4), torch.ones(6)) == 1.0  # members have lower loss: perfectly separated
    assert membership_auc(torch.ones(4), torch.ones(6)) == 0.5
    assert membership_auc(torch.tensor([0.0, 2.0]), torch.tensor([1.0])) == 0.5
    with pytest.raises(ValueError, match="at least one"):
        membership_auc(torch.zeros(0), torch.ones(2))


def test_matched_nonmembers_copy_the_label_histogram():
    members = torch.tensor([0, 0, 1, 2, 2, 2])
    pool = torch.arange(3).repeat(10)
    idx = matched_nonmembers(members, pool, torch.Generator().manual_seed(0))
    assert sorted(pool[idx].tolist()) == sorted(members.tolist()) and len(idx.unique()) == 6
    with pytest.raises(ValueError, match="class 5"):
        matched_nonmembers(torch.tensor([5]), pool, torch.Generator())


def test_verify_reports_accuracies_distance_and_mia():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
    x = torch.randn(4, 6, 1, 2, 2)
    params = get_flat(model)
    y = torch.stack([BatchedClients(model).losses(params, x[i], torch.zeros(6, dtype=torch.long)) for i in range(4)])
    y = (y > y.median()).long()  # arbitrary labels
    fed = Federation(BatchedClients(model), x, y, 0)
    held = (torch.randn(20, 1, 2, 2), torch.arange(2).repeat(10))
    out = verify(fed, params, [0, 1], [2, 3], heldout=held, retrained=params * 2)
    assert out.accuracy_forgotten == pytest.approx(float(fed.client_accuracy(params, [0, 1]).mean()))
    assert out.distance_to_retrained == pytest.approx(float(torch.linalg.vector_norm(params)), rel=1e-5)
    assert out.relative_distance == pytest.approx(0.5, rel=1e-5)
    assert 0.0 <= out.mia_auc <= 1.0
    with pytest.raises(ValueError, match="at least one forgotten"):
        verify(fed, params, [], [1])
