"""Chapter "SIFU": Fraboni, Vidal, Kameni and Lorenzi, "Sequential Informed Federated Unlearning: Efficient and
Provable Client Unlearning in Federated Optimization" (HAL preprint hal-03910848, 2022).

Reproduces Table 1, Fig. 1 (SIFU's branching history from a real run), Fig. 2 (three sequential requests: rounds
and accuracy on the forgotten clients for SCRATCH, SIFU, FINE-TUNING, FEDACCUM, DP, LAST and FedEraser), Figs. 3-4
(watermarked clients), Fig. 5 (the σ sweep), Fig. 6 (the choice of forgotten set), Theorem 1, Corollary 1 and
Appendix A (exactly, on least squares), and checks every unlearned model with the shared verification
(:mod:`fedlib.unlearning.verify`) against a model that remembers and one that forgot. The paper prints no numbers
for its figures: the ledger (:data:`LEDGER`) states what each figure shows, and each claim is evaluated on every
dataset the chapter runs.

Full mode is split into units, one per figure, dataset and seed (:func:`run`); the paper averages 10 seeds.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from fedlib.data import load_dataset, pixel_source
from fedlib.data.datasets import DATASETS, DatasetIncompleteError, Split
from fedlib.data.partition import partition
from fedlib.experiments.common import fresh_model
from fedlib.fl.batched import BatchedClients, stack_clients
from fedlib.fl.params import get_flat
from fedlib.ledger import Claim
from fedlib.privacy.mechanisms import analytic_gaussian_ratio, gaussian_delta
from fedlib.results import Results
from fedlib.rng import make_generator
from fedlib.units import Units
from fedlib.unlearning import bounds
from fedlib.unlearning.baselines import (
    FedAccum,
    UpdateStore,
    dp,
    dp_sigma,
    dp_training,
    fedaccum,
    federaser,
    fine_tune,
    last,
    scratch,
)
from fedlib.unlearning.sifu import UnlearningRun, c_delta, psi_star, set_psi, sifu
from fedlib.unlearning.stage import Federation, Stage, StageConfig, run_stage
from fedlib.unlearning.verify import (
    Controls,
    Trigger,
    add_watermark,
    forgotten_samples,
    matched_nonmembers,
    plant_backdoor,
    verify_with_controls,
    watermark_positions,
)

#: seed 002 Table 1: dataset -> (K, B, M, m, σ, η, C)
TABLE1 = {"mnist": (10, 100, 100, 10, 0.05, 0.01, 0.5), "fashion_mnist": (5, 20, 100, 10, 0.1, 0.02, 0.5),
          "cifar10": (5, 20, 100, 5, 0.05, 0.01, 0.2), "cifar100": (5, 20, 100, 5, 0.05, 0.02, 0.2),
          "celeba": (10, 20, 100, 20, 0.1, 0.01, 0.5)}
#: what each scheme does in the paper's Fig. 2 (no numbers are printed)
PAPER_F2 = {"SCRATCH": "reference: low accuracy on F_r, most rounds",
            "SIFU": "accuracy ≈ SCRATCH (slightly above), about half of SCRATCH's rounds",
            "SIFU (σ ours)": "(our σ for quick mode)", "FINE-TUNING": "few rounds, high accuracy on F_r",
            "FEDACCUM (prose)": "few rounds, high accuracy on F_r",
            "FEDACCUM (code)": "few rounds, high accuracy on F_r",
            "DP": "few rounds, high accuracy on F_r", "LAST": "never reaches a* within 10,000 rounds",
            "LAST (code)": "never reaches a* within 10,000 rounds", "FEDERASER": "(not in this preprint)"}
#: the negative control retrains at seed + CONTROL_OFFSET (another θ^0, other batches and client samples)
CONTROL_OFFSET = 1000


@dataclass(frozen=True)
class Setup:
    """One dataset's federation and Table-1 hyper-parameters.

    Attributes:
        sigma: Table 1's σ (the paper's); ``sigma_ours``: a second σ for quick mode, chosen after seeing results
            (registered as its own setting of the SIFU claims), or None.
        alpha: client classes ~ Dir(α) (CIFAR: 0.1); None: client i holds class i mod 10 (MNIST, Fashion-MNIST).
        model_args: keyword arguments of the model (CIFAR-100: ``(("fc", 256), ("num_classes", 100))``).
        watermark_target: a* of the watermark experiment (Figs. 3-4).
    """

    dataset: str
    model: str
    num_clients: int = 100
    samples: int = 100
    clients_per_round: int = 10
    local_steps: int = 10
    batch_size: int = 100
    lr: float = 0.01
    sigma: float = 0.05
    sigma_ours: float | None = None
    bound: float = 0.5
    target: float = 0.93
    alpha: float | None = None
    model_args: tuple[tuple[str, Any], ...] = ()
    watermark_target: float = 0.999

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {self.dataset!r}")
        if self.num_clients % 10 or self.num_clients < 20:
            raise ValueError(f"num_clients must be a multiple of 10 and >= 20 (requests are {{10i + k}}), "
                             f"got {self.num_clients!r}")


@dataclass(frozen=True)
class TheoryConfig:
    """Least squares for Theorem 1 / Corollary 1 (M clients of n samples in d dimensions, full participation,
    gradient descent with η = ``lr_factor``/L) and over-parameterised linear regression for Appendix A."""

    clients: int = 5
    samples: int = 10
    dim: int = 20
    rounds: int = 300
    local_steps: tuple[int, ...] = (1, 5)
    lam: float = 0.05
    lr_factor: float = 0.5
    a_samples: int = 10
    a_dim: int = 30
    a_steps: int = 200
    a_finetune: tuple[int, ...] = (10, 30, 100, 300, 1000)
    a_lr: float = 0.01


@dataclass(frozen=True)
class SIFUConfig:
    """The chapter's configuration. ``seeds``: seeds averaged (the paper: 10); ``sweep_seeds``: seeds of Fig. 5
    (the authors' code: 5); ``figures``: which of Figs. 3-6 to run; ``theory``: None skips Theorem 1 / App. A."""

    setups: tuple[Setup, ...]
    epsilon: float = 10.0
    delta: float = 0.01
    momentum: float = 0.9
    min_rounds: int = 50
    max_rounds: int = 10_000
    requests: int = 3
    seeds: int = 1
    sweep_seeds: int = 1
    dp_bounds: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0)
    sigma_sweep: tuple[float, ...] = tuple(round(m * 10.0**e, 6) for e in range(-4, 1) for m in (1, 2, 5))
    f6_classes: tuple[int, ...] = tuple(range(10))
    figures: tuple[str, ...] = ("F3", "F5", "F6")
    watermark_alpha: float = 1.0
    watermark_pixels: int = 10
    backdoor_fraction: float = 0.25
    backdoor_target: int = 0
    backdoor_size: int = 4
    federaser_interval: int = 10
    federaser_ratio: float = 0.5
    theory: TheoryConfig | None = field(default_factory=TheoryConfig)


QUICK = SIFUConfig(
    setups=(Setup("mnist", "logreg", samples=40, batch_size=40, sigma_ours=0.015, watermark_target=0.95),
            Setup("fashion_mnist", "logreg", samples=40, local_steps=5, batch_size=20, lr=0.02, sigma=0.1,
                  sigma_ours=0.01, target=0.8, watermark_target=0.9)),
    min_rounds=20, max_rounds=2000, dp_bounds=(0.5,), sigma_sweep=(1e-4, 1e-3, 1e-2, 3e-2, 0.1),
    f6_classes=(0, 1, 2))
FULL = SIFUConfig(
    setups=(Setup("mnist", "logreg"),
            Setup("fashion_mnist", "cnn_sifu", local_steps=5, batch_size=20, sigma=0.1, lr=0.02, target=0.9),
            Setup("cifar10", "cnn_sifu_cifar", clients_per_round=5, local_steps=5, batch_size=20, bound=0.2,
                  target=0.9, alpha=0.1),
            Setup("cifar100", "cnn_sifu_cifar", clients_per_round=5, local_steps=5, batch_size=20, lr=0.02,
                  bound=0.2, target=0.9, alpha=0.1, model_args=(("fc", 256), ("num_classes", 100)),
                  watermark_target=0.99)),
    seeds=10, sweep_seeds=5)

#: Deliberate defects for the falsification test: each must flip the central claim's verdict.
DEFECTS = {"no_unlearning": "SIFU serves every request from the current final model without noise (rollback and "
                            "perturbation skipped: FINE-TUNING under another name)"}

#: The smallest configuration whose central claim the defect test flips (seconds).
TINY = SIFUConfig(
    setups=(Setup("mnist", "logreg", num_clients=20, samples=20, clients_per_round=5, batch_size=20, target=0.8),
            Setup("fashion_mnist", "logreg", num_clients=20, samples=20, clients_per_round=5, local_steps=5,
                  batch_size=20, lr=0.02, sigma=0.1, target=0.7)),
    min_rounds=5, max_rounds=300, requests=1, dp_bounds=(0.5,), figures=(), theory=None)


# --- the ledger ------------------------------------------------------------------------------------------------

QUICK_SETS = ("mnist", "fashion_mnist")
CIFAR = ("cifar10", "cifar100")
READINGS = ("FEDACCUM (prose)", "FEDACCUM (code)")
LAST_READINGS = ("LAST", "LAST (code)")
FIGS = ("Fig. 2", "Figs. 3-4")
THEORY = ("K = 1", "K = 5")


def _with(datasets: Sequence[str], labels: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{d}, {x}" for d in datasets for x in labels)


def _ours(datasets: Sequence[str]) -> tuple[str, ...]:
    return _with(datasets, ("σ ours",))


_FEDACCUM_NOTE = ("FEDACCUM's pseudo-code (App. D) is missing from the preprint: 'prose' accumulates the "
                  "non-forgotten clients' updates from θ^0 as the text describes (it retrains along the original "
                  "trajectory), 'code' is the authors' code (the mean of the last round's non-forgotten local "
                  "models); both readings are registered")
_BACKDOOR_NOTE = ("ours: a quarter of each forgotten client's samples carry a white corner patch relabelled to one "
                  "class, besides the paper's label-preserving watermark")
_SIGMA_NOTE = ("the paper's Table-1 σ; 'σ ours' is a smaller σ chosen for quick mode after seeing results (at "
               "quick scale Ψ stays below Ψ*(Table-1 σ) during training), registered as an extra setting")


def _claims(claim: Claim, cifar_settings: tuple[str, ...]) -> list[Claim]:
    """``claim`` on the quick datasets, and the same statement on CIFAR-10/100 in full mode."""
    return [claim, dataclasses.replace(claim, id=f"{claim.id}_cifar", settings=cifar_settings, modes=("full",),
                                       central=False)]


LEDGER: list[Claim] = [
    *_claims(Claim(
        "baselines_remember", "For every dataset and unlearning index, FINE-TUNING, FEDACCUM and DP provide similar "
        "model accuracy for the unlearned clients, significantly higher than SCRATCH, the unlearning standard",
        "§5.2, Fig. 2", "min over FINE-TUNING, FEDACCUM, DP of mean_r acc(F_r) − SCRATCH's", ">",
        settings=_with(QUICK_SETS, READINGS), note=_FEDACCUM_NOTE), _with(CIFAR, READINGS)),
    *_claims(Claim(
        "baselines_similar", "FINE-TUNING, FEDACCUM and DP provide similar model accuracy for the unlearned clients",
        "§5.2, Fig. 2", "max − min over the three of mean_r acc(F_r)", "≈", settings=_with(QUICK_SETS, READINGS),
        note=_FEDACCUM_NOTE), _with(CIFAR, READINGS)),
    *_claims(Claim(
        "baselines_fast", "Unlearning with FINE-TUNING, FEDACCUM and DP results in significantly fewer aggregation "
        "rounds than SCRATCH", "§5.2, Fig. 2", "1 − max over the three of their total rounds / SCRATCH's", ">",
        unit="relative", settings=_with(QUICK_SETS, READINGS), note=_FEDACCUM_NOTE), _with(CIFAR, READINGS)),
    *_claims(Claim(
        "sifu_below_finetuning", "SIFU's accuracy on the unlearned clients is low, like SCRATCH's, while "
        "FINE-TUNING's is significantly higher", "§5.2, Fig. 2",
        "mean_r acc(F_r): FINE-TUNING − SIFU (Table-1 σ)", ">", settings=QUICK_SETS, central=True), CIFAR),
    Claim("sifu_below_finetuning_sigma_ours", "(the same, at our quick-mode σ)", "§5.2, Fig. 2",
          "mean_r acc(F_r): FINE-TUNING − SIFU (σ ours)", ">", settings=_ours(QUICK_SETS), modes=("quick",),
          note=_SIGMA_NOTE),
    *_claims(Claim(
        "sifu_close_to_scratch", "SIFU and SCRATCH lead to similar unlearning results, quantified by low accuracy on "
        "the unlearned clients (perfect overlap for Fashion-MNIST)", "§5.2, Fig. 2",
        "mean_r acc(F_r): SIFU − SCRATCH", "≈", settings=QUICK_SETS + _ours(QUICK_SETS), note=_SIGMA_NOTE), CIFAR),
    *_claims(Claim(
        "sifu_above_scratch", "The model accuracy of SIFU is slightly higher than SCRATCH's (except on "
        "Fashion-MNIST, where they overlap)", "§5.2, Fig. 2", "mean_r acc(F_r): SIFU − SCRATCH", ">",
        settings=("mnist", "mnist, σ ours"), note=_SIGMA_NOTE), CIFAR),
    *_claims(Claim(
        "sifu_fewer_rounds", "SIFU unlearns the clients in fewer aggregation rounds than SCRATCH", "§5.2, Fig. 2",
        "1 − SIFU's total rounds / SCRATCH's (all requests)", ">", unit="relative",
        settings=QUICK_SETS + _ours(QUICK_SETS), note=_SIGMA_NOTE), CIFAR),
    Claim("sifu_half_rounds", "SIFU unlearns the clients in roughly half the aggregation rounds of SCRATCH",
          "§5.2, Fig. 2", "SIFU's total rounds / SCRATCH's − 0.5", "≈", unit="relative",
          settings=QUICK_SETS + CIFAR, modes=("full",), note="a number of the paper's configuration: full mode"),
    Claim("only_sifu_forgets_fast", "SIFU leads to more efficient unlearning than retraining and state-of-the-art "
          "federated unlearning, which are fast but keep the unlearned clients", "abstract, §5.2",
          "total rounds of the fastest of SCRATCH and the schemes that forget as well as SIFU (mean acc(F_r) ≤ "
          "SIFU's + 1 pp among FINE-TUNING, FEDACCUM, DP, LAST) / SIFU's − 1", ">", unit="relative",
          settings=_with(QUICK_SETS + _ours(QUICK_SETS), READINGS),
          note=_FEDACCUM_NOTE + "; " + _SIGMA_NOTE + "; FedEraser is not in the preprint and not counted"),
    *_claims(Claim(
        "last_never_reaches", "When unlearning with LAST, the retrained model always converged to a local optimum "
        "with accuracy below the target after 10,000 aggregation rounds", "§5.2",
        "fraction of LAST's requests that reached a* within N_max", "≈", unit="probability",
        settings=_with(QUICK_SETS, LAST_READINGS),
        note="the preprint does not give LAST's noise: 'LAST' applies Theorem 2 to the forgotten clients' Ψ at the "
             "final round, 'LAST (code)' to the largest Ψ of any client and round (the authors' code); quick mode "
             "stops at N_max = 2,000"), _with(CIFAR, LAST_READINGS)),
    Claim("dp_bound_table1", "The DP baseline's clipping bound C, chosen as the one reaching the target fastest, is "
          "Table 1's", "App. D, Table 1", "chosen C (most frequent over seeds) / Table 1's C − 1", "≈",
          unit="relative", settings=QUICK_SETS + CIFAR, modes=("full",),
          note="a number of the paper's configuration; our grid is 0.1, 0.2, 0.5, 1"),
    *_claims(Claim(
        "wm_sifu_close_to_scratch", "On watermarked clients, SIFU and SCRATCH have similar accuracies on the "
        "unlearned clients", "§5.3, Figs. 3-4", "mean_r acc(F_r's watermarked samples): SIFU − SCRATCH", "≈",
        settings=QUICK_SETS + _ours(QUICK_SETS)), CIFAR),
    *_claims(Claim(
        "wm_sifu_fewer_rounds", "On watermarked clients, SIFU unlearns in significantly fewer aggregation rounds "
        "than SCRATCH", "§5.3, Figs. 3-4", "1 − SIFU's total rounds / SCRATCH's", ">", unit="relative",
        settings=QUICK_SETS + _ours(QUICK_SETS)), CIFAR),
    *_claims(Claim(
        "wm_baselines_remember", "On watermarked clients the conclusions of Fig. 2 hold: FINE-TUNING, FEDACCUM and "
        "DP keep a higher accuracy on the unlearned clients than SCRATCH", "§5.3, Figs. 3-4",
        "min over FINE-TUNING, FEDACCUM, DP of mean_r acc(F_r's watermarked samples) − SCRATCH's", ">",
        settings=_with(QUICK_SETS, READINGS), note=_FEDACCUM_NOTE), _with(CIFAR, READINGS)),
    *_claims(Claim(
        "wm_sifu_forgets_backdoor", "SIFU's unlearning of the watermarked clients is effective, like SCRATCH's (ours: "
        "measured by a backdoor the forgotten clients carry, after Sommer et al. 2020)", "§5.3",
        "backdoor success after the last request: SIFU − SCRATCH", "≈", unit="probability", settings=QUICK_SETS + _ours(QUICK_SETS),
        note=_BACKDOOR_NOTE), CIFAR),
    *_claims(Claim(
        "wm_finetuning_keeps_backdoor", "FINE-TUNING keeps what the unlearned clients taught (ours: the backdoor they "
        "carry)", "§5.3", "backdoor success after the last request: FINE-TUNING − SCRATCH", ">", unit="probability",
        settings=QUICK_SETS, note=_BACKDOOR_NOTE), CIFAR),
    *_claims(Claim(
        "verify_backdoor_separates", "(ours) The backdoor separates a model that remembers the forgotten clients from "
        "one retrained without them", "verification with controls",
        "backdoor success: trained with F, no unlearning − retrained without F at another seed", ">",
        unit="probability", settings=QUICK_SETS, note=_BACKDOOR_NOTE), CIFAR),
    *_claims(Claim(
        "verify_mia_separates", "(ours) The calibrated membership attack separates a model that remembers the "
        "forgotten clients from one retrained without them", "verification with controls",
        "attack AUC: trained with F − retrained without F at another seed", ">", unit="auc",
        settings=_with(QUICK_SETS, FIGS)), _with(CIFAR, FIGS)),
    *_claims(Claim(
        "verify_output_separates", "(ours) The output-space distance to retraining separates a model that remembers "
        "from another retraining", "verification with controls",
        "KL to SCRATCH: model trained with F / retraining at another seed − 1", ">", unit="relative",
        settings=_with(QUICK_SETS, FIGS)), _with(CIFAR, FIGS)),
    *_claims(Claim(
        "sifu_output_like_retraining", "SIFU's final model is as close to SCRATCH's as another retraining (ours: in "
        "output space)", "§5.2", "KL to SCRATCH: SIFU / retraining at another seed − 1", "≈", unit="relative",
        settings=QUICK_SETS), CIFAR),
    *_claims(Claim(
        "f5_small_sigma_restarts_at_start", "With a small σ, SIFU applies the unlearning to the initial model θ^0",
        "App. D, Fig. 5", "restart round T at the smallest σ of the sweep", "≈", unit="count", settings=QUICK_SETS),
        CIFAR),
    *_claims(Claim(
        "f5_small_sigma_like_scratch", "With a small σ, SIFU behaves identically to SCRATCH (accuracy)",
        "App. D, Fig. 5", "acc(F) at the smallest σ − SCRATCH's", "≈", settings=QUICK_SETS), CIFAR),
    *_claims(Claim(
        "f5_small_sigma_like_scratch_rounds", "With a small σ, SIFU behaves identically to SCRATCH (rounds)",
        "App. D, Fig. 5", "rounds at the smallest σ / SCRATCH's − 1", "≈", unit="relative", settings=QUICK_SETS),
        CIFAR),
    *_claims(Claim(
        "f5_large_sigma_final_model", "With a large σ, SIFU applies the unlearning to the final global model",
        "App. D, Fig. 5", "T − N_0 at the largest σ", "≈", unit="count", settings=QUICK_SETS), CIFAR),
    *_claims(Claim(
        "f5_large_sigma_like_last_rounds", "With a large σ, SIFU performs like LAST: fewer rounds than SCRATCH",
        "App. D, Fig. 5", "1 − rounds at the largest σ / SCRATCH's", ">", unit="relative", settings=QUICK_SETS),
        CIFAR),
    *_claims(Claim(
        "f5_large_sigma_like_last_accuracy", "With a large σ, SIFU performs like LAST: a higher accuracy on the "
        "unlearned clients than SCRATCH", "App. D, Fig. 5", "acc(F) at the largest σ − SCRATCH's", ">",
        settings=QUICK_SETS), CIFAR),
    *_claims(Claim(
        "f5_restart_monotone", "The restart round T grows with σ (Ψ* = εσ/c_δ)", "eqs. 13-14, Fig. 5",
        "number of decreases of T along the σ sweep", "≈", unit="count", settings=QUICK_SETS, kind="fact"), CIFAR),
    *_claims(Claim(
        "f6_sifu_below_finetuning", "The conclusions of Fig. 2 hold for every forgotten set: SIFU below FINE-TUNING",
        "App. D, Fig. 6", "min over forgotten classes k of acc(F): FINE-TUNING − SIFU", ">", settings=QUICK_SETS),
        CIFAR),
    *_claims(Claim(
        "f6_sifu_close_to_scratch", "The conclusions of Fig. 2 hold for every forgotten set: SIFU ≈ SCRATCH",
        "App. D, Fig. 6", "max over k of |acc(F): SIFU − SCRATCH|", "≈", settings=QUICK_SETS), CIFAR),
    *_claims(Claim(
        "f6_sifu_fewer_rounds", "The conclusions of Fig. 2 hold for every forgotten set: SIFU needs fewer rounds "
        "than SCRATCH", "App. D, Fig. 6", "min over k of 1 − SIFU's rounds / SCRATCH's", ">", unit="relative",
        settings=QUICK_SETS), CIFAR),
    *_claims(Claim(
        "theorem3_invariant", "SIFU unlearns every client of every past request: each stays below Ψ* at every node "
        "of the oracle", "Theorem 3", "forgotten clients above Ψ* at a node of the final oracle", "≈", unit="count",
        settings=QUICK_SETS, kind="fact"), CIFAR),
    Claim("theorem1_bound", "Under Assumption 1, the model sensitivity is bounded by the bounded sensitivity: "
          "α(n, c) ≤ Ψ(n, c)", "Theorem 1, eq. 10", "(n, c) with α > Ψ, n ≤ 300, on least squares", "≈",
          unit="count", settings=THEORY,
          note="per-client least squares (Assumption 1 holds exactly), full participation, gradient descent, "
               "η = 0.5/L"),
    Claim("corollary1_bound", "With L2 regularisation λ and μ-strong convexity, α(n, c) is bounded by the decayed "
          "Ψ of eq. 11", "Corollary 1, eq. 11", "(n, c) with α > Ψ_dec, n ≤ 300", "≈", unit="count",
          settings=THEORY),
    Claim("corollary1_tighter", "Corollary 1's bound is tighter than Theorem 1's", "§3.2, Corollary 1",
          "1 − Ψ_dec(N) / Ψ(N), mean over c", ">", unit="relative", settings=THEORY),
    Claim("corollary1_converges", "Since λ + μ > 0, the bounded sensitivity converges (while Ψ of eq. 8 keeps "
          "growing)", "§3.2", "1 − growth of Ψ_dec / growth of Ψ over the last half of the rounds", ">",
          unit="relative", settings=THEORY),
    Claim("identical_clients_zero", "Clients with the same data have null bounded sensitivity", "§3.2",
          "max Ψ over rounds and clients, identical least-squares clients", "≈", unit="relative", kind="fact"),
    Claim("appendix_a_finetuning_differs", "No amount of fine-tuning on θ^N leads to the model retrained from θ^0 "
          "without the removed sample", "App. A", "‖φ^Ñ − θ_{−1}^Ñ‖ / ‖θ^N − θ_{−1}^Ñ‖ at the largest Ñ: the fraction "
          "of the distance to the retrained model that fine-tuning leaves", ">", unit="relative",
          note="over-parameterised linear regression, gradient descent"),
    Claim("eq24_as_printed", "φ^Ñ − θ_{−1}^Ñ = A(X_{−1}, Ñ)A(X, N)θ^0 + A(X_{−1}, Ñ)B(X, y, N)", "App. A, eq. 24",
          "‖eq. 24 as printed − the measured difference‖ / ‖measured‖", "≈", unit="relative",
          note="the printed formula omits −θ^0 and the η before B"),
    Claim("eq24_corrected", "(ours) φ^Ñ − θ_{−1}^Ñ = A(X_{−1}, Ñ)(θ^N − θ^0)", "App. A, eq. 24 corrected",
          "‖corrected − measured‖ / ‖measured‖", "≈", unit="relative", kind="fact"),
    Claim("theorem2_delta", "Noise σ ≥ c_δ Ψ/ε gives (ε, δ)-unlearning, used with ε = 10, δ = 0.01", "Theorem 2, §5",
          "exact δ of the Gaussian mechanism at Δ/σ = ε/c_δ, ε = 10 (Balle & Wang 2018) / 0.01 − 1", "≈",
          unit="relative", note="Theorem 2 rests on Dwork & Roth's Thm A.1, proved for ε < 1"),
]
CLAIMS = {c.id: c for c in LEDGER}


# --- data and federations ----------------------------------------------------------------------------------------

@dataclass
class Data:
    """One dataset's raw splits (pixels in [0, 1]) and which test images are exact (CIFAR-10's JPEG export)."""

    train: Split
    test: Split
    exact: Tensor


def load(setup: Setup, mode: str) -> Data:
    """The dataset as the mode needs it (quick: the fixed quick subsets; full: the official splits, or
    :class:`~fedlib.data.datasets.DatasetIncompleteError`)."""
    train = load_dataset(setup.dataset, train=True, normalize=False, subset=mode)
    test = load_dataset(setup.dataset, train=False, normalize=False, subset=mode)
    exact = pixel_source(setup.dataset, subset=mode) == 1 if setup.dataset == "cifar10" else torch.ones(
        len(test.y), dtype=torch.bool)
    return Data(train, test, exact)


def _normalise(x: Tensor, dataset: str) -> Tensor:
    info = DATASETS[dataset]
    shape = (1,) * (x.dim() - 3) + (-1, 1, 1)
    return (x - torch.tensor(info.mean).view(shape)) / torch.tensor(info.std).view(shape)


def _watermarked(x: Tensor, groups: Sequence[int], pixels: int) -> Tensor:
    """Each image (N, C, H, W) with its group's pattern (raw pixels)."""
    out = x.clone()
    for g in sorted(set(groups)):
        sel = torch.tensor([k == g for k in groups])
        out[sel] = add_watermark(x[sel], watermark_positions(g, x.shape[1:], pixels))
    return out


def _model(setup: Setup, seed: int):
    return fresh_model(setup.model, seed, **dict(setup.model_args))


def federation(setup: Setup, data: Data, seed: int, *, alpha: float | None = None, watermark: int = 0
               ) -> Federation:
    """M × n disjoint real samples (client i: class i mod 10, or Dir(α) classes), normalised; with ``watermark``
    pixels, client i's samples carry group (i mod 10)'s pattern (seed 002 §5.3, applied to raw pixels)."""
    clients = partition("fixed_size", data.train.y, setup.num_clients, samples_per_client=setup.samples,
                        alpha=alpha, generator=make_generator(0, "partition", setup.dataset, str(alpha)))
    x, y = stack_clients(data.train, clients)
    if watermark:
        x = torch.stack([_watermarked(x[i], [i % 10] * x.shape[1], watermark) for i in range(len(x))])
    return Federation(BatchedClients(_model(setup, seed)), _normalise(x, setup.dataset), y, seed)


def stage_config(setup: Setup, cfg: SIFUConfig, target: float | None = None) -> StageConfig:
    return StageConfig(setup.clients_per_round, setup.local_steps, setup.batch_size, setup.lr,
                       target or setup.target, momentum=cfg.momentum, min_rounds=cfg.min_rounds,
                       max_rounds=cfg.max_rounds)


def requests_of(setup: Setup, count: int, first: int = 0) -> list[list[int]]:
    """W_r = {10i + k}: the clients of class k in the class partition (the authors' code, spec card §4)."""
    return [[10 * i + k for i in range(setup.num_clients // 10)] for k in range(first, first + count)]


def _sigmas(setup: Setup, cfg: SIFUConfig) -> list[float]:
    """Every σ whose Ψ* the training tracks (Table 1's, ours, and Fig. 5's sweep)."""
    extra = {setup.sigma} | ({setup.sigma_ours} if setup.sigma_ours else set())
    return sorted(set(cfg.sigma_sweep) | extra) if "F5" in cfg.figures else sorted(extra)


@dataclass
class Trained:
    """A federation's training stage with what observed it (FedAccum's accumulators, FedEraser's store), shared by
    the units of one dataset and seed, and the schemes already served on it (a schedule's first requests serve a
    shorter schedule with the same first requests)."""

    setup: Setup
    fed: Federation
    test: Split
    scfg: StageConfig
    training: Stage
    accum: FedAccum
    accum_code: FedAccum
    store: UpdateStore
    runs: dict[tuple[str, tuple[tuple[int, ...], ...]], UnlearningRun] = field(default_factory=dict)

    def serve(self, name: str, requests: Sequence[Sequence[int]], compute: Callable[[], UnlearningRun]
              ) -> UnlearningRun:
        """Scheme ``name`` on ``requests``: computed once, or the first requests of a longer schedule."""
        key = (name, tuple(tuple(w) for w in requests))
        if key not in self.runs:
            longer = [r for (n, reqs), r in self.runs.items() if n == name and reqs[:len(key[1])] == key[1]]
            if longer:
                run = longer[0]
                self.runs[key] = UnlearningRun(run.scheme, run.training, run.requests[:len(key[1])])
            else:
                self.runs[key] = compute()
        return self.runs[key]


def train(cfg: SIFUConfig, setup: Setup, data: Data, seed: int, *, alpha: float | None = None, watermark: int = 0,
          target: float | None = None, federation_: Federation | None = None, progress: bool = False) -> Trained:
    """The training stage (stage 0) on every client, tracking Ψ* of every σ the figures use."""
    fed = federation_ or federation(setup, data, seed, alpha=alpha, watermark=watermark)
    scfg = stage_config(setup, cfg, target)
    reqs = requests_of(setup, cfg.requests)
    init = get_flat(fed.trainer.model)
    accum, accum_code = FedAccum(init, reqs), FedAccum(init, reqs, mode="code")
    store = UpdateStore(cfg.federaser_interval)
    thresholds = [psi_star(s, cfg.epsilon, cfg.delta) for s in _sigmas(setup, cfg)]
    training = run_stage(fed, scfg, init, range(setup.num_clients), index=0, thresholds=thresholds,
                         observers=[accum, accum_code, store], progress=progress)
    test = Split(_normalise(data.test.x, setup.dataset), data.test.y, data.test.num_classes)
    return Trained(setup, fed, test, scfg, training, accum, accum_code, store)


class Cache:
    """The training stages of the dataset and seed being worked on (one at a time), so that the units of Figs. 2,
    5 and 6 train once per run; a unit read back from its file trains nothing."""

    def __init__(self, cfg: SIFUConfig, data: dict[str, Data], base_seed: int, progress: bool) -> None:
        self.cfg, self.data, self.base_seed, self.progress = cfg, data, base_seed, progress
        self.key: tuple[str, int] | None = None
        self.trained: Trained | None = None

    def __call__(self, setup: Setup, seed: int) -> Trained:
        if self.key != (setup.dataset, seed):
            self.key, self.trained = (setup.dataset, seed), train(self.cfg, setup, self.data[setup.dataset], seed,
                                                                   alpha=setup.alpha, progress=self.progress)
        return self.trained


# --- the schemes ---------------------------------------------------------------------------------------------------

def _sifu(t: Trained, cfg: SIFUConfig, requests: list[list[int]], sigma: float, defect: str | None) -> UnlearningRun:
    """SIFU at ``sigma`` (with the ``no_unlearning`` defect: restart from the final model, no noise)."""
    if defect == "no_unlearning":
        return t.serve(f"SIFU σ={sigma} defect", requests, lambda: sifu(
            t.fed, t.scfg, t.training, requests, sigma=math.inf, epsilon=cfg.epsilon, delta=cfg.delta, noise=False))
    return t.serve(f"SIFU σ={sigma}", requests, lambda: sifu(t.fed, t.scfg, t.training, requests, sigma=sigma,
                                                              epsilon=cfg.epsilon, delta=cfg.delta))


def _scratch(t: Trained, requests: list[list[int]]) -> UnlearningRun:
    return t.serve("SCRATCH", requests, lambda: scratch(t.fed, t.scfg, t.training, requests))


def _fine_tune(t: Trained, requests: list[list[int]]) -> UnlearningRun:
    return t.serve("FINE-TUNING", requests, lambda: fine_tune(t.fed, t.scfg, t.training, requests))


def _dp_sweep(t: Trained, cfg: SIFUConfig, bounds_: Sequence[float]) -> tuple[list[dict], float, Stage]:
    """The DP baseline's training for each clipping bound C; the fastest to reach a* is kept (seed 002 App. D)."""
    m = t.setup.num_clients
    trained = [(b, dp_training(t.fed, t.scfg, t.training.start, range(m), bound=b,
                               sigma=dp_sigma(b, m, cfg.epsilon, 1 / m))) for b in bounds_]
    _, bound, stage = min(((s.rounds if s.reached_target else math.inf), b, s) for b, s in trained)
    rows = [{"C": b, "sigma_dp": dp_sigma(b, m, cfg.epsilon, 1 / m), "rounds": s.rounds,
             "reached_target": s.reached_target, "chosen": b == bound} for b, s in trained]
    return rows, bound, stage


def _schemes(t: Trained, cfg: SIFUConfig, requests: list[list[int]], *, dp_bounds: Sequence[float],
             defect: str | None) -> tuple[dict[str, UnlearningRun], list[dict], dict[str, int]]:
    """Every scheme of Fig. 2 on ``requests``; also the DP sweep's rows and each scheme's extra stored bytes."""
    s, eps, delta, fed = t.setup, cfg.epsilon, cfg.delta, t.fed
    runs = {"SCRATCH": _scratch(t, requests), "SIFU": _sifu(t, cfg, requests, s.sigma, defect)}
    if s.sigma_ours:
        runs["SIFU (σ ours)"] = _sifu(t, cfg, requests, s.sigma_ours, defect)
    runs["FINE-TUNING"] = _fine_tune(t, requests)
    runs["FEDACCUM (prose)"] = fedaccum(fed, t.scfg, t.training, requests, t.accum)
    runs["FEDACCUM (code)"] = fedaccum(fed, t.scfg, t.training, requests, t.accum_code)
    sweep, bound, dp_train = _dp_sweep(t, cfg, dp_bounds)
    runs["DP"] = dp(fed, t.scfg, dp_train, requests, bound=bound, sigma=dp_sigma(bound, s.num_clients, eps,
                                                                                 1 / s.num_clients))
    runs["LAST"] = last(fed, t.scfg, t.training, requests, epsilon=eps, delta=delta)
    runs["LAST (code)"] = last(fed, t.scfg, t.training, requests, epsilon=eps, delta=delta, sensitivity="all")
    runs["FEDERASER"] = federaser(fed, t.scfg, t.training, requests, t.store, calibration_ratio=cfg.federaser_ratio)
    for name, run in runs.items():
        run.scheme = name
    extra = {"FEDACCUM (prose)": t.accum.stored_bytes, "FEDACCUM (code)": t.accum_code.stored_bytes,
             "FEDERASER": t.store.stored_bytes}
    return runs, sweep, extra


def _accuracy(fed: Federation, params: Tensor, clients: Sequence[int], keep: Tensor | None) -> float:
    """Mean accuracy on the clients' samples (only the ``keep`` (M, n) ones, e.g. those without a backdoor)."""
    if keep is None:
        return float(fed.client_accuracy(params, clients).mean())
    x, y = forgotten_samples(fed, clients, keep)
    return float(fed.trainer.accuracy(params, x[None], y[None])[0])


def _rows(run: UnlearningRun, fed: Federation, *, extra_bytes: int = 0, keep: Tensor | None = None) -> list[dict]:
    """One row per request: rounds, restart, accuracy on all forgotten clients F_r and on the remaining ones."""
    rows, forgotten, cumulative = [], set(), 0
    stored = run.training.stored_bytes + sum(s.stored_bytes for s in run.stages[1:]) + extra_bytes
    for r, req in enumerate(run.requests, 1):
        forgotten |= set(req.forgotten)
        cumulative += req.rounds
        rows.append({"scheme": run.scheme, "request": r, "paper": PAPER_F2.get(run.scheme, ""), "ours": req.rounds,
                     "total_rounds": cumulative, "reached_target": req.stage.reached_target,
                     "restart": None if req.restart is None else f"({req.branch}, {req.restart})",
                     "noise_std": req.noise, "acc_forgotten": _accuracy(fed, req.stage.params, sorted(forgotten), keep),
                     "acc_remaining": float(fed.client_accuracy(req.stage.params, req.stage.members).mean()),
                     "client_trainings": req.stage.client_updates, "stored_MB": stored / 2**20})
    return rows


def control_model(t: Trained, members: Sequence[int], index: int) -> Tensor:
    """The negative control: retrained on ``members`` from another seed's θ^0, with another seed's batches and
    client samples (the same data)."""
    seed = t.fed.seed + CONTROL_OFFSET
    fed = dataclasses.replace(t.fed, seed=seed)
    return run_stage(fed, t.scfg, get_flat(_model(t.setup, seed)), members, index=index).params


def _verification(t: Trained, runs: dict[str, UnlearningRun], *, nonmembers: tuple[Tensor, Tensor] | None = None,
                  members: tuple[Tensor, Tensor] | None = None, trigger: Trigger | None = None) -> list[dict]:
    """Every scheme's model after the last request beside the controls (trained with F; retrained without F at
    another seed), the distances measured to SCRATCH's model; held-out data: the exact test images."""
    last_req = runs["SCRATCH"].requests[-1]
    remaining = list(last_req.stage.members)
    forgotten = sorted(set(t.training.members) - set(remaining))
    controls = Controls(remembers=t.training.params, forgot=control_model(t, remaining, len(runs["SCRATCH"].requests)),
                        retrained=last_req.stage.params)
    exact = t.test
    return verify_with_controls(t.fed, {n: r.params for n, r in runs.items()}, forgotten, remaining, controls,
                                heldout=(exact.x, exact.y), members=members, nonmembers=nonmembers, trigger=trigger,
                                generator=make_generator(t.fed.seed, "verify", t.setup.dataset))


def _invariant(run: UnlearningRun, threshold: float) -> int:
    """Theorem 3's invariant on the final oracle: forgotten clients above Ψ* at a node of a branch they were on."""
    forgotten = [j for req in run.requests for j in req.forgotten]
    return sum(int(float(run.stages[s].psi[n, j]) > threshold) for s, n in run.oracle for j in forgotten
               if j in run.stages[s].members)


def _figure1(run: UnlearningRun, threshold: float) -> dict:
    """Ψ_s(n, W_r) of every request on every branch of SIFU's history, and the oracle (Fig. 1 from a real run)."""
    psi = {f"branch {s}/W_{r}": set_psi(stage, req.forgotten).tolist() for s, stage in enumerate(run.stages)
           for r, req in enumerate(run.requests, 1) if s < r and set(req.forgotten) <= set(stage.members)}
    rows = [{"request": r, "paper": "ζ_r, T_r by eqs. 17-18", "ours": f"(ζ = {q.branch}, T = {q.restart})",
             "branch_rounds": q.stage.rounds, "psi_star": threshold} for r, q in enumerate(run.requests, 1)]
    return {"psi": psi, "rows": rows + [{"request": "O(R)", "paper": "eq. 19", "ours": str(run.oracle)}]}


# --- the units -----------------------------------------------------------------------------------------------------

def f2_unit(t: Trained, cfg: SIFUConfig, *, defect: str | None, figure1: bool) -> dict:
    """Fig. 2 on one dataset and seed: every scheme on the sequential requests, the DP sweep, the verification of
    the final models with the controls, Theorem 3's invariant, and (``figure1``) SIFU's history."""
    reqs = requests_of(t.setup, cfg.requests)
    runs, sweep, extra = _schemes(t, cfg, reqs, dp_bounds=cfg.dp_bounds, defect=defect)
    rows = [row for name, run in runs.items() for row in _rows(run, t.fed, extra_bytes=extra.get(name, 0))]
    sigma1 = t.setup.sigma_ours or t.setup.sigma
    out = {"rows": rows, "dp_sweep": sweep, "verification": _verification(t, runs), "N_0": t.training.rounds,
           "invariant": sum(_invariant(runs[n], psi_star(s, cfg.epsilon, cfg.delta))
                            for n, s in (("SIFU", t.setup.sigma), ("SIFU (σ ours)", t.setup.sigma_ours)) if n in runs)}
    if figure1:
        out["F1"] = _figure1(runs["SIFU (σ ours)" if t.setup.sigma_ours else "SIFU"],
                             psi_star(sigma1, cfg.epsilon, cfg.delta))
    return out


def f5_unit(t: Trained, cfg: SIFUConfig, *, defect: str | None) -> dict:
    """Fig. 5: one request (the class-0 clients) served by SIFU for every σ of the sweep, beside SCRATCH."""
    w = requests_of(t.setup, 1)
    base = _scratch(t, w).requests[0]
    rows = [{"sigma": 0.0, "scheme": "SCRATCH", "paper": "reference", "ours": base.rounds, "T": 0,
             "acc_forgotten": float(t.fed.client_accuracy(base.stage.params, w[0]).mean())}]
    for s in sorted(cfg.sigma_sweep):
        q = _sifu(t, cfg, w, s, defect).requests[0]
        rows.append({"sigma": s, "scheme": "SIFU", "paper": "small σ: like SCRATCH; large σ: from the final model, "
                     "like LAST", "ours": q.rounds, "T": q.restart, "N_0": t.training.rounds,
                     "psi_star": psi_star(s, cfg.epsilon, cfg.delta),
                     "acc_forgotten": float(t.fed.client_accuracy(q.stage.params, w[0]).mean())})
    return {"rows": rows}


def f6_unit(t: Trained, cfg: SIFUConfig, *, defect: str | None) -> dict:
    """Fig. 6: a single request, the clients of class k, for each k of the config (SCRATCH, SIFU, FINE-TUNING)."""
    rows = []
    for k in cfg.f6_classes:
        w = [[10 * i + k for i in range(t.setup.num_clients // 10)]]
        for name, run in (("SCRATCH", _scratch(t, w)), ("SIFU", _sifu(t, cfg, w, t.setup.sigma, defect)),
                          ("FINE-TUNING", _fine_tune(t, w))):
            q = run.requests[0]
            rows.append({"class": k, "scheme": name, "paper": PAPER_F2[name], "ours": q.rounds,
                         "acc_forgotten": float(t.fed.client_accuracy(q.stage.params, w[0]).mean())})
    return {"rows": rows}


def trigger_of(setup: Setup, cfg: SIFUConfig) -> Trigger:
    """The backdoor the forgotten clients of Figs. 3-4 carry: a white patch relabelled to ``backdoor_target``."""
    white = float(_normalise(torch.ones(1, len(DATASETS[setup.dataset].mean), 1, 1), setup.dataset).max())
    return Trigger(cfg.backdoor_target, cfg.backdoor_size, white)


def f3_unit(cfg: SIFUConfig, setup: Setup, data: Data, seed: int, *, defect: str | None) -> dict:
    """Figs. 3-4: Dir(α) clients whose samples carry their group's watermark (labels unchanged, seed 002 §5.3);
    the forgotten clients also carry a backdoor (ours). Accuracy on F_r is measured on their watermarked samples
    without the backdoor; the verification adds the backdoor's success and a membership attack whose non-members
    carry the members' watermarks."""
    fed = federation(setup, data, seed, alpha=cfg.watermark_alpha, watermark=cfg.watermark_pixels)
    reqs = requests_of(setup, cfg.requests)
    forgotten = sorted({c for w in reqs for c in w})
    trigger = trigger_of(setup, cfg)
    fed.x, fed.y, poisoned = plant_backdoor(fed.x, fed.y, forgotten, trigger, cfg.backdoor_fraction,
                                            generator=make_generator(seed, "backdoor", setup.dataset))
    t = train(cfg, setup, data, seed, watermark=cfg.watermark_pixels, target=setup.watermark_target,
              federation_=fed)
    runs = {"SCRATCH": _scratch(t, reqs), "SIFU": _sifu(t, cfg, reqs, setup.sigma, defect)}
    if setup.sigma_ours:
        runs["SIFU (σ ours)"] = _sifu(t, cfg, reqs, setup.sigma_ours, defect)
    runs |= {"FINE-TUNING": _fine_tune(t, reqs), "FEDACCUM (prose)": fedaccum(fed, t.scfg, t.training, reqs, t.accum),
             "FEDACCUM (code)": fedaccum(fed, t.scfg, t.training, reqs, t.accum_code)}
    dp_train = dp_training(fed, t.scfg, t.training.start, range(setup.num_clients), bound=setup.bound,
                           sigma=dp_sigma(setup.bound, setup.num_clients, cfg.epsilon, 1 / setup.num_clients))
    runs["DP"] = dp(fed, t.scfg, dp_train, reqs, bound=setup.bound,
                    sigma=dp_sigma(setup.bound, setup.num_clients, cfg.epsilon, 1 / setup.num_clients))
    for name, run in runs.items():
        run.scheme = name
    keep = ~poisoned
    members = forgotten_samples(fed, forgotten, keep)
    groups = [c % 10 for c in forgotten for _ in range(int(keep[c].sum()))]
    idx = matched_nonmembers(members[1], data.test.y, make_generator(seed, "nonmembers", setup.dataset))
    order = torch.argsort(members[1], stable=True)  # matched_nonmembers returns the classes in sorted order
    nonmembers = (_normalise(_watermarked(data.test.x[idx], [groups[i] for i in order.tolist()],
                                          cfg.watermark_pixels), setup.dataset), data.test.y[idx])
    return {"rows": [row for run in runs.values() for row in _rows(run, fed, keep=keep)],
            "verification": _verification(t, runs, members=members, nonmembers=nonmembers, trigger=trigger),
            "N_0": t.training.rounds}


def theory_unit(tc: TheoryConfig, seed: int) -> dict:
    """Theorem 1 and Corollary 1 on least squares, the identical-clients case, and Appendix A."""
    gen = make_generator(seed, "theory")
    x, y = bounds.least_squares_clients(tc.clients, tc.samples, tc.dim, generator=gen)
    theta0 = torch.randn(tc.dim, generator=gen, dtype=torch.float64)
    rows, series = [], {}
    for k in tc.local_steps:
        row: dict[str, Any] = {"K": k}
        for lam, label in ((0.0, "theorem1"), (tc.lam, "corollary1")):
            mu, big = bounds.curvature(x, lam)
            lr = tc.lr_factor / big
            kw = {"steps": k, "lr": lr, "lam": lam}
            traj = bounds.fedavg_trajectory(x, y, range(tc.clients), theta0, rounds=tc.rounds, **kw)
            psi = bounds.bounded_sensitivity(x, y, traj, **kw)
            dec = bounds.bounded_sensitivity(x, y, traj, **kw, decay=1 - lr * (lam + mu))
            alpha = torch.stack([bounds.model_sensitivity(traj, bounds.fedavg_trajectory(
                x, y, [i for i in range(tc.clients) if i != c], theta0, rounds=tc.rounds, **kw))
                for c in range(tc.clients)], 1)
            bound = psi if label == "theorem1" else dec
            row[f"{label}_violations"] = int((alpha > bound * (1 + 1e-9) + 1e-12).sum())  # float64 round-off
            row[f"{label}_max_ratio"] = float((alpha[1:] / bound[1:]).max())
            if label == "corollary1":
                half = tc.rounds // 2
                row["tighter"] = float(1 - (dec[-1] / psi[-1]).mean())
                row["growth_ratio"] = float(((dec[-1] - dec[half]) / (psi[-1] - psi[half])).mean())
                series[f"K = {k}, λ = {lam:g}: Ψ_dec"] = dec[:, 0].tolist()
            series[f"K = {k}, λ = {lam:g}: α"] = alpha[:, 0].tolist()
            series[f"K = {k}, λ = {lam:g}: Ψ"] = psi[:, 0].tolist()
        rows.append(row)
    same = bounds.fedavg_trajectory(x[:1].repeat(tc.clients, 1, 1), y[:1].repeat(tc.clients, 1), range(tc.clients),
                                    theta0, rounds=20, steps=2, lr=tc.lr_factor / bounds.curvature(x)[1])
    identical = float(bounds.bounded_sensitivity(x[:1].repeat(tc.clients, 1, 1), y[:1].repeat(tc.clients, 1), same,
                                                 steps=2, lr=tc.lr_factor / bounds.curvature(x)[1]).max())
    xa = torch.randn(tc.a_samples, tc.a_dim, generator=gen, dtype=torch.float64)
    ya = torch.randn(tc.a_samples, generator=gen, dtype=torch.float64)
    t0 = torch.randn(tc.a_dim, generator=gen, dtype=torch.float64)
    gaps = [{"finetune_steps": n, **bounds.finetune_gap(xa, ya, t0, drop=0, steps=tc.a_steps, finetune_steps=n,
                                                         lr=tc.a_lr)} for n in tc.a_finetune]
    return {"rows": rows, "series": series, "identical": identical, "appendix_a": gaps}


# --- the chapter run -----------------------------------------------------------------------------------------------

def _jobs(cfg: SIFUConfig, cache: Cache, data: dict[str, Data], setup: Setup, seed: int, *, first: bool,
          defect: str | None) -> dict[str, Callable[[], dict]]:
    """The units of one dataset and seed, by figure (Fig. 5 only for the first ``sweep_seeds`` seeds)."""
    jobs = {"F2": lambda: f2_unit(cache(setup, seed), cfg, defect=defect, figure1=first)}
    if "F5" in cfg.figures and seed < cache.base_seed + cfg.sweep_seeds:
        jobs["F5"] = lambda: f5_unit(cache(setup, seed), cfg, defect=defect)
    if "F6" in cfg.figures:
        jobs["F6"] = lambda: f6_unit(cache(setup, seed), cfg, defect=defect)
    if "F3" in cfg.figures:
        jobs["F3"] = lambda: f3_unit(cfg, setup, data[setup.dataset], seed, defect=defect)
    return jobs


def _spec(cfg: SIFUConfig, setup: Setup, mode: str, figure: str, defect: str | None, **extra) -> dict:
    """Everything that determines a unit of ``figure`` on ``setup``."""
    common = {k: v for k, v in dataclasses.asdict(cfg).items()
              if k not in ("setups", "seeds", "sweep_seeds", "figures", "theory")}
    return {"figure": figure, "setup": dataclasses.asdict(setup), "config": common, "subset": mode,
            "defect": defect, "sigmas": _sigmas(setup, cfg), **extra}


def _mean_rows(per_seed: list[list[dict] | None], keys: Sequence[str]) -> list[dict]:
    """Rows averaged over seeds, grouped by ``keys`` (numbers and booleans averaged, the rest from the first
    seed); ``seeds`` says how many seeds each row averages. Seeds not run yet are left out."""
    runs = [rows for rows in per_seed if rows is not None]
    if not runs:
        return []
    out = []
    for i, first in enumerate(runs[0]):
        group = [rows[i] for rows in runs]
        if any(tuple(g[k] for k in keys) != tuple(first[k] for k in keys) for g in group):
            raise ValueError(f"rows of different seeds do not line up at {[first[k] for k in keys]}")
        row = dict(first)
        for k, v in first.items():
            if k not in keys and isinstance(v, (int, float)) and not isinstance(v, str):
                vals = [g[k] for g in group if g[k] is not None]
                row[k] = statistics.fmean(vals) if vals else None
        row["seeds"] = len(group)
        out.append(row)
    return out


def run(config: SIFUConfig = QUICK, *, mode: str = "quick", seed: int = 0, progress: bool = False,
        units: Units | None = None, defect: str | None = None) -> Results:
    """Run the chapter and return its :class:`~fedlib.results.Results`.

    Units (one per figure, dataset and seed): ``<dataset>/seed<s>/F2`` (every scheme on the sequential requests,
    with the verification), ``.../F3`` (watermarked clients), ``.../F5`` (σ sweep), ``.../F6`` (forgotten sets), and
    ``theory``. Datasets the data root lacks (offline: CIFAR-100) are blocked before anything runs.
    """
    if defect is not None and defect not in DEFECTS:
        raise ValueError(f"defect must be one of {sorted(DEFECTS)} or None, got {defect!r}")
    began = time.perf_counter()
    cfg = config
    units = units or Units("sifu", mode, seed)
    res = Results("sifu", mode, seed, dataclasses.asdict(cfg))
    _tables_constants(res, cfg)
    data: dict[str, Data] = {}
    for setup in cfg.setups:
        try:
            data[setup.dataset] = load(setup, mode)
        except DatasetIncompleteError as err:
            units.block(f"{setup.dataset}/*", str(err))
    cache = Cache(cfg, data, seed, progress)
    seeds = [seed + j for j in range(cfg.seeds)]
    out: dict[str, dict[str, list]] = {fig: {s.dataset: [] for s in cfg.setups} for fig in ("F2", "F3", "F5", "F6")}
    for s in seeds:
        for setup in cfg.setups:
            if setup.dataset not in data:
                continue
            for fig, compute in _jobs(cfg, cache, data, setup, s, first=s == seed, defect=defect).items():
                out[fig][setup.dataset].append(units.run(f"{setup.dataset}/seed{s}/{fig}",
                                                         _spec(cfg, setup, mode, fig, defect, seed=s), compute))
    theory = None
    if cfg.theory is not None:
        theory = units.run("theory", {"theory": dataclasses.asdict(cfg.theory)}, lambda: theory_unit(cfg.theory, seed))
    summary = _tables(res, cfg, out, theory)
    _measure(res, summary, theory, cfg)
    res.evaluate(LEDGER)
    res.elapsed_s = time.perf_counter() - began
    return res


def _tables_constants(res: Results, cfg: SIFUConfig) -> None:
    res.add_table("T1", "Table 1: hyper-parameters (K, B, M, m, σ, η, C), paper vs this run", [
        {"dataset": s.dataset, "paper": "K={}, B={}, M={}, m={}, σ={}, η={}, C={}".format(*TABLE1[s.dataset]),
         "ours": f"K={s.local_steps}, B={s.batch_size}, M={s.num_clients}, m={s.clients_per_round}, σ={s.sigma}"
                 + (f" (and {s.sigma_ours}, ours)" if s.sigma_ours else "")
                 + f", η={s.lr}, C from {'/'.join(f'{b:g}' for b in cfg.dp_bounds)}; n_i={s.samples}, {s.model}, "
                   f"a*={s.target}"} for s in cfg.setups])
    ratio = cfg.epsilon / c_delta(cfg.delta)
    res.add_table("T_constants", "Constants of eqs. 12-13 and the DP baseline, and the exact δ of the paper's "
                  "calibration at ε = 10 (Balle & Wang 2018; ours)", [
                      {"quantity": "c_δ (δ = 0.01)", "paper": 3.107511, "ours": c_delta(0.01)},
                      {"quantity": "Ψ*(σ = 0.05)", "paper": 0.160900, "ours": psi_star(0.05, 10, 0.01)},
                      {"quantity": "Ψ*(σ = 0.1)", "paper": 0.321801, "ours": psi_star(0.1, 10, 0.01)},
                      {"quantity": "σ_DP(C = 0.5, M = 100)", "paper": 0.0031075, "ours": dp_sigma(0.5, 100, 10, 0.01)},
                      {"quantity": "exact δ of Δ/σ = ε/c_δ at ε = 10", "paper": 0.01,
                       "ours": gaussian_delta(cfg.epsilon, ratio)},
                      {"quantity": "largest Δ/σ that is (10, 0.01)-DP", "paper": ratio,
                       "ours": analytic_gaussian_ratio(cfg.epsilon, cfg.delta)}])


def _tables(res: Results, cfg: SIFUConfig, out: dict, theory: dict | None) -> dict:
    """The chapter's tables and figures' series from the unit results (averaged over seeds); returns the rows the
    claims are measured on, by figure and dataset."""
    summary: dict[str, dict[str, Any]] = {k: {} for k in ("F2", "V2", "F3", "V3", "F5", "F6", "invariant",
                                                          "dp_chosen")}
    for setup in cfg.setups:
        ds = setup.dataset
        f2 = out["F2"][ds]
        done = [u for u in f2 if u is not None]
        summary["invariant"][ds] = sum(u["invariant"] for u in done)
        summary["dp_chosen"][ds] = [next(r["C"] for r in u["dp_sweep"] if r["chosen"]) for u in done]
        summary["F2"][ds] = _mean_rows([u["rows"] for u in done], ("scheme", "request"))
        summary["V2"][ds] = _mean_rows([u["verification"] for u in done], ("model",))
        res.add_table(f"F2_{ds}", f"Fig. 2, {ds}: {cfg.requests} sequential requests (the clients of classes 0, 1, "
                      "2): rounds after each request (ours), total rounds, restart (ζ, T), accuracy on all forgotten "
                      "clients F_r and on the remaining ones; mean over seeds", summary["F2"][ds])
        res.add_table(f"V2_{ds}", f"Verification, {ds}, Fig. 2 after the last request: every scheme beside a model "
                      "trained with F (remembers) and one retrained without F at another seed (forgot); distances "
                      "to SCRATCH's model, relative ones divided by the second control's", summary["V2"][ds])
        res.add_table(f"dp_sweep_{ds}", f"{ds}: the DP baseline's training rounds per clipping bound C (the paper "
                      "keeps the C that reaches a* fastest); σ_DP = (2C/M)c_δ/ε with δ = 1/M, per round, not "
                      "composed", _mean_rows([u["dp_sweep"] for u in done], ("C",)))
        first = f2[0] if f2 else None
        if first is not None and "F1" in first and ds == cfg.setups[0].dataset:
            for name, psi in first["F1"]["psi"].items():
                res.add_series(f"F1/{name}", list(range(len(psi))), psi, label=f"Ψ_{name.split('/')[0][7:]}(n, "
                               f"{name.split('/')[1]})")
            res.add_table("F1", f"Fig. 1: SIFU's history on this run, {ds}: branch ζ_r and round T_r of each "
                          "request, and the oracle O(R)", first["F1"]["rows"])
        for fig, keys in (("F5", ("sigma", "scheme")), ("F6", ("class", "scheme")), ("F3", ("scheme", "request"))):
            units_ = [u for u in out[fig][ds] if u is not None]
            summary[fig][ds] = _mean_rows([u["rows"] for u in units_], keys)
            if fig == "F3":
                summary["V3"][ds] = _mean_rows([u["verification"] for u in units_], ("model",))
        if "F3" in cfg.figures:
            res.add_table(f"F3_{ds}", f"Figs. 3-4, {ds}: watermarked clients (Dir({cfg.watermark_alpha:g}) classes, "
                          f"{cfg.watermark_pixels} pixels per group, a* = {setup.watermark_target}): rounds (ours) and "
                          "accuracy on the forgotten clients' watermarked samples", summary["F3"][ds])
            res.add_table(f"V3_{ds}", f"Verification, {ds}, Figs. 3-4 after the last request, with the backdoor the "
                          f"forgotten clients carry ({cfg.backdoor_size}×{cfg.backdoor_size} patch → class "
                          f"{cfg.backdoor_target} on {cfg.backdoor_fraction:.0%} of their samples)", summary["V3"][ds])
        if "F5" in cfg.figures:
            res.add_table(f"F5_{ds}", f"Fig. 5, {ds}: one request (clients of class 0) served by SIFU for each σ: "
                          "restart round T, rounds (ours) and accuracy on the forgotten clients", summary["F5"][ds])
        if "F6" in cfg.figures:
            res.add_table(f"F6_{ds}", f"Fig. 6, {ds}: one request, the clients of class k: rounds (ours) and accuracy "
                          "on the forgotten clients", summary["F6"][ds])
    if theory is not None:
        res.add_table("theory_bounds", "Theorem 1 and Corollary 1 on least squares (α: the true model sensitivity, "
                      "eq. 9; Ψ: eq. 8; Ψ_dec: eq. 11): rounds and clients where the bound fails, and the largest "
                      "α/bound", [{"paper": "α ≤ Ψ at every n", **r} for r in theory["rows"]])
        for name, ys in theory["series"].items():
            res.add_series(f"theory/{name}", list(range(len(ys))), ys, label=name)
        res.add_table("appendix_A", "Appendix A: fine-tuning θ^N without one sample vs retraining from θ^0, for Ñ "
                      "steps: the measured ‖φ^Ñ − θ_{−1}^Ñ‖, eq. 24 as printed and corrected, and the limit "
                      "‖P_null(X_{−1})(θ^N − θ^0)‖", [{"paper": "> 0 for every Ñ", **r} for r in theory["appendix_a"]])
    return summary


# --- measuring the ledger ------------------------------------------------------------------------------------------

def _by(rows: list[dict], key: str = "scheme") -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r[key], []).append(r)
    return out


def _acc(rows: list[dict]) -> float:
    return statistics.fmean(r["acc_forgotten"] for r in rows)


def _total(rows: list[dict]) -> float:
    return max(r["total_rounds"] for r in rows)


def _put(res: Results, cid: str, setting: str, value: float, detail: str = "") -> None:
    """Record a value of claim ``cid`` (or of its full-mode CIFAR twin, which holds the CIFAR settings)."""
    claim = CLAIMS[cid] if setting in CLAIMS[cid].settings else CLAIMS[f"{cid}_cifar"]
    res.measure(claim, value, detail, setting=setting)


def _measure(res: Results, summary: dict, theory: dict | None, cfg: SIFUConfig) -> None:
    """This run's value of every claim of :data:`LEDGER` it can measure; the others stay "not run"."""
    for setup in cfg.setups:
        ds = setup.dataset
        if summary["F2"][ds]:
            _measure_f2(res, setup, _by(summary["F2"][ds]), cfg)
            _measure_verification(res, ds, "Fig. 2", summary["V2"][ds])
            _put(res, "theorem3_invariant", ds, summary["invariant"][ds], "summed over seeds")
            chosen = summary["dp_chosen"][ds]
            if setup.dataset in TABLE1 and chosen:
                c = max(set(chosen), key=chosen.count)
                if ds in CLAIMS["dp_bound_table1"].settings:
                    _put(res, "dp_bound_table1", ds, c / TABLE1[ds][6] - 1, f"chosen C per seed: {chosen}")
        if summary["F3"][ds]:
            _measure_f3(res, ds, _by(summary["F3"][ds]), summary["V3"][ds])
        if summary["F5"][ds]:
            _measure_f5(res, ds, summary["F5"][ds])
        if summary["F6"][ds]:
            _measure_f6(res, ds, summary["F6"][ds])
    if theory is not None:
        _measure_theory(res, theory)
    ratio = cfg.epsilon / c_delta(cfg.delta)
    delta = gaussian_delta(cfg.epsilon, ratio)
    res.measure(CLAIMS["theorem2_delta"], delta / cfg.delta - 1,
                f"exact δ = {delta:.4f} at ε = {cfg.epsilon:g}, Δ/σ = {ratio:.3f}; the largest Δ/σ that is "
                f"({cfg.epsilon:g}, {cfg.delta:g})-DP is {analytic_gaussian_ratio(cfg.epsilon, cfg.delta):.3f}")


def _measure_f2(res: Results, setup: Setup, f2: dict[str, list[dict]], cfg: SIFUConfig) -> None:
    ds, scr = setup.dataset, _acc(f2["SCRATCH"])
    scr_total = _total(f2["SCRATCH"])
    for reading in READINGS:
        trio = {s: (_acc(f2[s]), _total(f2[s])) for s in ("FINE-TUNING", reading, "DP")}
        accs = [a for a, _ in trio.values()]
        detail = ", ".join(f"{s} {a:.3f} ({n:.0f} rounds)" for s, (a, n) in trio.items()) + \
            f"; SCRATCH {scr:.3f} ({scr_total:.0f} rounds)"
        setting = f"{ds}, {reading}"
        _put(res, "baselines_remember", setting, min(accs) - scr, detail)
        _put(res, "baselines_similar", setting, max(accs) - min(accs), detail)
        _put(res, "baselines_fast", setting, 1 - max(n for _, n in trio.values()) / scr_total, detail)
    ft = _acc(f2["FINE-TUNING"])
    for label, scheme in (("", "SIFU"), (", σ ours", "SIFU (σ ours)")):
        if scheme not in f2:
            continue
        setting, acc, total = ds + label, _acc(f2[scheme]), _total(f2[scheme])
        detail = (f"{scheme} {acc:.3f} ({total:.0f} rounds), SCRATCH {scr:.3f} ({scr_total:.0f} rounds), "
                  f"FINE-TUNING {ft:.3f}")
        _put(res, "sifu_below_finetuning" + ("_sigma_ours" if label else ""), setting, ft - acc, detail)
        _put(res, "sifu_close_to_scratch", setting, acc - scr, detail)
        if not ds.startswith("fashion"):
            _put(res, "sifu_above_scratch", setting, acc - scr, detail)
        _put(res, "sifu_fewer_rounds", setting, 1 - total / scr_total, detail)
        if not label:
            _put(res, "sifu_half_rounds", setting, total / scr_total - 0.5, detail)
        for reading in READINGS if ds in QUICK_SETS else ():
            pool = {"SCRATCH": scr_total} | {s: _total(f2[s]) for s in ("FINE-TUNING", reading, "DP", "LAST")
                                             if _acc(f2[s]) <= acc + 0.01}
            fastest = min(pool, key=pool.get)
            _put(res, "only_sifu_forgets_fast", f"{setting}, {reading}", pool[fastest] / total - 1,
                 f"{scheme} {total:.0f} rounds (acc {acc:.3f}); the fastest that forgets as well: {fastest} "
                 f"{pool[fastest]:.0f} rounds (acc {_acc(f2[fastest]):.3f})")
    for reading in LAST_READINGS:
        reached = [r["reached_target"] for r in f2[reading]]
        _put(res, "last_never_reaches", f"{ds}, {reading}", statistics.fmean(reached),
             f"fraction of seeds reaching a* at requests 1..R: {[round(r, 2) for r in reached]} (N_max = "
             f"{cfg.max_rounds})")


def _measure_verification(res: Results, ds: str, fig: str, rows: list[dict]) -> None:
    from fedlib.unlearning.verify import FORGOT, REMEMBERS

    v = {r["model"]: r for r in rows}
    pos, neg = v[REMEMBERS], v[FORGOT]
    _put(res, "verify_mia_separates", f"{ds}, {fig}", pos["mia_auc"] - neg["mia_auc"],
         f"AUC {pos['mia_auc']:.3f} vs {neg['mia_auc']:.3f}; TPR at 1 % FPR {pos['mia_tpr_at_1pct']:.3f} vs "
         f"{neg['mia_tpr_at_1pct']:.3f}; loss AUC {pos['loss_auc']:.3f} vs {neg['loss_auc']:.3f}")
    _put(res, "verify_output_separates", f"{ds}, {fig}", pos["relative_kl"] - 1,
         f"KL to SCRATCH {pos['kl_to_retrained']:.4f} vs {neg['kl_to_retrained']:.4f}; disagreement "
         f"{pos['disagreement_with_retrained']:.3f} vs {neg['disagreement_with_retrained']:.3f}")
    if fig == "Fig. 2":
        _put(res, "sifu_output_like_retraining", ds, v["SIFU"]["relative_kl"] - 1,
             f"KL to SCRATCH: SIFU {v['SIFU']['kl_to_retrained']:.4f}, retraining at another seed "
             f"{neg['kl_to_retrained']:.4f}")
    else:
        asr = {k: r["backdoor_success"] for k, r in v.items()}
        detail = ", ".join(f"{k} {a:.3f}" for k, a in asr.items())
        _put(res, "verify_backdoor_separates", ds, asr[REMEMBERS] - asr[FORGOT], detail)
        for label, scheme in (("", "SIFU"), (", σ ours", "SIFU (σ ours)")):
            if scheme in asr:
                _put(res, "wm_sifu_forgets_backdoor", ds + label, asr[scheme] - asr["SCRATCH"], detail)
        _put(res, "wm_finetuning_keeps_backdoor", ds, asr["FINE-TUNING"] - asr["SCRATCH"], detail)


def _measure_f3(res: Results, ds: str, f3: dict[str, list[dict]], v3: list[dict]) -> None:
    scr, scr_total = _acc(f3["SCRATCH"]), _total(f3["SCRATCH"])
    for label, scheme in (("", "SIFU"), (", σ ours", "SIFU (σ ours)")):
        if scheme in f3:
            detail = (f"{scheme} {_acc(f3[scheme]):.3f} ({_total(f3[scheme]):.0f} rounds), SCRATCH {scr:.3f} "
                      f"({scr_total:.0f})")
            _put(res, "wm_sifu_close_to_scratch", ds + label, _acc(f3[scheme]) - scr, detail)
            _put(res, "wm_sifu_fewer_rounds", ds + label, 1 - _total(f3[scheme]) / scr_total, detail)
    for reading in READINGS:
        accs = {s: _acc(f3[s]) for s in ("FINE-TUNING", reading, "DP")}
        _put(res, "wm_baselines_remember", f"{ds}, {reading}", min(accs.values()) - scr,
             ", ".join(f"{s} {a:.3f}" for s, a in accs.items()) + f"; SCRATCH {scr:.3f}")
    _measure_verification(res, ds, "Figs. 3-4", v3)


def _measure_f5(res: Results, ds: str, rows: list[dict]) -> None:
    base = rows[0]
    sweep = [r for r in rows if r["scheme"] == "SIFU"]
    small, big = sweep[0], sweep[-1]
    ts = [r["T"] for r in sweep]
    _put(res, "f5_small_sigma_restarts_at_start", ds, small["T"], f"T = {small['T']:.3g} at σ = {small['sigma']:g}")
    _put(res, "f5_small_sigma_like_scratch", ds, small["acc_forgotten"] - base["acc_forgotten"],
         f"{small['acc_forgotten']:.3f} vs SCRATCH {base['acc_forgotten']:.3f}")
    _put(res, "f5_small_sigma_like_scratch_rounds", ds, small["ours"] / base["ours"] - 1,
         f"{small['ours']:.1f} vs SCRATCH {base['ours']:.1f} rounds")
    _put(res, "f5_large_sigma_final_model", ds, big["T"] - big["N_0"],
         f"T = {big['T']:.1f}, N_0 = {big['N_0']:.1f} at σ = {big['sigma']:g}")
    _put(res, "f5_large_sigma_like_last_rounds", ds, 1 - big["ours"] / base["ours"],
         f"{big['ours']:.1f} vs SCRATCH {base['ours']:.1f} rounds")
    _put(res, "f5_large_sigma_like_last_accuracy", ds, big["acc_forgotten"] - base["acc_forgotten"],
         f"{big['acc_forgotten']:.3f} vs SCRATCH {base['acc_forgotten']:.3f}")
    _put(res, "f5_restart_monotone", ds, sum(b < a for a, b in itertools.pairwise(ts)),
         f"T = {[round(t, 1) for t in ts]}")


def _measure_f6(res: Results, ds: str, rows: list[dict]) -> None:
    by = {(r["class"], r["scheme"]): r for r in rows}
    classes = sorted({r["class"] for r in rows})
    acc = {k: {s: by[(k, s)]["acc_forgotten"] for s in ("SCRATCH", "SIFU", "FINE-TUNING")} for k in classes}
    detail = "; ".join(f"class {k}: " + ", ".join(f"{s} {a:.3f}" for s, a in v.items()) for k, v in acc.items())
    _put(res, "f6_sifu_below_finetuning", ds, min(v["FINE-TUNING"] - v["SIFU"] for v in acc.values()), detail)
    _put(res, "f6_sifu_close_to_scratch", ds, max(abs(v["SIFU"] - v["SCRATCH"]) for v in acc.values()), detail)
    _put(res, "f6_sifu_fewer_rounds", ds, min(1 - by[(k, "SIFU")]["ours"] / by[(k, "SCRATCH")]["ours"]
                                              for k in classes),
         "; ".join(f"class {k}: SIFU {by[(k, 'SIFU')]['ours']:.0f}, SCRATCH {by[(k, 'SCRATCH')]['ours']:.0f}"
                   for k in classes))


def _measure_theory(res: Results, theory: dict) -> None:
    for row in theory["rows"]:
        k = f"K = {row['K']}"
        res.measure(CLAIMS["theorem1_bound"], row["theorem1_violations"],
                    f"largest α/Ψ {row['theorem1_max_ratio']:.4f}", setting=k)
        res.measure(CLAIMS["corollary1_bound"], row["corollary1_violations"],
                    f"largest α/Ψ_dec {row['corollary1_max_ratio']:.4f}", setting=k)
        res.measure(CLAIMS["corollary1_tighter"], row["tighter"], "", setting=k)
        res.measure(CLAIMS["corollary1_converges"], 1 - row["growth_ratio"],
                    f"Ψ_dec grows {row['growth_ratio']:.3f}× as much as Ψ over the last half", setting=k)
    res.measure(CLAIMS["identical_clients_zero"], theory["identical"], f"max Ψ = {theory['identical']:.2e}")
    gap = theory["appendix_a"][-1]
    res.measure(CLAIMS["appendix_a_finetuning_differs"], gap["measured"] / gap["before"],
                f"Ñ = {gap['finetune_steps']}: ‖φ − θ_(−1)‖ = {gap['measured']:.4f} (limit {gap['limit']:.4f}), "
                f"‖θ^N − θ_(−1)‖ = {gap['before']:.4f}, ‖θ^N − θ^0‖ = {gap['scale']:.4f}")
    res.measure(CLAIMS["eq24_as_printed"], gap["printed_error"] / gap["measured"],
                f"as printed: norm {gap['printed']:.4f}, error {gap['printed_error']:.4f}")
    res.measure(CLAIMS["eq24_corrected"], gap["corrected_error"] / gap["measured"],
                f"error {gap['corrected_error']:.2e}")


class UnlearningLab:
    """One trained federation of the chapter (the first setup of its config) that serves single requests on demand,
    for the unlearning explorer: SCRATCH, SIFU, FINE-TUNING, LAST and FedEraser forget the same clients from the
    same trained model, each read beside the two controls. Training happens once, in the constructor."""

    SCHEMES = ("SCRATCH", "SIFU", "FINE-TUNING", "LAST", "FEDERASER")

    def __init__(self, config: SIFUConfig = QUICK, *, seed: int = 0, mode: str = "quick", progress: bool = False
                 ) -> None:
        self.cfg, self.setup = config, config.setups[0]
        self.trained = train(dataclasses.replace(config, figures=()), self.setup, load(self.setup, mode), seed,
                             alpha=self.setup.alpha, progress=progress)
        self.training = self.trained.training

    @classmethod
    def from_results(cls, results: Results, *, progress: bool = False) -> UnlearningLab:
        """The lab of a SIFU chapter run: same configuration, mode and seed."""
        if results.chapter != "sifu":
            raise ValueError(f"results must come from the sifu chapter, got {results.chapter!r}")
        c = {k: tuple(v) if isinstance(v, list) else v for k, v in results.config.items() if k != "theory"}
        setups = tuple(Setup(**{**s, "model_args": tuple(tuple(a) for a in s.get("model_args", ()))})
                       for s in c.pop("setups"))
        cfg = SIFUConfig(setups=setups, theory=None, **c)
        return cls(cfg, seed=results.seed, mode=results.mode, progress=progress)

    def forget(self, clients: list[int], schemes: tuple[str, ...] = SCHEMES) -> list[dict]:
        """Serve one request W = ``clients`` with each scheme. One row per scheme, then one per control (trained
        with W; retrained without W at another seed): rounds after the request, the round it restarted from,
        accuracy on the forgotten and on the remaining clients' data, and the KL of its outputs to SCRATCH's
        relative to the second control's."""
        unknown = [s for s in schemes if s not in self.SCHEMES]
        if unknown or not schemes:
            raise ValueError(f"schemes must be a non-empty subset of {self.SCHEMES}, got {schemes!r}")
        cfg, t, req = self.cfg, self.trained, [list(clients)]
        ref = scratch(t.fed, t.scfg, t.training, req)  # validates the request
        serve = {"SIFU": lambda: sifu(t.fed, t.scfg, t.training, req, sigma=self.setup.sigma, epsilon=cfg.epsilon,
                                      delta=cfg.delta),
                 "FINE-TUNING": lambda: fine_tune(t.fed, t.scfg, t.training, req),
                 "LAST": lambda: last(t.fed, t.scfg, t.training, req, epsilon=cfg.epsilon, delta=cfg.delta),
                 "FEDERASER": lambda: federaser(t.fed, t.scfg, t.training, req, t.store,
                                                calibration_ratio=cfg.federaser_ratio)}
        runs = {name: ref if name == "SCRATCH" else serve[name]() for name in schemes}
        checks = _verification(t, {"SCRATCH": ref} | runs)
        rows = []
        for check in checks:
            name = check["model"]
            if name not in runs and name in self.SCHEMES:
                continue  # SCRATCH is the distances' reference even when it was not asked for
            q = runs[name].requests[0] if name in runs else None
            rows.append({"scheme": name, "rounds": None if q is None else q.rounds,
                         "restart_round": None if q is None else q.restart,
                         "acc_forgotten": check["accuracy_forgotten"], "acc_remaining": check["accuracy_remaining"],
                         "relative_kl": check["relative_kl"]})
        return rows[2:] + rows[:2]
