"""The shared unlearning-verification module: every metric must separate a model that remembers from one that
never saw the data, so a constant, a sign flip or a broken calibration fails here."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import Tensor, nn

from fedlib.fl.batched import BatchedClients
from fedlib.fl.params import get_flat
from fedlib.unlearning.stage import Federation
from fedlib.unlearning.verify import (
    FORGOT,
    REMEMBERS,
    Controls,
    Trigger,
    add_trigger,
    add_watermark,
    attack_success_rate,
    calibrated_scores,
    control_values,
    distance,
    forgotten_samples,
    logit_confidence,
    logits,
    matched_nonmembers,
    membership_attack,
    membership_auc,
    plant_backdoor,
    roc_auc,
    tpr_at_fpr,
    verify,
    verify_with_controls,
    watermark_positions,
)

SHAPE = (1, 30, 30)  # 900 features: a linear model fits 600 samples exactly
TEACHER = torch.randn(900, generator=torch.Generator().manual_seed(99))


def linear(seed: int = 0, classes: int = 2) -> BatchedClients:
    torch.manual_seed(seed)
    return BatchedClients(nn.Sequential(nn.Flatten(), nn.Linear(900, classes)))


def fit(trainer: BatchedClients, x: Tensor, y: Tensor, *, start=None, steps: int = 100) -> Tensor:
    """Full-batch gradient descent on (x, y) from ``start`` (default: the trainer's initial weights)."""
    start = get_flat(trainer.model) if start is None else start
    return trainer.train(start, x[None], y[None], steps=steps, batch_size=len(y), lr=0.5,
                         generators=[torch.Generator()])[0]



def random_data(n: int, seed: int, classes: int = 2) -> tuple[Tensor, Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, *SHAPE, generator=gen), torch.randint(0, classes, (n,), generator=gen)


def population(n: int, seed: int) -> tuple[Tensor, Tensor]:
    """Samples labelled by a fixed linear teacher, 30 % of the labels flipped: some examples are easy for every
    model, the flipped ones hard for every model that did not train on them."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, *SHAPE, generator=gen)
    y = (x.reshape(n, -1) @ TEACHER > 0).long()
    flip = torch.rand(n, generator=gen) < 0.3
    y[flip] = 1 - y[flip]
    return x, y


@pytest.fixture(scope="module")
def memorised():
    """As in federated unlearning: 3 reference models trained on shared data from different initialisations, a
    target trained on the same data plus 200 members (it fits them all), 200 unseen non-members, the target's
    initial weights, and the same target trained without the members."""
    trainer = linear()
    shared, members, nonmembers = population(400, 1), population(200, 2), population(200, 3)
    refs = [fit(trainer, *shared, start=get_flat(linear(10 + k).model)) for k in range(3)]
    target = fit(trainer, torch.cat([shared[0], members[0]]), torch.cat([shared[1], members[1]]))
    return trainer, members, nonmembers, target, refs, get_flat(trainer.model), fit(trainer, *shared)


# --- the calibrated membership attack ---

def test_the_attack_finds_memorised_members_and_nothing_in_models_that_never_saw_them(memorised):
    trainer, members, nonmembers, target, refs, untrained, without = memorised
    strong = membership_attack(trainer, target, members, nonmembers, refs)
    assert strong.auc > 0.8 and strong.tpr_at_1pct > 0.1  # chance: 0.5 and 0.01
    assert strong.members == strong.nonmembers == 200
    for blind in (membership_attack(trainer, untrained, members, nonmembers, refs),
                  membership_attack(trainer, without, members, nonmembers, refs)):
        assert abs(blind.auc - 0.5) < 0.08 and blind.tpr_at_1pct < 0.06


def test_calibration_removes_per_example_difficulty():
    """Members are 0.5 more confident than they would be without training; the examples' own difficulty varies
    by ±5 across examples. Only the calibrated score sees the members."""
    gen = torch.Generator().manual_seed(0)
    difficulty = torch.randn(400, generator=gen, dtype=torch.float64) * 5
    refs = [difficulty + 0.1 * torch.randn(400, generator=gen, dtype=torch.float64) for _ in range(3)]
    target = difficulty + 0.1 * torch.randn(400, generator=gen, dtype=torch.float64)
    target[:200] += 0.5
    raw = roc_auc(target[:200], target[200:])
    score = calibrated_scores(target, refs)
    assert abs(raw - 0.5) < 0.1 and roc_auc(score[:200], score[200:]) > 0.95
    stack = torch.stack(refs)  # σ_out: the references' spread around their mean, pooled over the examples (≈ 0.1)
    sigma = float(stack.var(0).mean().sqrt())
    assert sigma == pytest.approx(0.1, rel=0.1)
    assert torch.allclose(score, (target - stack.mean(0)) / sigma)
    assert torch.equal(calibrated_scores(target, refs[:1]), target - refs[0])  # one reference: σ_out = 1
    with pytest.raises(ValueError, match="at least one reference"):
        calibrated_scores(target, [])
    with pytest.raises(ValueError, match="do not match"):
        calibrated_scores(target, [target[:3]])


def test_logit_confidence_is_the_log_odds_of_the_true_class():
    trainer = linear(classes=3)
    params = get_flat(trainer.model) * 3
    x, y = random_data(50, 3, classes=3)
    p = torch.softmax(logits(trainer, params, x).double(), 1)[torch.arange(50), y]
    assert torch.allclose(logit_confidence(trainer, params, x, y), torch.log(p / (1 - p)), atol=1e-6)
    with pytest.raises(ValueError, match="same number"):
        logit_confidence(trainer, params, x, y[:3])
    with pytest.raises(ValueError, match="parameters"):
        logits(trainer, params[:5], x)


def test_roc_auc_counts_every_pair_and_ties_half():
    gen = torch.Generator().manual_seed(0)
    pos, neg = torch.randint(0, 5, (30,), generator=gen).double(), torch.randint(0, 5, (40,), generator=gen).double()
    brute = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(pos, neg)) / (30 * 40)
    assert roc_auc(pos, neg) == pytest.approx(brute, abs=1e-12)
    assert roc_auc(torch.ones(3), torch.zeros(4)) == 1.0 and roc_auc(torch.zeros(3), torch.ones(4)) == 0.0
    assert membership_auc(torch.zeros(4), torch.ones(6)) == 1.0  # members have the lower loss
    assert membership_auc(torch.ones(4), torch.ones(6)) == 0.5
    assert membership_auc(torch.tensor([0.0, 2.0]), torch.tensor([1.0])) == 0.5
    with pytest.raises(ValueError, match="at least one"):
        membership_auc(torch.zeros(0), torch.ones(2))


def test_tpr_at_fpr_uses_the_threshold_that_few_negatives_exceed():
    neg = torch.arange(100).double()  # 0..99
    pos = torch.tensor([98.5, 99.5, 50.0, 120.0])
    assert tpr_at_fpr(pos, neg, 0.01) == 0.75  # threshold 98: one negative (1 %) above it
    assert tpr_at_fpr(pos, neg, 0.001) == 0.5  # fewer than one negative allowed: above the largest, 99
    assert tpr_at_fpr(pos, neg, 0.0) == 0.5
    assert tpr_at_fpr(pos, neg, 0.5) == 1.0  # threshold 49
    gen = torch.Generator().manual_seed(1)
    same = torch.randn(20_000, generator=gen)
    assert tpr_at_fpr(same[:10_000], same[10_000:], 0.01) == pytest.approx(0.01, abs=0.004)  # chance: TPR = FPR
    with pytest.raises(ValueError, match="fpr"):
        tpr_at_fpr(pos, neg, 1.0)


# --- the backdoor ---

def test_plant_backdoor_poisons_a_fraction_of_the_chosen_clients():
    x = torch.zeros(4, 10, 1, 6, 6)
    y = torch.arange(10).repeat(4, 1) % 3  # labels 0,1,2,0,...: three samples per client already carry target 0
    trigger = Trigger(target=0, size=2, value=5.0)
    px, py, mask = plant_backdoor(x, y, [1, 3], trigger, 0.25, generator=torch.Generator().manual_seed(0))
    assert mask.sum(1).tolist() == [0, 3, 0, 3]  # ⌈0.25 · 10⌉ = 3 each
    assert bool((py[mask] == 0).all()) and bool((y[mask] != 0).all())  # relabelled, and never a target sample
    assert torch.equal(px[mask][:, 0, -2:, -2:], torch.full((6, 2, 2), 5.0))
    assert torch.equal(px[~mask], x[~mask]) and torch.equal(py[~mask], y[~mask])
    again = plant_backdoor(x, y, [1, 3], trigger, 0.25, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again[2], mask)
    with pytest.raises(ValueError, match="fraction"):
        plant_backdoor(x, y, [1], trigger, 0.0, generator=torch.Generator())
    with pytest.raises(ValueError, match="target"):
        Trigger(target=-1)
    with pytest.raises(ValueError, match="H, W >= 4"):
        add_trigger(torch.zeros(1, 3, 3), Trigger(0))


def test_backdoor_success_is_high_when_learned_and_at_chance_without():
    trainer = linear(classes=4)
    gen = torch.Generator().manual_seed(5)
    teacher = torch.randn(4, 900, generator=gen)
    x = torch.randn(600, *SHAPE, generator=gen)
    y = (x.reshape(600, -1) @ teacher.T).argmax(1)
    x_test, y_test = x[400:], y[400:]
    trigger = Trigger(target=2, size=3, value=4.0)
    clean = fit(trainer, x[:400], y[:400])
    px, py, _ = plant_backdoor(x[None, :400], y[None, :400], [0], trigger, 0.3, generator=gen)
    poisoned = fit(trainer, px[0], py[0])
    learned = attack_success_rate(trainer, poisoned, x_test, y_test, trigger)
    never = attack_success_rate(trainer, clean, x_test, y_test, trigger)
    assert learned > 0.9 and never < 0.4 and learned - never > 0.5
    bias_only = torch.zeros(trainer.dim)
    bias_only[-4 + trigger.target] = 1.0  # a model that always answers the target
    assert attack_success_rate(trainer, bias_only, x_test, y_test, trigger) == 1.0
    bias_only[-4 + trigger.target], bias_only[-4] = 0.0, 1.0  # ... and one that always answers class 0
    assert attack_success_rate(trainer, bias_only, x_test, y_test, trigger) == 0.0


# --- distances and the table with controls ---

def test_distance_is_zero_to_itself_and_kl_matches_its_definition():
    trainer = linear(classes=3)
    a, b = get_flat(trainer.model) * 5, get_flat(linear(1, classes=3).model) * 5
    x, _ = random_data(100, 4)
    same = distance(trainer, a, a, x)
    assert same.parameters == 0 and same.kl == pytest.approx(0, abs=1e-12) and same.disagreement == 0
    d = distance(trainer, b, a, x)
    p, q = torch.softmax(logits(trainer, a, x).double(), 1), torch.softmax(logits(trainer, b, x).double(), 1)
    assert d.kl == pytest.approx(float((p * (p / q).log()).sum(1).mean()), rel=1e-9)
    assert d.disagreement == pytest.approx(float((p.argmax(1) != q.argmax(1)).double().mean()))
    assert d.parameters == pytest.approx(float(torch.linalg.vector_norm((a - b).double())), rel=1e-6)


def federation(n_clients: int = 6, n: int = 40, seed: int = 0) -> Federation:
    x, y = population(n_clients * n, seed)
    return Federation(linear(), x.reshape(n_clients, n, *SHAPE), y.reshape(n_clients, n), seed)


def test_verify_with_controls_reads_every_metric_against_both_controls():
    """Clients 0-1 are forgotten. 'remembers' is fitted on everyone, 'forgot' and 'retrained' on clients 2-5 from
    two initialisations; every metric must put 'remembers' far from 'forgot', and the table must say so."""
    fed = federation()
    trigger = Trigger(target=1, size=4, value=3.0)
    fed.x, fed.y, poisoned = plant_backdoor(fed.x, fed.y, [0, 1], trigger, 0.25,
                                            generator=torch.Generator().manual_seed(1))
    keep, gone = [2, 3, 4, 5], [0, 1]
    everyone = fit(fed.trainer, fed.x.flatten(0, 1), fed.y.flatten())
    retrained = fit(fed.trainer, fed.x[keep].flatten(0, 1), fed.y[keep].flatten())
    other = fit(fed.trainer, fed.x[keep].flatten(0, 1), fed.y[keep].flatten(), start=get_flat(linear(7).model))
    test = population(400, 9)
    controls = Controls(remembers=everyone, forgot=other, retrained=retrained)
    members = forgotten_samples(fed, gone, ~poisoned)
    assert len(members[1]) == 2 * 30
    rows = verify_with_controls(fed, {"SCRATCH": retrained, "untouched": everyone}, gone, keep, controls, heldout=test,
                                members=members, trigger=trigger, generator=torch.Generator().manual_seed(2))
    assert [r["model"] for r in rows] == [REMEMBERS, FORGOT, "SCRATCH", "untouched"]
    pos, neg = control_values(rows, "accuracy_forgotten")
    assert pos > 0.95 and neg < 0.75  # 30 % flipped labels: only memorisation fits them
    pos, neg = control_values(rows, "mia_auc")
    assert pos > 0.9 and abs(neg - 0.5) < 0.15
    pos, neg = control_values(rows, "backdoor_success")
    assert pos > 0.9 and pos > neg + 0.2  # two classes: a model that never saw the trigger says 1 about half the time
    assert control_values(rows, "relative_kl")[1] == 1.0 and rows[2]["relative_kl"] == 0.0  # the floor; itself
    assert rows[0]["relative_kl"] > 1 and rows[0]["relative_disagreement"] > 1
    assert rows[3]["mia_auc"] == rows[0]["mia_auc"]  # same model, same samples, same references
    single = verify(fed, everyone, gone, keep, retrained=retrained, heldout=test)
    assert single.mia_auc is None and single.loss_auc == pytest.approx(rows[0]["loss_auc"], abs=0.1)
    assert single.kl_to_retrained == pytest.approx(rows[0]["kl_to_retrained"])
    assert single.relative_distance == pytest.approx(single.distance_to_retrained
                                                     / float(torch.linalg.vector_norm(retrained.double())))
    with pytest.raises(ValueError, match="non-members"):
        verify(fed, everyone, gone, keep, references=[retrained])
    with pytest.raises(ValueError, match="at least one forgotten"):
        verify(fed, everyone, [], keep)
    with pytest.raises(ValueError, match="controls"):
        control_values(rows[2:], "mia_auc")


def test_controls_never_use_the_model_under_test_as_its_own_reference():
    a, b, c = torch.zeros(3), torch.ones(3), torch.full((3,), 2.0)
    controls = Controls(remembers=c, forgot=b, retrained=a)
    assert [r.tolist() for r in controls.out_models(a)] == [b.tolist()]
    assert [r.tolist() for r in controls.out_models(b)] == [a.tolist()]
    assert len(controls.out_models(c)) == 2


# --- the paper's watermark and the label-matched non-members ---

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


def test_matched_nonmembers_copy_the_label_histogram():
    members = torch.tensor([0, 0, 1, 2, 2, 2])
    pool = torch.arange(3).repeat(10)
    idx = matched_nonmembers(members, pool, torch.Generator().manual_seed(0))
    assert sorted(pool[idx].tolist()) == sorted(members.tolist()) and len(idx.unique()) == 6
    with pytest.raises(ValueError, match="class 5"):
        matched_nonmembers(torch.tensor([5]), pool, torch.Generator())
