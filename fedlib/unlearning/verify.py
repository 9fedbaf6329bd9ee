"""Unlearning verification shared by the unlearning chapters (SIFU, plausible deniability, contribution model).

Did a model forget the clients F? No single number says so; a number says something only beside what it is on a
model that certainly remembers F and on one that certainly does not. Every metric here is therefore read against
two **controls** (:class:`Controls`):

* positive control ``remembers``: trained *with* F and never unlearned (e.g. the model before the request);
* negative control ``forgot``: retrained *without* F from another seed (SCRATCH with a different θ^0 and
  different batches), which also gives the noise floor of every distance.

A metric separates when its two control values differ by more than its noise; a scheme's value is then read on
that scale (near ``forgot``: forgotten; near ``remembers``: still there). :func:`verify_with_controls` measures a
set of models and the two controls in one table, one row each.

The metrics (:class:`Verification`):

* **Accuracy** on F's samples and on the remaining clients' samples.
* **Membership attack, calibrated per example** (offline LiRA, Carlini et al. 2022, "Membership inference attacks
  from first principles"): the target's logit-scaled confidence φ(x) = log p_y(x) − log(1 − p_y(x)) on each
  sample (:func:`logit_confidence`) is compared with the same quantity under *reference* models trained without
  F (:func:`calibrated_scores`), so that an example that is hard or easy for every model no longer looks like a
  non-member or a member. Members are F's training samples, non-members held-out samples with the same label
  histogram (:func:`matched_nonmembers`; apply to the non-members whatever the members carry, e.g. a
  watermark, so the two sets differ only in membership). Reported as ROC AUC and as TPR at 1 % and 0.1 % FPR
  (:func:`tpr_at_fpr`), as the field does; with N non-members the smallest FPR that can be resolved is 1/N. The
  uncalibrated loss-threshold attack (Yeom et al. 2018) is reported beside it (``loss_auc``): at small scale it
  has no power, and the controls show it.
* **Backdoor** (Sommer et al. 2020, "Towards probabilistic verification of machine unlearning"): F's data carry a
  :class:`Trigger` patch relabelled to a *target* class (:func:`plant_backdoor`); the attack success rate
  (:func:`attack_success_rate`) is the fraction of triggered held-out inputs of other classes that the model
  classifies as the target. A model that learned the backdoor scores far above a model that never saw it, whose
  rate is the chance level the negative control measures.
* **Distance to retraining with a floor** (:func:`distance`): L2 in parameters, and in output space the mean
  KL(p_retrained ‖ p_model) and the disagreement of the predicted classes on held-out inputs. Two retrainings
  that differ only in their seed are apart too, so :func:`verify_with_controls` divides each distance by the
  negative control's (``relative_*``: 0 = the retrained model itself, 1 = as far as another retraining).

What it cost (rounds, client trainings, stored bytes) is a :class:`Cost`.

Typical use (a chapter with a trained model, its retraining and a retraining at another seed)::

    controls = Controls(remembers=trained, forgot=scratch_other_seed, retrained=scratch)
    rows = verify_with_controls(fed, {"SIFU": sifu_model, "FINE-TUNING": ft_model}, forgotten, remaining,
                                controls, heldout=(x_test, y_test), generator=make_generator(seed, "verify"))
    control_values(rows, "mia_auc")  # (remembers, forgot): the range the schemes are read on
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch
from torch import Tensor
from torch.func import functional_call

from fedlib.fl.batched import BatchedClients
from fedlib.unlearning.stage import Federation

#: the FPRs at which the membership attack's TPR is reported
LOW_FPRS = (0.01, 0.001)
#: row labels of the two controls in :func:`verify_with_controls`
REMEMBERS = "control: remembers"
FORGOT = "control: forgot"


# --- the SIFU paper's watermark (§5.3) -------------------------------------------------------------------------

def watermark_positions(group: int, shape: Sequence[int], count: int = 10, *, seed: int = 42) -> Tensor:
    """The ``count`` array entries (flat indices into one image of ``shape``) of watermark group ``group``,
    drawn from the (seed + group) stream as in the authors' code (one pattern per i mod 10)."""
    numel = 1
    for s in shape:
        numel *= int(s)
    if not 1 <= count <= numel:
        raise ValueError(f"count must be in [1, {numel}], got {count!r}")
    gen = torch.Generator().manual_seed(seed + int(group))
    return torch.randperm(numel, generator=gen)[:count]


def add_watermark(images: Tensor, positions: Tensor) -> Tensor:
    """Images (N, C, H, W) with the entries at ``positions`` set to each image's maximum (the SIFU paper §5.3;
    labels unchanged). Apply to raw pixels, before normalisation."""
    flat = images.reshape(len(images), -1).clone()
    flat[:, positions] = flat.max(1, keepdim=True).values
    return flat.reshape(images.shape)


# --- model outputs ---------------------------------------------------------------------------------------------

@torch.no_grad()
def logits(trainer: BatchedClients, params: Tensor, x: Tensor, *, chunk: int = 2048) -> Tensor:
    """The network's outputs (N, classes) for flat ``params`` on samples ``x`` (N, ...), in evaluation mode
    (dropout off), ``chunk`` samples at a time."""
    if params.numel() != trainer.dim:
        raise ValueError(f"params has {params.numel()} entries, the model has {trainer.dim} parameters")
    parts = torch.split(params.reshape(-1), trainer.sizes)
    weights = {n: p.reshape(s) for n, p, s in zip(trainer.names, parts, trainer.shapes)}
    was_training = trainer.model.training
    trainer.model.eval()
    try:
        return torch.cat([functional_call(trainer.model, weights, (x[i:i + chunk],)) for i in range(0, len(x), chunk)])
    finally:
        trainer.model.train(was_training)


def logit_confidence(trainer: BatchedClients, params: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """φ(x, y) = log p_y − log(1 − p_y) = z_y − logsumexp_{j≠y} z_j per sample, float64 (LiRA's logit scaling
    of the true-class confidence, Carlini et al. 2022 §IV-B; roughly Gaussian across training runs)."""
    z = logits(trainer, params, x).double()
    if len(z) != len(y):
        raise ValueError(f"x and y must hold the same number of samples, got {len(z)} and {len(y)}")
    rows = torch.arange(len(y))
    others = z.clone()
    others[rows, y] = float("-inf")
    return z[rows, y] - torch.logsumexp(others, dim=1)


# --- membership inference --------------------------------------------------------------------------------------

def roc_auc(positives: Tensor, negatives: Tensor) -> float:
    """P(score of a positive > score of a negative), ties counted half: the ROC AUC of "score > threshold means
    positive" (0.5: no separation, 1: perfect)."""
    if len(positives) == 0 or len(negatives) == 0:
        raise ValueError("roc_auc needs at least one positive and one negative score")
    scores = torch.cat([positives.double().reshape(-1), negatives.double().reshape(-1)])
    order = torch.argsort(scores)
    ranks = torch.empty_like(scores)
    ranks[order] = torch.arange(1, len(scores) + 1, dtype=torch.float64)
    _, inverse, counts = torch.unique(scores, return_inverse=True, return_counts=True)
    sums = torch.zeros(len(counts), dtype=torch.float64).index_add_(0, inverse, ranks)
    ranks = (sums / counts)[inverse]  # midranks for ties
    p = len(positives)
    return float((ranks[:p].sum() - p * (p + 1) / 2) / (p * len(negatives)))


def membership_auc(member_losses: Tensor, nonmember_losses: Tensor) -> float:
    """AUC of the loss-threshold membership-inference attack (Yeom et al. 2018): P(loss of a non-member >
    loss of a member), ties counted half. 0.5: the model treats the forgotten samples like unseen ones."""
    if len(member_losses) == 0 or len(nonmember_losses) == 0:
        raise ValueError("membership_auc needs at least one member and one non-member loss")
    return roc_auc(-member_losses, -nonmember_losses)


def tpr_at_fpr(positives: Tensor, negatives: Tensor, fpr: float) -> float:
    """The fraction of positives scoring above the threshold that at most ``fpr`` of the negatives exceed (the
    true-positive rate at that false-positive rate). With N negatives, at most ⌊fpr·N⌋ of them may lie above the
    threshold; for fpr < 1/N the threshold is the largest negative score."""
    if not 0 <= fpr < 1:
        raise ValueError(f"fpr must be in [0, 1), got {fpr!r}")
    if len(positives) == 0 or len(negatives) == 0:
        raise ValueError("tpr_at_fpr needs at least one positive and one negative score")
    neg = torch.sort(negatives.double().reshape(-1), descending=True).values
    threshold = neg[int(fpr * len(neg))]
    return float((positives.double() > threshold).double().mean())


def calibrated_scores(target: Tensor, references: Sequence[Tensor]) -> Tensor:
    """Offline LiRA's per-example score (Carlini et al. 2022, §VI-C): (φ_target(x) − μ_out(x)) / σ_out, with
    μ_out(x) the mean of φ(x) over reference models trained without x, and σ_out their per-example standard
    deviation pooled over the examples (LiRA's "global variance", recommended with few reference models; one
    reference gives σ_out = 1). Large scores: the target is more confident on x than a model that never saw it."""
    if not references:
        raise ValueError("calibrated_scores needs at least one reference model's confidences")
    refs = torch.stack([r.double() for r in references])
    if refs.shape[1:] != target.shape:
        raise ValueError(f"reference confidences {tuple(refs.shape[1:])} do not match the target's "
                         f"{tuple(target.shape)}")
    mu = refs.mean(0)
    sigma = float(refs.var(0, unbiased=True).mean().sqrt()) if len(refs) > 1 else 1.0
    return (target.double() - mu) / max(sigma, 1e-12)


@dataclass
class MembershipAttack:
    """A membership attack's power on one model: AUC and TPR at :data:`LOW_FPRS` of the calibrated score, and
    the AUC of the uncalibrated loss threshold."""

    auc: float
    tpr_at_1pct: float
    tpr_at_01pct: float
    loss_auc: float
    members: int
    nonmembers: int


def membership_attack(trainer: BatchedClients, params: Tensor, members: tuple[Tensor, Tensor],
                      nonmembers: tuple[Tensor, Tensor], references: Sequence[Tensor]) -> MembershipAttack:
    """The calibrated attack of :func:`calibrated_scores` on ``members`` vs ``nonmembers`` ((x, y) each), with
    ``references`` the flat parameters of models trained without the members."""
    x_m, y_m = members
    x_n, y_n = nonmembers
    phi = {k: logit_confidence(trainer, p, torch.cat([x_m, x_n]), torch.cat([y_m, y_n]))
           for k, p in [("target", params)] + [(i, r) for i, r in enumerate(references)]}
    score = calibrated_scores(phi.pop("target"), list(phi.values()))
    m = len(y_m)
    pos, neg = score[:m], score[m:]
    loss_auc = membership_auc(trainer.losses(params, x_m, y_m), trainer.losses(params, x_n, y_n))
    return MembershipAttack(roc_auc(pos, neg), tpr_at_fpr(pos, neg, LOW_FPRS[0]), tpr_at_fpr(pos, neg, LOW_FPRS[1]),
                            loss_auc, m, len(y_n))


def matched_nonmembers(member_labels: Tensor, pool_labels: Tensor, generator: torch.Generator) -> Tensor:
    """Indices into ``pool_labels`` (held-out samples) with the members' label histogram, drawn without
    replacement where the pool allows, so the attack compares like with like."""
    out = []
    for c in torch.unique(member_labels).tolist():
        need = int((member_labels == c).sum())
        pool = torch.nonzero(pool_labels == c).flatten()
        if len(pool) == 0:
            raise ValueError(f"no held-out sample of class {c} to match the members with")
        pick = torch.randperm(len(pool), generator=generator)[:need]
        if need > len(pool):
            pick = torch.cat([pick, torch.randint(len(pool), (need - len(pool),), generator=generator)])
        out.append(pool[pick])
    return torch.cat(out)


# --- backdoor ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Trigger:
    """A BadNets-style trigger (Gu et al. 2017): a ``size`` × ``size`` square in the bottom-right corner set to
    ``value`` (in the data's scale: pass the normalised white), on samples relabelled ``target``."""

    target: int
    size: int = 4
    value: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.target, bool) or not isinstance(self.target, int) or self.target < 0:
            raise ValueError(f"target must be a class index (int >= 0), got {self.target!r}")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"size must be a positive int, got {self.size!r}")


def add_trigger(images: Tensor, trigger: Trigger) -> Tensor:
    """A copy of ``images`` (..., C, H, W) with the trigger's patch stamped in the bottom-right corner."""
    if images.dim() < 3 or min(images.shape[-2:]) < trigger.size:
        raise ValueError(f"images must end in (C, H, W) with H, W >= {trigger.size}, got shape "
                         f"{tuple(images.shape)}")
    out = images.clone()
    out[..., -trigger.size:, -trigger.size:] = trigger.value
    return out


def plant_backdoor(x: Tensor, y: Tensor, clients: Sequence[int], trigger: Trigger, fraction: float, *,
                   generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """Client data (M, n, ...) / (M, n) in which each of ``clients`` has ⌈``fraction`` · n⌉ of its samples
    whose label is not the target stamped with ``trigger`` and relabelled to its target (fewer if it holds fewer
    such samples). Returns the new x, y and the (M, n) mask of poisoned samples."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if not clients:
        raise ValueError("plant_backdoor needs at least one client")
    x, y = x.clone(), y.clone()
    mask = torch.zeros(y.shape, dtype=torch.bool)
    need = math.ceil(fraction * y.shape[1] - 1e-9)
    for c in clients:
        candidates = torch.nonzero(y[c] != trigger.target).flatten()
        pick = candidates[torch.randperm(len(candidates), generator=generator)[:need]]
        x[c, pick] = add_trigger(x[c, pick], trigger)
        y[c, pick] = trigger.target
        mask[c, pick] = True
    return x, y, mask


def attack_success_rate(trainer: BatchedClients, params: Tensor, x: Tensor, y: Tensor, trigger: Trigger) -> float:
    """The fraction of held-out inputs ``x`` whose label ``y`` is not the target that the model classifies as the
    target once the trigger is stamped on them."""
    keep = y != trigger.target
    if not bool(keep.any()):
        raise ValueError(f"no held-out sample outside the target class {trigger.target}")
    pred = logits(trainer, params, add_trigger(x[keep], trigger)).argmax(1)
    return float((pred == trigger.target).double().mean())


# --- distance to retraining --------------------------------------------------------------------------------------

@dataclass
class Distance:
    """How far a model is from the retrained one: parameter L2, mean KL(p_retrained ‖ p_model) and the fraction of
    held-out inputs on which their predicted classes differ."""

    parameters: float
    kl: float
    disagreement: float


def distance(trainer: BatchedClients, params: Tensor, retrained: Tensor, x: Tensor) -> Distance:
    """:class:`Distance` of ``params`` to ``retrained`` on inputs ``x``."""
    log_p = torch.log_softmax(logits(trainer, retrained, x).double(), 1)
    log_q = torch.log_softmax(logits(trainer, params, x).double(), 1)
    kl = float((log_p.exp() * (log_p - log_q)).sum(1).mean())
    disagree = float((log_p.argmax(1) != log_q.argmax(1)).double().mean())
    return Distance(float(torch.linalg.vector_norm((params - retrained).double())), max(kl, 0.0), disagree)


# --- one model, and a table with the controls --------------------------------------------------------------------

@dataclass
class Verification:
    """One model checked against a request to forget F (accuracies and rates in [0, 1]; None: not measured).

    ``distance_to_retrained`` is the parameter L2 distance to the retrained model and ``relative_distance`` that
    distance over ‖retrained‖; the output-space distances and the distances relative to the negative control
    come from :func:`verify_with_controls`.
    """

    accuracy_forgotten: float
    accuracy_remaining: float
    mia_auc: float | None = None
    mia_tpr_at_1pct: float | None = None
    mia_tpr_at_01pct: float | None = None
    loss_auc: float | None = None
    backdoor_success: float | None = None
    distance_to_retrained: float | None = None
    relative_distance: float | None = None
    kl_to_retrained: float | None = None
    disagreement_with_retrained: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def forgotten_samples(fed: Federation, forgotten: Sequence[int], keep: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The forgotten clients' samples (x, y) flattened over clients; ``keep`` (M, n) selects some (e.g. the
    samples that carry no backdoor)."""
    idx = list(forgotten)
    x, y = fed.x[idx], fed.y[idx]
    if keep is None:
        return x.reshape(-1, *x.shape[2:]), y.reshape(-1)
    sel = keep[idx]
    return x[sel], y[sel]


def verify(fed: Federation, params: Tensor, forgotten: Sequence[int], remaining: Sequence[int], *,
           retrained: Tensor | None = None, heldout: tuple[Tensor, Tensor] | None = None,
           members: tuple[Tensor, Tensor] | None = None, nonmembers: tuple[Tensor, Tensor] | None = None,
           references: Sequence[Tensor] = (), trigger: Trigger | None = None,
           generator: torch.Generator | None = None) -> Verification:
    """Check ``params`` after forgetting ``forgotten``.

    Args:
        retrained: the model retrained without them: parameter and (with ``heldout``) output-space distances.
        heldout: held-out (x, y): non-members for the attacks (label-matched to the members, drawn with
            ``generator``, unless ``nonmembers`` is given), inputs for the output distances and the backdoor.
        members, nonmembers: the attacks' sets (default members: every sample of the forgotten clients).
        references: flat models trained without the forgotten clients, for the calibrated attack; without
            references only the loss-threshold attack runs.
        trigger: the backdoor the forgotten clients carry: its success rate on ``heldout``.
    """
    forgotten, remaining = list(forgotten), list(remaining)
    if not forgotten or not remaining:
        raise ValueError("verify needs at least one forgotten and one remaining client")
    out = Verification(float(fed.client_accuracy(params, forgotten).mean()),
                       float(fed.client_accuracy(params, remaining).mean()))
    if references and heldout is None and nonmembers is None:
        raise ValueError("the membership attack needs non-members: pass heldout= or nonmembers=")
    if heldout is not None or nonmembers is not None:
        members = members or forgotten_samples(fed, forgotten)
        if nonmembers is None:
            idx = matched_nonmembers(members[1], heldout[1], generator or torch.Generator().manual_seed(0))
            nonmembers = (heldout[0][idx], heldout[1][idx])
        if references:
            attack = membership_attack(fed.trainer, params, members, nonmembers, references)
            out.mia_auc, out.mia_tpr_at_1pct, out.mia_tpr_at_01pct = (attack.auc, attack.tpr_at_1pct,
                                                                      attack.tpr_at_01pct)
            out.loss_auc = attack.loss_auc
        else:
            out.loss_auc = membership_auc(fed.trainer.losses(params, *members), fed.trainer.losses(params, *nonmembers))
    if trigger is not None:
        if heldout is None:
            raise ValueError("the backdoor success rate needs heldout=")
        out.backdoor_success = attack_success_rate(fed.trainer, params, heldout[0], heldout[1], trigger)
    if retrained is not None:
        out.distance_to_retrained = float(torch.linalg.vector_norm((params - retrained).double()))
        out.relative_distance = out.distance_to_retrained / max(float(torch.linalg.vector_norm(retrained.double())),
                                                                1e-12)
        if heldout is not None:
            d = distance(fed.trainer, params, retrained, heldout[0])
            out.kl_to_retrained, out.disagreement_with_retrained = d.kl, d.disagreement
    return out


@dataclass
class Controls:
    """The models a verification is read against.

    Attributes:
        remembers: positive control, trained with the forgotten clients and never unlearned.
        forgot: negative control, retrained without them from another seed (the distances' floor).
        retrained: the retraining the distances are measured to (e.g. SCRATCH at the chapter's seed).
        references: further models trained without the forgotten clients, for the calibrated attack (which
            always uses ``retrained`` and ``forgot`` too, leaving out the model under test itself).
    """

    remembers: Tensor
    forgot: Tensor
    retrained: Tensor
    references: Sequence[Tensor] = field(default_factory=tuple)

    def out_models(self, params: Tensor) -> list[Tensor]:
        """The reference models for ``params``: every model trained without F except ``params`` itself."""
        return [r for r in (self.retrained, self.forgot, *self.references) if not torch.equal(r, params)]


#: distances divided by the negative control's in :func:`verify_with_controls`
RELATIVE = {"distance_to_retrained": "relative_params", "kl_to_retrained": "relative_kl",
            "disagreement_with_retrained": "relative_disagreement"}


def verify_with_controls(fed: Federation, models: dict[str, Tensor], forgotten: Sequence[int],
                         remaining: Sequence[int], controls: Controls, *, heldout: tuple[Tensor, Tensor],
                         members: tuple[Tensor, Tensor] | None = None,
                         nonmembers: tuple[Tensor, Tensor] | None = None, trigger: Trigger | None = None,
                         generator: torch.Generator | None = None) -> list[dict]:
    """One row per model of ``models`` and per control (labelled :data:`REMEMBERS` and :data:`FORGOT`), each with
    every metric of :func:`verify` and the distances relative to the negative control's (:data:`RELATIVE`;
    the negative control is 1 by construction). The attack's non-members are drawn once, so every row is
    measured on the same samples."""
    members = members or forgotten_samples(fed, list(forgotten))
    if nonmembers is None:
        idx = matched_nonmembers(members[1], heldout[1], generator or torch.Generator().manual_seed(0))
        nonmembers = (heldout[0][idx], heldout[1][idx])
    sizes = {p.numel() for p in (controls.remembers, controls.forgot, controls.retrained, *models.values())}
    if sizes != {fed.trainer.dim}:
        raise ValueError(f"every model must have the network's {fed.trainer.dim} parameters, got sizes "
                         f"{sorted(sizes)}")
    rows = []
    for name, params in [(REMEMBERS, controls.remembers), (FORGOT, controls.forgot), *models.items()]:
        check = verify(fed, params, forgotten, remaining, retrained=controls.retrained, heldout=heldout,
                       members=members, nonmembers=nonmembers, references=controls.out_models(params), trigger=trigger)
        rows.append({"model": name, **check.as_dict()})
    floor = rows[1]
    for row in rows:
        for key, rel in RELATIVE.items():
            row[rel] = row[key] / floor[key] if floor[key] else None
    return rows


def control_values(rows: list[dict], metric: str) -> tuple[float | None, float | None]:
    """(positive control, negative control) values of ``metric`` in rows of :func:`verify_with_controls`."""
    by = {r["model"]: r for r in rows}
    if REMEMBERS not in by or FORGOT not in by:
        raise ValueError(f"rows must hold the controls {REMEMBERS!r} and {FORGOT!r}")
    return by[REMEMBERS].get(metric), by[FORGOT].get(metric)


@dataclass(frozen=True)
class Cost:
    """What serving requests cost: aggregation rounds, client trainings, and server memory for unlearning."""

    rounds: int
    client_trainings: int
    stored_bytes: int
