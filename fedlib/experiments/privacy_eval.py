"""Chapter "Privacy evaluation" (Weng's thesis ch. 4): reconstruction attacks against a UDP client's noisy gradients.

Single-end (SE) setting of §4.4: one client with n CIFAR-100 images, one per class, shares the
clipped, noised mean gradient of its images every round (eqs. 4.1-4.2) and trains one Adam epoch; an attacker with
the model, the weights and the labels inverts the shared gradients with the cosine attack (eq. 2.14) or the
Euclidean one (eq. 4.12), one round at a time or on the sum of all rounds (§4.2.5). Reproduces Tables 4.1, 4.3,
4.4 and 4.5, Figs. 4.1-4.7 and the §4.3 analysis at the thesis's noise levels; quick mode shrinks the MLP and n and
rescales σ so that the noise-to-signal ratio matches the thesis's: σ_run = σ_doc (n / 100) √(d_doc / d).

Full mode runs as units (:mod:`fedlib.units`): one attack sweep (a batch of attacks sharing objective, manner and
round), one FL training run, or the mechanism's norms per unit. The FL attack setting (Table 4.4) needs the full
CIFAR-100 and is blocked, with the data message, before any unit runs when the data root lacks it.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import torch

from fedlib.algorithms.udp import privatize, single_end_trajectory, udp_epsilon, udp_fl
from fedlib.attacks import (
    AttackConfig,
    cosine_similarity,
    euclidean_distance,
    evaluator_similarity,
    leakage_probability,
    leakage_scores,
    psnr,
    reconstruct,
    ssim,
)
from fedlib.attacks.theory import corollary2_k3, lemma7_k1, noise_to_signal, theorem7_k4
from fedlib.data import DATASETS, blocking_errors, load_dataset, pixel_source
from fedlib.experiments.common import device, fresh_model, train_unit
from fedlib.fl import FLConfig, LocalSGD, run_federated
from fedlib.fl.client import LocalTrainer
from fedlib.fl.engine import disagreement
from fedlib.fl.params import as_dict, get_flat, set_flat
from fedlib.ledger import Claim
from fedlib.models import num_parameters
from fedlib.privacy import RunningMedian
from fedlib.results import Results
from fedlib.rng import make_generator
from fedlib.units import Units

Params = dict[str, torch.Tensor]

DOC_PARAMETERS = 5_348_452  # the thesis's MLP 3072-1024-1024-1024-100
DOC_SAMPLES = 100

#: Table 4.1 (MLP, CIFAR-100, one round): (σ, C) -> (PSNR, cos-sim, Euc-dis)
T41 = {(0.001, 0.1): (21.47, 0.97, 18.14), (0.001, 0.4): (28.52, 0.99, 8.09), (0.001, 1.0): (28.61, 0.99, 7.99),
       (0.01, 0.1): (21.63, 0.97, 17.80), (0.01, 0.4): (23.66, 0.95, 13.89), (0.01, 1.0): (17.84, 0.81, 26.77),
       (0.1, 0.1): (15.92, 0.70, 33.51), (0.1, 0.4): (10.22, 0.14, 64.54), (0.1, 1.0): (9.29, 0.03, 71.96),
       (1.0, 0.1): (9.12, 0.02, 73.35), (1.0, 0.4): (8.97, 0.01, 74.64), (1.0, 1.0): (8.95, 0.00, 74.81)}
#: Table 4.3 (SE, MLP, CIFAR-100): (C, σ) -> (PSNR, Prob leak, LPIPS); C = "median" for the running median
T43 = {(0.1, 0.001): (20.8497, 0.59, 0.0322), (0.1, 0.01): (20.7342, 0.58, 0.0329),
       (0.1, 0.04): (19.6833, 0.54, 0.0498), (0.1, 0.1): (16.2349, 0.53, 0.1052), (0.1, 1.0): (9.0808, 0.24, 0.4034),
       (0.4, 0.001): (25.4005, 0.56, 0.0253), (0.4, 0.01): (23.6943, 0.55, 0.0140), (0.4, 0.1): (11.4474, 0.4, 0.2770),
       (0.4, 1.0): (8.8907, 0.23, 0.4105), (1.0, 0.001): (26.9651, 0.57, 0.0079), (1.0, 0.01): (19.3725, 0.52, 0.0436),
       (1.0, 0.1): (9.2355, 0.23, 0.3874), (1.0, 1.0): (9.1147, 0.23, 0.4104), (4.0, 0.001): (23.6943, 0.55, 0.0143),
       (4.0, 0.01): (11.4474, 0.4, 0.2777), (4.0, 0.1): (8.8907, 0.23, 0.4105), (4.0, 1.0): (8.5518, 0.24, 0.3995),
       (10.0, 0.0001): (25.4504, 0.57, 0.0113), (10.0, 0.0004): (22.9730, 0.56, 0.0246),
       (10.0, 0.001): (20.1703, 0.54, 0.0439), (10.0, 0.01): (10.4285, 0.26, 0.3385),
       ("median", 0.001): (28.3672, 0.59, 0.0078), ("median", 0.01): (26.7709, 0.57, 0.0080),
       ("median", 0.1): (17.1509, 0.53, 0.0856), ("median", 1.0): (8.9232, 0.23, 0.4054)}
#: Table 4.4 (all-round attack, σ not stated: σC = 0.04, spec §7.5): (setting, C) -> (PSNR, Prob leak, LPIPS)
T44 = {("FL", 0.1): (12.56, 0.57, 0.1916), ("FL", 1.0): (12.76, 0.54, 0.1991), ("FL", 10.0): (11.00, 0.21, 0.2332),
       ("SE", 0.1): (12.42, 0.55, 0.2202), ("SE", 1.0): (12.40, 0.51, 0.2224), ("SE", 10.0): (10.69, 0.25, 0.2330)}
#: Table 4.5: (attack, C, σ) -> (PSNR, Prob leak, LPIPS)
T45 = {("euclidean", 0.1, 0.01): (17.1171, 0.54, 0.1146), ("cosine", 0.1, 0.01): (20.7342, 0.58, 0.0329),
       ("euclidean", 0.1, 0.1): (16.6834, 0.54, 0.1164), ("cosine", 0.1, 0.1): (16.2349, 0.53, 0.1052),
       ("euclidean", 1.0, 0.01): (20.0328, 0.5, 0.0829), ("cosine", 1.0, 0.01): (19.3725, 0.52, 0.0436),
       ("euclidean", 1.0, 0.1): (12.1396, 0.21, 0.2525), ("cosine", 1.0, 0.1): (9.2355, 0.23, 0.3874),
       ("euclidean", 10.0, 0.01): (12.1396, 0.21, 0.2525), ("cosine", 10.0, 0.01): (10.4285, 0.26, 0.3385),
       ("euclidean", 10.0, 0.1): (7.8497, 0.21, 0.4113), ("cosine", 10.0, 0.1): (7.2322, 0.20, 0.4675)}
#: the base noise scales σ the thesis's tables state (Tables 4.1, 4.3, 4.5; Table 4.4's σ is not stated)
THESIS_SIGMAS = frozenset({s for s, _ in T41} | {s for _, s in T43} | {s for _, _, s in T45})
#: Fig. 4.7 (FL, CNN6, CIFAR-10): the two accuracies the text gives, (C, σC) -> accuracy
F47 = {(0.1, 1.0): 0.34, (10.0, 1.0): 0.44}
#: §4.4.2: "when the base noise scale is one, the ε is derived to be eight" (RDP, δ = 1e-5)
EPSILON_AT_SIGMA_ONE = 8.0
#: the thesis's accounting as we reconstruct it (inputs not stated): q = batch 25 / n 100, 15 steps
THESIS_ACCOUNTING = {"sample_rate": 0.25, "releases": 15, "num_samples": DOC_SAMPLES}


@dataclass(frozen=True)
class Setting:
    """One attack: clipping bound C (a number or "median"), the thesis's σ (σ_doc), objective, manner, round and
    dummy initialisation ("uniform": U[0, 1] pixels, ours; "normal": N(0, 1) in the standardised input space of
    the reference code)."""

    bound: float | str
    sigma: float
    objective: str = "cosine"
    manner: str = "one-round"  # or "all-round"
    round: int = 1
    init: str = "uniform"

    @property
    def name(self) -> str:
        text = f"{self.objective}, {self.manner}, round {self.round}, C = {self.bound}, σ = {self.sigma:g}"
        return text + (", N(0,1) init" if self.init == "normal" else "")

    @property
    def pair(self) -> tuple[float | str, float]:
        return self.bound, self.sigma

    def total_noise(self, median_bound: float) -> float:
        """σ·C, the thesis's "total noise" (the median bound measured on round 1 for C = "median")."""
        return self.sigma * (median_bound if self.bound == "median" else float(self.bound))


@dataclass(frozen=True)
class FLAccuracyConfig:
    """Fig. 4.7: UDP-FL with CNN6 on CIFAR-10 (thesis: 40 clients × 100 random images, batch 20, 5 local epochs,
    15 rounds, local SGD lr 0.01, C ∈ {0.1, 1, 10} × σC ∈ {0.01, 0.1, 1, 10, 100})."""

    clients: int = 40
    images: int = 100
    batch_size: int = 20
    epochs: int = 5
    lr: float = 0.01
    rounds: int = 15
    #: the (C, σC) trained from He initialisation (ours, :func:`kaiming_init`): the thesis's grid
    runs: tuple[tuple[float, float], ...] = tuple((c, t) for c in (0.1, 1.0, 10.0) for t in (0.01, 0.1, 1.0, 10.0, 100.0))
    #: (C, σC) also trained from the default initialisation (U(±1/√fan_in), PyTorch's; the thesis states none)
    default_init: tuple[tuple[float, float], ...] = ((0.1, 0.1), (10.0, 0.1))


@dataclass(frozen=True)
class PrivacyEvalConfig:
    """FULL: the thesis's configuration (100 images, MLP 3x1024, 2,500 iterations at lr 0.01, 15 rounds; curves at
    rounds 1, 5, 10, 15). QUICK: 8 images, MLP 3x256, 300 iterations at lr 0.05, 4 rounds."""

    images: int = 8
    hidden: tuple[int, ...] = (256, 256, 256)
    batch_size: int = 4  # local Adam epoch (thesis: 25 for 100 images)
    rounds: int = 4
    attack: AttackConfig = AttackConfig(iterations=300, lr=0.05)
    #: rounds at which the per-round attacks (curves, Table 4.4) run; None: every round
    attack_rounds: tuple[int, ...] | None = None
    t41: tuple[tuple[float, float], ...] = ((0.001, 0.1), (0.1, 0.1), (1.0, 0.1), (0.001, 1.0), (0.1, 1.0), (1.0, 1.0))
    t43: tuple[tuple[float | str, float], ...] = ((0.1, 0.1), (1.0, 0.01), (10.0, 0.001), (1.0, 0.04),
                                                  ("median", 0.01), (0.1, 0.01), (10.0, 0.0001))
    #: Table 4.5: the thesis's six (C, σ) rows, each attacked with both objectives
    t45: tuple[tuple[float, float], ...] = ((0.1, 0.01), (0.1, 0.1), (1.0, 0.01), (1.0, 0.1), (10.0, 0.01),
                                            (10.0, 0.1))
    #: round-1 settings also attacked from N(0, 1) dummies (the reference code's initialisation)
    normal_init: tuple[tuple[float, float], ...] = ((1.0, 0.001), (1.0, 1.0))
    #: Fig. 4.2: per-round curves, both manners, for these (C, σ); total noise σC = 0.01 and 0.1 at C = 1 (the spec
    #: card's setting, per-layer clipping active) and 0.1 at C = 10 (ours: clipping inactive)
    curves: tuple[tuple[float, float], ...] = ((1.0, 0.01), (1.0, 0.1), (10.0, 0.01))
    #: Fig. 4.3: one-round curves at fixed σ for these C ("median" the running median)
    f43_sigmas: tuple[float, ...] = (0.1,)
    f43_bounds: tuple[float | str, ...] = (0.1, 1.0, 10.0, "median")
    #: Fig. 4.4: one-round curves at fixed total noise σC for these C
    f44_total_noise: float = 0.01
    f44_bounds: tuple[float, ...] = (0.1, 1.0, 10.0)
    #: Table 4.4: SE vs FL, all-round manner, σ = t44_total_noise / C, metrics averaged over the attacked rounds
    t44: tuple[float, ...] = (0.1, 1.0)
    t44_total_noise: float = 0.04
    fl_clients: int = 4  # thesis: 40 clients x 100 random images, batch 20, 5 local epochs, local SGD lr 0.01
    fl_images: int = 8
    fl_batch_size: int = 4
    fl_epochs: int = 5
    fl_lr: float = 0.01
    f47: FLAccuracyConfig = FLAccuracyConfig(clients=10, images=50, batch_size=10, epochs=1, lr=0.05, rounds=6,
                                             runs=((0.1, 0.1), (10.0, 0.1), (0.1, 1.0), (10.0, 1.0), (0.1, 10.0),
                                                   (10.0, 10.0), (10.0, 100.0)))
    evaluator_epochs: int = 8
    delta: float = 1e-5
    grid_images: int = 8  # reconstructions kept per round-1 attack for the image grids
    #: full mode: at most this many attack-rounds per unit (an all-round attack at round t costs t); None: one unit
    #: per sweep
    unit_cost: int | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.images <= DOC_SAMPLES:
            raise ValueError(f"images must be in 1..{DOC_SAMPLES} (one per CIFAR-100 class), got {self.images!r}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {self.rounds!r}")
        rounds = self.attacked_rounds
        if any(not 1 <= t <= self.rounds for t in rounds) or 1 not in rounds:
            raise ValueError(f"attack_rounds must lie in 1..rounds ({self.rounds}) and include 1, got {rounds}")

    @property
    def attacked_rounds(self) -> tuple[int, ...]:
        """The rounds at which the per-round attacks run."""
        return tuple(sorted(self.attack_rounds or range(1, self.rounds + 1)))


QUICK = PrivacyEvalConfig()
FULL = PrivacyEvalConfig(
    images=100, hidden=(1024, 1024, 1024), batch_size=25, rounds=15, attack=AttackConfig(),
    attack_rounds=(1, 5, 10, 15),
    # t43: Table 4.3's cells and (ours) σC = 0.04 at C = 1, the step of §4.2.3's collapse claim, which neither
    # Table 4.1 nor 4.3 has at C = 1 (without it that claim could never be measured in full mode)
    t41=tuple((s, c) for s in (0.001, 0.01, 0.1, 1.0) for c in (0.1, 0.4, 1.0)), t43=(*T43, (1.0, 0.04)),
    curves=((1.0, 0.001), (1.0, 0.01), (1.0, 0.1), (1.0, 1.0), (10.0, 0.001), (10.0, 0.01)),
    f43_sigmas=(0.01, 0.1), f43_bounds=(0.1, 0.4, 1.0, 4.0, 10.0, "median"), f44_bounds=(0.1, 0.4, 1.0, 4.0, 10.0),
    t44=(0.1, 1.0, 10.0), fl_clients=40, fl_images=100, fl_batch_size=20, f47=FLAccuracyConfig(),
    evaluator_epochs=30, grid_images=10, unit_cost=8)

#: The smallest configuration whose central claim the defect test flips (seconds).
TINY = PrivacyEvalConfig(
    images=4, hidden=(256, 256, 256), batch_size=2, rounds=1, attack=AttackConfig(iterations=100, lr=0.05),
    t41=((0.001, 1.0), (1.0, 1.0)), t43=(), t45=(), normal_init=((1.0, 0.001), (1.0, 1.0)), curves=(), f43_sigmas=(),
    f44_bounds=(), t44=(), evaluator_epochs=1, grid_images=2,
    f47=FLAccuracyConfig(clients=2, images=8, batch_size=4, epochs=1, lr=0.05, rounds=1, runs=((1.0, 1.0),),
                         default_init=()))

#: Deliberate defects for the falsification test: each must flip the central claim's verdict.
DEFECTS = {"noise_off": "the UDP client shares its clipped gradient without the Gaussian noise of eq. 4.2"}


def _lit(c: float | str, s: float) -> str:
    return f"C = {c if isinstance(c, str) else format(c, 'g')}, σ = {s:g}"


LEDGER = [
    # Table 4.1 / 4.3, Fig. 4.1: the noise ladder
    Claim("psnr_falls_with_noise", "The reconstructions get worse as the noise grows, which fits the principle of "
          "DP (C = 1: PSNR 28.61 dB at σ = 0.001, 8.95 dB at σ = 1)", "Table 4.1, Fig. 4.1, Table 4.3",
          "PSNR(C = 1, σ = 0.001) − PSNR(C = 1, σ = 1), round 1, one-round cosine attack", ">", unit="psnr",
          settings=("uniform init", "N(0,1) init"), central=True,
          note="uniform init: dummies drawn from U[0, 1] (ours); N(0,1) init: the reference code's N(0, 1) in the "
               "standardised input space (the thesis says only 'random images')"),
    Claim("low_noise_leaks_at_small_c", "At C = 0.1 and negligible noise the attack still recovers the images "
          "(σ = 0.001: PSNR 21.47 dB, cos-sim 0.97; σ = 1: 9.12 dB)", "Table 4.1",
          "PSNR(C = 0.1, σ = 0.001) − PSNR(C = 0.1, σ = 1), round 1", ">", unit="psnr"),
    Claim("low_noise_cos_sim", "At σ = 0.001 the reconstructions are nearly the images: cosine similarity 0.97 "
          "at C = 0.1 and 0.99 at C = 1", "Table 4.1",
          "cos-sim of the standardised images, ours − the paper's, σ = 0.001, round 1", "≈", unit="cosine",
          settings=("C = 0.1", "C = 1"),
          note="the cosine similarity of standardised images does not depend on the image count, so quick mode can "
               "compare this absolute number"),
    Claim("collapse_between_001_and_004", "When the total noise σC increases from 0.01 to 0.04 all the metrics "
          "change greatly: the quality of the reconstructions drops sharply", "Table 4.1, §4.2.3",
          "PSNR drop from σC = 0.01 to 0.04 minus the largest drop at any other step of the ladder "
          "0.001, 0.01, 0.04, 0.1, 1 (C = 1)", ">", unit="psnr"),
    Claim("larger_c_leaks_at_small_sigma", "At a small base noise a larger clipping bound protects less (σ = "
          "0.001: 28.61 dB at C = 1 vs 21.47 dB at C = 0.1)", "Table 4.1 (observation b)",
          "PSNR(C = 1) − PSNR(C = 0.1) at σ = 0.001, round 1", ">", unit="psnr"),
    Claim("larger_c_protects_at_large_sigma", "At a larger base noise a larger clipping bound protects more (σ = 0.1: "
          "9.29 dB at C = 1 vs 15.92 dB at C = 0.1)", "Table 4.1 (observation b)",
          "PSNR(C = 0.1) − PSNR(C = 1) at σ = 0.1, round 1", ">", unit="psnr"),
    Claim("larger_c_leaks_more", "When the total noise is the same, a larger clipping bound gives better "
          "reconstructions (σC = 0.01: 16.23, 19.37, 20.17 dB for C = 0.1, 1, 10)", "Table 4.3, Fig. 4.5",
          "PSNR(C = 10) − PSNR(C = 0.1) at equal σC, round 1", ">", unit="psnr",
          settings=("σC = 0.001", "σC = 0.01", "σC = 0.1"),
          note="the thesis's own Table 4.3 differences: +4.72 dB (σC = 0.001), +3.94 dB (0.01), +1.35 dB (0.1)"),
    Claim("larger_c_leaks_more_each_step", "When the total noise is the same, a larger clipping bound gives better "
          "reconstructions. For example, when the total noise scale is 0.01, the PSNR is 16.23, 19.37 and 20.17 for "
          "the clipping bound of 0.1, 1, 10", "§4.4.1, Table 4.3", "PSNR(the larger C) − PSNR(the smaller C), "
          "σC = 0.01, round 1", ">", unit="psnr", settings=("C = 0.1 → 1", "C = 1 → 10"), modes=("full",),
          note="the text's example step by step; larger_c_leaks_more reads its two ends. The thesis's own steps are "
               "+3.14 and +0.80 dB: the second is inside the 1-dB margin too (inconclusive on its own numbers); "
               "Table 4.1 has C = 1, σ = 0.01 at 17.84 dB, not Table 4.3's 19.37, and from it the step reads +2.33 dB"),
    Claim("prob_leak_falls_with_noise", "When the total noise increases the attack has a smaller probability of "
          "leak P(pl) (C = 1: 0.57 at σ = 0.001, 0.23 at σ = 1)", "Table 4.3, eq. 4.3",
          "P(pl)(C = 1, σ = 0.001) − P(pl)(C = 1, σ = 1), round 1", ">", unit="probability",
          note="P(pl) with two small evaluators trained here (the thesis's five pretrained ones need downloads)"),
    Claim("sigma_01_defeats_attack", "A base noise of 0.1 already leads to bad attack results (C = 1: 9.24 dB, "
          "as bad as σ = 1: 9.11 dB)", "§4.4.2, Table 4.3",
          "PSNR(C = 1, σ = 0.1) − PSNR(C = 1, σ = 1), round 1", "≈", unit="psnr"),
    # Figs. 4.2-4.4: attack loss over rounds
    Claim("loss_rises_with_sigma", "Under the same clipping bound, a larger base noise gives a larger attack loss",
          "Fig. 4.2", "relative increase of the one-round image MSE (mean over the attacked rounds) from the "
          "smaller to the larger σ", ">", unit="loss",
          settings=("C = 1, σ 0.01 → 0.1", "C = 10, σ 0.001 → 0.01 (ours)"),
          note="attack loss = image MSE (undefined in the thesis; our choice); C = 10 is our extra setting"),
    Claim("all_round_beats_one_round", "All-round-manner attacks have a smaller attack loss than one-round-manner "
          "ones: combining the received gradients increases the leakage (motivating anonymity)", "Fig. 4.2, §4.4.1",
          "(MSE one-round − MSE all-round) / MSE one-round, means over the attacked rounds after the first", ">",
          unit="loss", settings=(_lit(1.0, 0.01), _lit(1.0, 0.1), _lit(10.0, 0.01) + " (ours)"),
          note="we read Fig. 4.2's unstated clipping bound as C = 1; at C = 10 per-layer clipping does not bind "
               "(our extra settings)"),
    Claim("all_round_beats_one_round_ladder", "All-round-manner attacks have a smaller attack loss than one-round-"
          "manner ones", "Fig. 4.2, §4.4.1", "(MSE one-round − MSE all-round) / MSE one-round, means over the "
          "attacked rounds after the first", ">", unit="loss", settings=(_lit(1.0, 0.001), _lit(1.0, 1.0)),
          modes=("full",), note="the rest of the card's full-mode σ ladder at C = 1 (0.001, 0.01, 0.1, 1); "
          "all_round_beats_one_round reads σ = 0.01 and 0.1"),
    Claim("f43_loss_rises_with_c", "Under the same base noise, a larger clipping bound gives a larger attack loss, "
          "since the total noise increases (our reading)", "Fig. 4.3",
          "relative change of the one-round image MSE (mean over the attacked rounds), C = 10 vs C = 0.1, σ = 0.1",
          ">", unit="loss"),
    Claim("f43_loss_falls_with_c_literal", "As the clipping bound increases, the attack loss decreases (the printed "
          "words, which contradict their reason and Table 4.3)", "Fig. 4.3",
          "relative change of the one-round image MSE (mean over the attacked rounds), C = 10 vs C = 0.1, σ = 0.1",
          "<", unit="loss"),
    Claim("median_like_small_c", "The attack loss of the median clipping bound is similar to that of a smaller "
          "fixed clipping bound", "Fig. 4.3",
          "relative difference of the one-round image MSE (mean over the attacked rounds), median vs C = 0.1, "
          "σ = 0.1", "≈", unit="loss"),
    Claim("median_leaks_more_at_small_sigma", "The median clipping bound may lead to weaker privacy protection "
          "under a smaller base noise scale since the total noise scale is not large enough", "Fig. 4.3, Table 4.3",
          "PSNR(median) − PSNR(C = 1), round 1, at the same σ", ">", unit="psnr",
          settings=("σ = 0.001", "σ = 0.01"), modes=("full",),
          note="'weaker' read against C = 1, the chapter's default fixed bound (ours); Table 4.3: +1.40 and +7.40 dB. "
               "Table 4.1 has C = 1, σ = 0.001 at 28.61 dB, not Table 4.3's 26.97: against it the median's 28.37 dB "
               "is 0.24 dB lower"),
    Claim("median_usable_at_large_sigma", "When the base noise scale is large, the median clipping bound method can "
          "be chosen", "Fig. 4.3, Table 4.3", "PSNR(median) − PSNR(C = 1), round 1, σ = 1", "≈", unit="psnr",
          modes=("full",), note="read as protection like C = 1's (ours); Table 4.3: −0.19 dB. At σ = 1 every bound's "
          "attack fails (Table 4.3: 8.6-9.1 dB), so any two bounds pass this"),
    Claim("f44_interior_optimum", "Under the same total noise and a small base noise, increasing the clipping bound "
          "first decreases and then increases the attack loss", "Fig. 4.4",
          "(min(MSE at C = 0.1, MSE at C = 10) − MSE at C = 1) / MSE at C = 1, one-round, mean over the attacked "
          "rounds, σC = 0.01", ">", unit="loss"),
    # Table 4.4 / Fig. 4.6: SE vs FL
    Claim("fl_leaks_more_than_se", "Most metrics show that FL may have a higher probability of privacy leakage "
          "than SE learning (PSNR 12.56 vs 12.42 dB at C = 0.1, 12.76 vs 12.40 dB at C = 1)", "Table 4.4",
          "PSNR(FL) − PSNR(SE), all-round manner, means over the attacked rounds, σC = 0.04", ">", unit="psnr",
          settings=("C = 0.1", "C = 1"),
          note="the thesis's own Table 4.4 differences (+0.14, +0.36 dB) are inside the 1-dB margin: inconclusive "
               "on its own numbers"),
    Claim("fl_attack_recovers", "The attack on an FL client recovers information (PSNR 12.56-12.76 dB, against "
          "9.11 dB at σ = 1 in SE)", "Table 4.4",
          "PSNR(FL, all-round, mean over the attacked rounds) − PSNR(SE, C = 1, σ = 1, round 1)", ">", unit="psnr",
          settings=("C = 0.1", "C = 1")),
    Claim("se_loss_rises_faster_than_fl", "For SE learning the attack loss has a great increase after a few rounds, "
          "while FL has a mild one", "Fig. 4.6",
          "rise of the all-round image MSE from the first to the last attacked round, relative, SE minus FL", ">",
          unit="loss", settings=("C = 0.1", "C = 1")),
    # Table 4.5
    Claim("cosine_better_at_small_noise", "When the total noise is smaller than 0.01 the cosine attack gives better "
          "images than the Euclidean one (C = 0.1, σ = 0.01: 20.73 vs 17.12 dB)", "Table 4.5, §4.4.3",
          "PSNR(cosine) − PSNR(Euclidean), C = 0.1, σ = 0.01 (σC = 0.001), round 1", ">", unit="psnr"),
    Claim("euclidean_better_at_large_noise", "When the total noise increases the Euclidean attack gives better "
          "images (higher PSNR)", "Table 4.5, §4.4.3", "PSNR(Euclidean) − PSNR(cosine), round 1", ">", unit="psnr",
          settings=(_lit(1.0, 0.1), _lit(10.0, 0.01), _lit(10.0, 0.1)),
          note="the thesis's own Table 4.5 differences: +2.90, +1.71 and +0.62 dB (the last inside the 1-dB margin: "
               "inconclusive on its own numbers)"),
    # Fig. 4.7
    Claim("f47_larger_c_more_accurate", "When the total noise is small, increasing the clipping bound improves "
          "accuracy: at σC = 1 accuracy rises from 34 % (C = 0.1) to 44 % (C = 10)", "Fig. 4.7, §4.4.2",
          "final test accuracy, C = 10 − C = 0.1, at equal σC (UDP-FL, CNN6, CIFAR-10)", ">",
          settings=("σC = 0.1", "σC = 1", "σC = 0.1, default init"),
          note="CNN6 starts from He initialisation (ours); from the default U(±1/√fan_in) it does not leave chance "
               "(the setting 'default init')"),
    Claim("f47_large_noise_destroys", "When increasing the clipping bound after the noise scale is larger than 10, "
          "the FL accuracy can be destroyed due to the large total noise scale", "Fig. 4.7, §4.4.2",
          "final test accuracy, C = 10 − C = 0.1", "<", settings=("equal σC = 10", "base σ = 10, σC 1 → 100"),
          note="two readings of 'the noise scale': the total noise σC, the figure's axis (C 0.1 → 10 at σC = 10; "
               "at σC = 100 every C is at chance), or the base noise σ, where raising C from 0.1 to 10 raises σC "
               "from 1 to 100. Until 2026-12-03 the ledger compared σC = 100 with σC = 1 at C = 10: more noise, "
               "not a larger C"),
    # §4.4.2: ε
    Claim("epsilon_at_sigma_one", "With RDP accounting and δ = 1e-5, a base noise of σ = 1 gives ε = 8", "§4.4.2",
          "(ε(σ = 1) − 8) / 8", "≈", unit="epsilon", settings=("the thesis's convention", "the mechanism as run"),
          note="the thesis's convention: sensitivity C/n, q = 0.25, 15 steps (its inputs are not stated: batch 25 "
               "of the 100 images and the 15 rounds, kept because they reproduce its number, so this setting checks "
               "that a natural reading of the setup gives 8, not the thesis's accounting). The mechanism as run: "
               "sensitivity 2C per tensor (no per-image clipping), no subsampling, every tensor and round composed"),
    Claim("epsilon_large_below_one", "When the base noise is smaller than one, ε is much larger than 100", "§4.4.2",
          "(smallest ε over the σ < 1 the chapter attacks − 100) / 100", ">", unit="epsilon",
          settings=("the thesis's convention", "the mechanism as run", "the thesis's convention, the thesis's σ",
                    "the mechanism as run, the thesis's σ"),
          note="as written, over every σ < 1 the chapter attacks, Table 4.4's σ among them (0.04/C, so 0.4 at "
               "C = 0.1: ours, the thesis does not state it); ', the thesis's σ': only the σ of its tables (at most "
               "0.1 below one; its next sentence: 'the noise scale of 0.1 can lead to bad attack results'). No "
               "accountant that gives 8 at σ = 1 can give more than 100 at every σ < 1"),
    # §4.3 analysis
    Claim("lemma7_bound", "Lemma 7: the noisy clipped gradient satisfies ‖ḡ‖ ≤ k1‖g‖ with k1 = min(1, C/‖g‖) + "
          "(σ/√n)·C/‖g‖", "Lemma 7, eqs. 4.4-4.5, appendix G",
          "fraction of the chapter's (C, σ) whose round-1 gradient, flat-clipped and noised as eq. 4.1-4.2, "
          "violates ‖ḡ‖ ≤ k1‖g‖", "≈", unit="probability", settings=("√n, as printed", "√d, ours"),
          note="√d: the norm of d-dimensional Gaussian noise is ≈ σC√d/n, not σC/√n (Lemma 7 as printed uses √n)"),
    Claim("corollary2_tracks_attack", "Increasing the noise scale and clipping bound leads to a higher bound on the "
          "attack's convergence (Corollary 2), i.e. a worse reconstruction", "Corollary 2, eqs. 4.8-4.11, §4.3",
          "fraction of pairs of round-1 cosine settings that the bound factor 1/k3 (s = 0.5) orders as the measured "
          "image MSE, minus 0.5", ">", unit="probability", settings=("√n, as printed", "√d, ours")),
    # the paper's absolute numbers (full mode: the paper's scale)
    Claim("t41_values", "Table 4.1's PSNRs", "Table 4.1", "mean |PSNR ours − PSNR paper| over the table's cells",
          "≈", unit="psnr", modes=("full",)),
    Claim("t41_cos_sim_values", "Table 4.1's cosine similarities", "Table 4.1",
          "mean |Cos-sim ours − Cos-sim paper| over the table's cells", "≈", unit="cosine", modes=("full",)),
    Claim("t41_euc_dis_values", "Table 4.1's Euclidean distances", "Table 4.1",
          "mean |Euc-dis ours / Euc-dis paper − 1| over the table's cells", "≈", unit="relative", modes=("full",),
          note="Euc-dis between standardised images (our reading: the thesis does not say which scale; its σ = 1 "
               "rows, 73-75, are the distance of a random dummy from an image, ≈ √(2·3,072) = 78 standardised)"),
    Claim("t43_values", "Table 4.3's PSNRs", "Table 4.3", "mean |PSNR ours − PSNR paper| over the table's cells",
          "≈", unit="psnr", modes=("full",)),
    Claim("t44_values", "Table 4.4's PSNRs", "Table 4.4", "mean |PSNR ours − PSNR paper| over the rows", "≈",
          unit="psnr", settings=("SE", "FL"), modes=("full",)),
    Claim("t45_values", "Table 4.5's PSNRs (Euclidean rows)", "Table 4.5",
          "mean |PSNR ours − PSNR paper| over the Euclidean rows", "≈", unit="psnr", modes=("full",)),
    Claim("f47_values", "Fig. 4.7's accuracies at σC = 1: 34 % (C = 0.1), 44 % (C = 10)", "Fig. 4.7, §4.4.2",
          "final test accuracy − the paper's", "≈", settings=("C = 0.1", "C = 10"), modes=("full",)),
]


def sigma_at(total_noise: float, bound: float) -> float:
    """σ = σC / C, rounded to 10 significant digits (0.01 / 0.1 is 0.1, not 0.09999999999999999)."""
    return float(f"{total_noise / bound:.10g}")


class PsnrPair(NamedTuple):
    """One setting of a claim that reads PSNR(first) − PSNR(second), two round-1 one-round cosine attacks."""

    setting: str
    first: tuple[float | str, float]  # (C, σ)
    second: tuple[float | str, float]
    init: str = "uniform"  # the dummies of both attacks (:class:`Setting`)


#: The claims that read a PSNR difference of two (C, σ), the settings of each, and the thesis's table whose PSNRs
#: the claim quotes ("T4.1" or "T4.3"): :func:`_measure` reads them on our attacks, :func:`paper_values` on the table
PSNR_PAIRS: dict[str, tuple[str, tuple[PsnrPair, ...]]] = {
    "psnr_falls_with_noise": ("T4.1", (PsnrPair("uniform init", (1.0, 0.001), (1.0, 1.0)),
                                       PsnrPair("N(0,1) init", (1.0, 0.001), (1.0, 1.0), "normal"))),
    "low_noise_leaks_at_small_c": ("T4.1", (PsnrPair("", (0.1, 0.001), (0.1, 1.0)),)),
    "larger_c_leaks_at_small_sigma": ("T4.1", (PsnrPair("", (1.0, 0.001), (0.1, 0.001)),)),
    "larger_c_protects_at_large_sigma": ("T4.1", (PsnrPair("", (0.1, 0.1), (1.0, 0.1)),)),
    "larger_c_leaks_more_each_step": ("T4.3", tuple(PsnrPair(f"C = {a:g} → {b:g}", (b, sigma_at(0.01, b)),
                                                             (a, sigma_at(0.01, a)))
                                                    for a, b in ((0.1, 1.0), (1.0, 10.0)))),
    "larger_c_leaks_more": ("T4.3", tuple(PsnrPair(f"σC = {total:g}", (10.0, sigma_at(total, 10)),
                                                   (0.1, sigma_at(total, 0.1))) for total in (0.001, 0.01, 0.1))),
    "sigma_01_defeats_attack": ("T4.3", (PsnrPair("", (1.0, 0.1), (1.0, 1.0)),)),
    "median_leaks_more_at_small_sigma": ("T4.3", tuple(PsnrPair(f"σ = {sigma:g}", ("median", sigma), (1.0, sigma))
                                                       for sigma in (0.001, 0.01))),
    "median_usable_at_large_sigma": ("T4.3", (PsnrPair("", ("median", 1.0), (1.0, 1.0)),)),
}
#: Table 4.5's claims: the objective whose PSNR comes first, and (setting, (C, σ)) per setting, both round 1
OBJECTIVE_PAIRS: dict[str, tuple[str, tuple[tuple[str, tuple[float, float]], ...]]] = {
    "cosine_better_at_small_noise": ("cosine", (("", (0.1, 0.01)),)),
    "euclidean_better_at_large_noise": ("euclidean", tuple((_lit(c, s), (c, s))
                                                           for c, s in ((1.0, 0.1), (10.0, 0.01), (10.0, 0.1)))),
}
#: The SE-vs-FL claims (Table 4.4, Fig. 4.6): the clipping bounds they read (σC = 0.04), and the SE attack at
#: (C, σ) = (1, 1), round 1 (Table 4.3), that fl_attack_recovers sets the FL attack against
T44_BOUNDS: tuple[float, ...] = (0.1, 1.0)
SE_FLOOR: tuple[float, float] = (1.0, 1.0)


def _thesis_psnr(table: str, bound: float | str, sigma: float) -> float:
    """The PSNR the thesis's Table 4.1 or 4.3 (``table``: "T4.1" or "T4.3") reports for (C, σ), round 1."""
    return T41[(sigma, bound)][0] if table == "T4.1" else T43[(bound, sigma)][0]


def sigma_scale(images: int, parameters: int) -> float:
    """σ_run / σ_doc = (n / 100) √(d_doc / d): keeps the per-coordinate noise relative to the signal (spec §8)."""
    return images / DOC_SAMPLES * math.sqrt(DOC_PARAMETERS / parameters)


def thesis_epsilon(sigma: float, delta: float) -> float:
    """ε in the thesis's convention (spec A4.7): sensitivity C/n, q = 0.25, 15 steps, improved conversion."""
    return udp_epsilon(sigma, tensors=1, delta=delta, sensitivity="per_sample", **THESIS_ACCOUNTING)


def _settings(cfg: PrivacyEvalConfig) -> list[Setting]:
    """Every SE attack of the chapter, without repeats."""
    out = [Setting(c, s) for s, c in cfg.t41] + [Setting(c, s) for c, s in cfg.t43]
    out += [Setting(c, s, objective=o) for c, s in cfg.t45 for o in ("cosine", "euclidean")]
    out += [Setting(c, s, init="normal") for c, s in cfg.normal_init]
    for t in cfg.attacked_rounds:
        for c, s in cfg.curves:
            out += [Setting(c, s, round=t), Setting(c, s, manner="all-round", round=t)]
        out += [Setting(c, s, round=t) for c, s in _one_round_curves(cfg)]
        out += [Setting(c, sigma_at(cfg.t44_total_noise, c), manner="all-round", round=t) for c in cfg.t44]
    return list(dict.fromkeys(out))


def _one_round_curves(cfg: PrivacyEvalConfig) -> list[tuple[float | str, float]]:
    """(C, σ) of Figs. 4.3 and 4.4 (one-round manner)."""
    pairs = [(c, s) for s in cfg.f43_sigmas for c in cfg.f43_bounds]
    pairs += [(c, sigma_at(cfg.f44_total_noise, c)) for c in cfg.f44_bounds]
    return list(dict.fromkeys(pairs))


class SingleEnd:
    """The SE client of one run and what the attacker sees: its images, the trajectory W^0, W^1, ..., the shared
    noisy gradients of every (C, σ), the dummy images and the P(pl) evaluators — each computed on first use, so a
    full-mode run that reads every unit back computes none of them."""

    def __init__(self, cfg: PrivacyEvalConfig, seed: int, noise: float = 1.0) -> None:
        self.cfg, self.seed, self.noise = cfg, seed, noise

    @cached_property
    def data(self) -> tuple[torch.Tensor, torch.Tensor]:
        """n training images of n different CIFAR-100 classes (the first of each of n random classes among the
        fixed first 1,117 training images, whatever the data root holds)."""
        train = load_dataset("cifar100", train=True, normalize=False, subset="quick")
        classes = torch.randperm(train.num_classes, generator=make_generator(self.seed, "classes"))[:self.cfg.images]
        idx = torch.stack([torch.nonzero(train.y == c)[0, 0] for c in classes])
        return train.x[idx], train.y[idx]

    def model(self) -> torch.nn.Module:
        return fresh_model("mlp", self.seed, in_features=3072, hidden=self.cfg.hidden, num_classes=100)

    @cached_property
    def dimension(self) -> int:
        return num_parameters(self.model())

    @cached_property
    def scale(self) -> float:
        return sigma_scale(self.cfg.images, self.dimension)

    @cached_property
    def trajectory(self):
        x, y = self.data
        return single_end_trajectory(self.model(), x, y, rounds=self.cfg.rounds, batch_size=self.cfg.batch_size,
                                     generator=make_generator(self.seed, "se-batches"))

    def shared(self, bound: float | str, sigma: float, t: int, *, mode: str | None = None) -> Params:
        """ḡ_t of (C, σ) (eqs. 4.1-4.2), clipped per layer, at the running median (C = "median") or, with
        ``mode="flat"``, as eq. 4.1 prints it; each (C, σ, mode, round) has its own noise stream."""
        return self._privatize(bound, sigma * self.scale * self.noise, t, mode,
                               make_generator(self.seed, "udp-noise", str(bound), repr(sigma), mode or "", t))

    def clipped(self, bound: float | str, t: int, *, mode: str | None = None) -> Params:
        """ĝ_t: the shared gradient without its noise."""
        return self._privatize(bound, 0.0, t, mode, torch.Generator())

    def _privatize(self, bound: float | str, noise_multiplier: float, t: int, mode: str | None,
                   generator: torch.Generator) -> Params:
        mode = mode or ("median" if bound == "median" else "per_layer")
        grads = self.trajectory.grads
        median = None
        if mode == "median":  # the running median has seen rounds 1..t-1; privatize adds round t
            median = RunningMedian()
            for g in grads[:t - 1]:
                privatize(g, bound=1.0, noise_multiplier=0.0, num_samples=self.cfg.images,
                          generator=torch.Generator(), mode="median", median=median)
        return privatize(grads[t - 1], bound=1.0 if mode == "median" else float(bound),
                         noise_multiplier=noise_multiplier, num_samples=self.cfg.images, generator=generator,
                         mode=mode, median=median)

    @cached_property
    def median_bound(self) -> float:
        """Round 1's median bound, averaged over the layers (the running median of round 1 is its own norms)."""
        return float(torch.stack([g.norm() for g in self.trajectory.grads[0].values()]).mean())

    def dummies(self, init: str) -> torch.Tensor:
        """The dummy images every attack starts from: U[0, 1] pixels ("uniform") or N(0, 1) in the dataset's
        standardised space, i.e. mean + std·N(0, 1) in pixels ("normal", the reference code's choice)."""
        shape = (1, *self.data[0].shape)
        if init == "uniform":
            return torch.rand(shape, generator=make_generator(self.seed, "dummy"))
        if init == "normal":
            info = DATASETS["cifar100"]
            mean, std = (torch.tensor(v).view(1, 1, -1, 1, 1) for v in (info.mean, info.std))
            return mean + std * torch.randn(shape, generator=make_generator(self.seed, "dummy", "normal"))
        raise ValueError(f"init must be 'uniform' or 'normal', got {init!r}")

    @cached_property
    def evaluators(self) -> list[torch.nn.Module]:
        """Two small CIFAR-100 classifiers trained on the fixed first 1,117 training images: the stand-ins for the
        thesis's five pretrained evaluators of P(pl), whose weights need the internet."""
        train = load_dataset("cifar100", train=True, normalize=False, subset="quick")
        models = []
        for name, kwargs in (("mlp", dict(in_features=3072, hidden=(256,), num_classes=100)),
                             ("cnn_cifar", dict(num_classes=100))):
            trainer = LocalTrainer(fresh_model(name, self.seed, **kwargs))
            flat = get_flat(trainer.model)
            all_idx = torch.arange(len(train))
            for epoch in range(self.cfg.evaluator_epochs):
                update, _ = trainer.train(flat, train.x, train.y, all_idx, lr=0.05,
                                          opt=LocalSGD(1, 32, momentum=0.9),
                                          generator=make_generator(self.seed, f"evaluator-{name}", epoch))
                flat = flat - update
            set_flat(trainer.model, flat)
            models.append(trainer.model.eval())
        return models

    def metrics(self, rec: torch.Tensor, truth: torch.Tensor, total_noise: float) -> dict[str, Any]:
        """PSNR, cosine similarity, Euclidean distance, SSIM, P(pl) and image MSE of a reconstruction (means over
        the images), and under ``"per_image"`` the PSNR, cosine similarity, MSE and leak indicator (pl_j > 0) of
        each image (seven significant digits), so a difference of two attacks on the same images gets its
        image-sampling bound."""
        cs, ed = evaluator_similarity(self.evaluators, rec, truth)
        per_image = {"psnr": psnr(rec, truth), "cos_sim": cosine_similarity(rec, truth),
                     "mse": (rec - truth).pow(2).flatten(1).mean(1),
                     "leaks": (leakage_scores(cs, ed, total_noise=total_noise) > 0).float()}
        return {"psnr": float(per_image["psnr"].mean()), "cos_sim": float(per_image["cos_sim"].mean()),
                "euc_dis": float(euclidean_distance(rec, truth).mean()), "ssim": float(ssim(rec, truth).mean()),
                "prob_leak": leakage_probability(cs, ed, total_noise=total_noise),
                "mse": float((rec - truth).pow(2).mean()),
                "per_image": {k: [float(f"{v:.7g}") for v in t.tolist()] for k, t in per_image.items()}}

    def attack(self, members: list[Setting]) -> dict[str, dict]:
        """Run ``members`` (sharing objective, manner and round) as one batched :func:`reconstruct` call; the
        metrics of each, and the first ``grid_images`` reconstructions of round-1 attacks as uint8 bytes."""
        objective, manner, t = members[0].objective, members[0].manner, members[0].round
        traj, (x, y) = self.trajectory, self.data
        first = 1 if manner == "all-round" else t
        rounds = {n: torch.stack([w[n] for w in traj.weights[first - 1:t]]) for n in traj.weights[0]}
        targets = [_sum(self.shared(*s.pair, r) for r in range(first, t + 1)) for s in members]
        targets = {n: torch.stack([g[n] for g in targets]) for n in traj.weights[0]}
        x0 = torch.cat([self.dummies(s.init) for s in members])
        out = _reconstruct(self.model(), rounds, y.expand(len(members), -1), targets, x0,
                           dataclasses.replace(self.cfg.attack, objective=objective))
        result = {}
        for s, rec in zip(members, out):
            entry = self.metrics(rec, x, s.total_noise(self.median_bound))
            if t == 1:
                entry["images"] = _encode(rec[:self.cfg.grid_images])
            result[s.name] = entry
        return result


def _reconstruct(model: torch.nn.Module, rounds: Params, labels: torch.Tensor, targets: Params, x0: torch.Tensor,
                 cfg: AttackConfig) -> torch.Tensor:
    """:func:`reconstruct` on pixels in [0, 1], run on :func:`~fedlib.experiments.common.device` (the GPU when
    there is one): the reconstructions, back on the CPU. The inputs are built on the CPU, so a GPU run starts from
    the same dummies and targets; its reconstructions differ from the CPU's only by floating-point rounding, which
    2,500 signed-Adam steps can amplify (tests/test_attacks.py states the agreement)."""
    dev = device()
    move = lambda p: {n: t.to(dev) for n, t in p.items()}  # noqa: E731
    out, _ = reconstruct(model.to(dev), move(rounds), labels.to(dev), move(targets), x0.to(dev), cfg=cfg,
                         box=(0.0, 1.0))
    return out.cpu()


def _encode(images: torch.Tensor) -> str:
    """Images in [0, 1] as base64 of their uint8 pixels (small enough for a unit file)."""
    return base64.b64encode(np.round(images.clamp(0, 1).numpy() * 255).astype(np.uint8).tobytes()).decode()


def _decode(text: str, shape: tuple[int, ...]) -> np.ndarray:
    pixels = np.frombuffer(base64.b64decode(text), dtype=np.uint8).astype(np.float32) / 255
    return pixels.reshape(-1, *shape)


def _sweeps(cfg: PrivacyEvalConfig, settings: list[Setting]) -> list[tuple[str, list[Setting]]]:
    """The attack units: settings grouped by (objective, manner, round), each group split so that a unit holds at
    most ``unit_cost`` attack-rounds (an all-round attack at round t matches t rounds)."""
    groups: dict[tuple, list[Setting]] = {}
    for s in settings:
        groups.setdefault((s.objective, s.manner, s.round), []).append(s)
    units = []
    for (objective, manner, t), members in groups.items():
        cost = t if manner == "all-round" else 1
        parts = 1 if cfg.unit_cost is None else math.ceil(len(members) / max(1, cfg.unit_cost // cost))
        size = math.ceil(len(members) / parts)  # equal parts
        for k in range(parts):
            part = "" if parts == 1 else f"/part{k + 1}"
            units.append((f"attack/{objective}/{manner}/round{t}{part}", members[k * size:(k + 1) * size]))
    return units


def _se_spec(cfg: PrivacyEvalConfig) -> dict:
    """Everything the SE client and its attacker depend on (the unit identity of every attack sweep)."""
    return {"images": cfg.images, "hidden": cfg.hidden, "batch_size": cfg.batch_size, "rounds": cfg.rounds,
            "attack": cfg.attack, "evaluator_epochs": cfg.evaluator_epochs, "grid_images": cfg.grid_images,
            "data": "cifar100 quick subset, first image of n random classes"}


def run(config: PrivacyEvalConfig = QUICK, *, mode: str = "quick", seed: int = 0, progress: bool = False,
        units: Units | None = None, defect: str | None = None) -> Results:
    """Run the chapter and return its :class:`~fedlib.results.Results` (full mode: as units)."""
    if defect is not None and defect not in DEFECTS:
        raise ValueError(f"defect must be one of {sorted(DEFECTS)} or None, got {defect!r}")
    began = time.perf_counter()
    cfg = config
    units = units or Units("privacy_eval", mode, seed)
    res = Results("privacy_eval", mode, seed, dataclasses.asdict(cfg))
    noise = 0.0 if defect == "noise_off" else 1.0
    subset = "quick" if mode == "quick" else "full"
    # data needs first: the FL attack setting (Table 4.4) needs fl_clients × fl_images CIFAR-100 training images,
    # Fig. 4.7 the CIFAR-10 split of this mode
    fl_blocked = _check_fl_data(cfg, subset)
    f47_blocked = _check_f47_data(subset)
    if fl_blocked:
        units.block("t44-fl/*", fl_blocked)
    if f47_blocked:
        units.block("f47/*", f47_blocked)

    se = SingleEnd(cfg, seed, noise)
    settings = _settings(cfg)
    spec = {**_se_spec(cfg), "noise": noise}
    metrics: dict[Setting, dict | None] = {}
    for unit_id, members in _progress(_sweeps(cfg, settings), progress):
        out = units.run(unit_id, {**spec, "settings": [s.name for s in members]}, lambda m=members: se.attack(m))
        metrics.update({s: None if out is None else out[s.name] for s in members})
    mechanism = units.run("mechanism", {**spec, "pairs": _mechanism_pairs(cfg)}, lambda: _mechanism(cfg, se))

    truth = se.data[0]
    res.add_images("truth", truth[:cfg.grid_images])
    for s, m in metrics.items():
        if s.round == 1 and s.manner == "one-round" and s.init == "uniform" and m is not None:
            res.add_images(s.name, _decode(m["images"], tuple(truth.shape[1:])))
    dimension = num_parameters(se.model())
    fl = {} if fl_blocked else _fl_metrics(cfg, units, Federated(cfg, se, seed, subset, noise), progress)
    f47 = {} if f47_blocked else _f47(cfg, units, seed, subset, noise, progress)
    tables = _Tables(res, cfg, metrics, mechanism, dimension, fl, f47)
    f47_test = None if f47_blocked else len(load_dataset("cifar10", train=False, subset=subset))
    _measure(res, tables, tables.build(), f47_test)
    res.evaluate(LEDGER)
    res.elapsed_s = time.perf_counter() - began
    return res


def _check_fl_data(cfg: PrivacyEvalConfig, subset: str) -> str | None:
    """Why the FL attack units cannot run here (None if they can)."""
    try:
        train = load_dataset("cifar100", train=True, normalize=False, subset=subset)
    except blocking_errors(subset) as err:
        return f"Table 4.4's FL setting: {err}"
    need = cfg.fl_clients * cfg.fl_images
    if need > len(train):
        return (f"Table 4.4's FL setting needs fl_clients × fl_images = {need} CIFAR-100 training images; the "
                f"{subset} split has {len(train)}")
    return None


def _check_f47_data(subset: str) -> str | None:
    try:
        for train in (True, False):
            load_dataset("cifar10", train=train, normalize=False, subset=subset)
    except blocking_errors(subset) as err:
        return f"Fig. 4.7: {err}"
    return None


def _mechanism_pairs(cfg: PrivacyEvalConfig) -> list[tuple[float, float]]:
    """Fixed-C round-1 pairs of the cosine attacks (Lemma 7, Corollary 2, SNR) and the curves' pairs (√t)."""
    pairs = [s.pair for s in _settings(cfg) if s.round == 1 and s.objective == "cosine" and s.bound != "median"]
    return list(dict.fromkeys(pairs + list(cfg.curves)))


def _norm(p: Params) -> float:
    return float(torch.sqrt(sum(v.double().pow(2).sum() for v in p.values())))


def _sub(a: Params, b: Params) -> Params:
    return {k: a[k] - b[k] for k in a}


def _sum(terms: Iterable[Params]) -> Params:
    total: Params = {}
    for p in terms:
        total = {k: total[k] + v for k, v in p.items()} if total else dict(p)
    return total


def _mechanism(cfg: PrivacyEvalConfig, se: SingleEnd) -> dict:
    """Per (C, σ): round 1's ‖g‖ and, flat-clipped and noised as eq. 4.1-4.2 prints it, ‖ḡ‖ (Lemma 7); per round
    the norms of the one-round and all-round targets' signal and noise (per layer, as run; √t); and round 1's
    median bound."""
    g1 = se.trajectory.grads[0]
    out = {}
    for bound, sigma in _mechanism_pairs(cfg):
        signal_sum, noise_sum, per_round = None, None, []
        for t in range(1, cfg.rounds + 1):
            c = se.clipped(bound, t)
            n = _sub(se.shared(bound, sigma, t), c)
            signal_sum = c if signal_sum is None else _sum((signal_sum, c))
            noise_sum = n if noise_sum is None else _sum((noise_sum, n))
            per_round.append({"round": t, "signal": _norm(c), "noise": _norm(n), "sum_signal": _norm(signal_sum),
                              "sum_noise": _norm(noise_sum)})
        out[f"{bound}/{sigma}"] = {"grad": _norm(g1), "flat_noisy": _norm(se.shared(bound, sigma, 1, mode="flat")),
                                   "rounds": per_round}
    return {"pairs": out, "median_bound": se.median_bound}


class Federated:
    """Table 4.4's FL setting: one UDP-FL run per C (the noise changes the global model, so each C has its own
    trajectory), trained on first use; client 0 is the attacked client."""

    def __init__(self, cfg: PrivacyEvalConfig, se: SingleEnd, seed: int, subset: str, noise: float) -> None:
        self.cfg, self.se, self.seed, self.subset, self.noise = cfg, se, seed, subset, noise
        self._runs: dict[float, dict] = {}

    @cached_property
    def data(self):
        train = load_dataset("cifar100", train=True, normalize=False, subset=self.subset)
        idx = torch.randperm(len(train), generator=make_generator(self.seed, "fl-images"))
        return train, idx[:self.cfg.fl_clients * self.cfg.fl_images].view(self.cfg.fl_clients, -1)

    def run(self, bound: float) -> dict:
        """The global weights of every round, client 0's privatised uploads and its clean round-1 update's norm."""
        if bound not in self._runs:
            cfg, (train, idx) = self.cfg, self.data
            model = self.se.model()
            local = LocalSGD(cfg.fl_epochs, cfg.fl_batch_size)
            fl_cfg = FLConfig(rounds=cfg.rounds, clients_per_round=cfg.fl_clients, local=local, lr=cfg.fl_lr,
                              weighting="uniform", seed=self.seed)
            start = get_flat(model).clone()
            sigma = sigma_at(cfg.t44_total_noise, bound) * self.se.scale * self.noise
            trace = run_federated(model, train, list(idx), None, fl_cfg, udp_fl(bound, sigma),
                                  history="updates", device=device()).history
            update, _ = LocalTrainer(model).train(start, train.x, train.y, idx[0], lr=cfg.fl_lr, opt=local,
                                                  generator=make_generator(self.seed, "fl-update-norm"))
            self._runs[bound] = {"weights": [as_dict(model, w) for w in trace.models[:cfg.rounds]],
                                 "shared": [as_dict(model, u[0]) for u in trace.updates],
                                 "update_norm": float(update.norm())}
        return self._runs[bound]

    def attack(self, bounds: list[float], t: int) -> dict[str, dict]:
        """All-round attacks on client 0 after round t, one per C, as one batched :func:`reconstruct` call."""
        train, idx = self.data
        x, y = train.x[idx[0]], train.y[idx[0]]
        runs = [self.run(c) for c in bounds]
        names = list(runs[0]["weights"][0])
        rounds = {n: torch.stack([torch.stack([w[n] for w in r["weights"][:t]]) for r in runs]) for n in names}
        targets = {n: torch.stack([sum(g[n] for g in r["shared"][:t]) for r in runs]) for n in names}
        x0 = self.se.dummies("uniform")[:, :len(y)].expand(len(bounds), -1, -1, -1, -1)
        rec = _reconstruct(self.se.model(), rounds, y.expand(len(bounds), -1), targets, x0, self.cfg.attack)
        return {f"{c:g}": {**self.se.metrics(r, x, self.cfg.t44_total_noise), "update_norm_round1": run["update_norm"]}
                for c, r, run in zip(bounds, rec, runs)}


def _fl_metrics(cfg: PrivacyEvalConfig, units: Units, fed: Federated, progress: bool) -> dict[tuple[float, int],
                                                                                              dict | None]:
    """Table 4.4's FL side: per attacked round, one unit attacking client 0 of every C's run (split so that a unit
    holds at most ``unit_cost`` attack-rounds); (C, round) -> metrics."""
    spec = {**_se_spec(cfg), "noise": fed.noise, "total_noise": cfg.t44_total_noise, "subset": fed.subset,
            "fl": (cfg.fl_clients, cfg.fl_images, cfg.fl_batch_size, cfg.fl_epochs, cfg.fl_lr)}
    out = {}
    for t in _progress(cfg.attacked_rounds, progress):
        size = max(1, len(cfg.t44) if cfg.unit_cost is None else cfg.unit_cost // t)
        for k in range(0, len(cfg.t44), size):
            bounds = list(cfg.t44[k:k + size])
            unit_id = f"t44-fl/round{t}" + ("" if size >= len(cfg.t44) else "/" + ",".join(f"C={c:g}" for c in bounds))
            res = units.run(unit_id, {**spec, "round": t, "bounds": bounds}, lambda b=bounds, t=t: fed.attack(b, t))
            out.update({(c, t): None if res is None else res[f"{c:g}"] for c in bounds})
    return out


def _f47(cfg: PrivacyEvalConfig, units: Units, seed: int, subset: str, noise: float, progress: bool) -> dict:
    """Fig. 4.7: one UDP-FL training run per (C, σC), CNN6 on CIFAR-10; accuracy on every test image of the mode
    (full: all 10,000) and on the exact ones (not JPEG-decoded) computed inside the unit."""
    f = cfg.f47
    train = load_dataset("cifar10", train=True, normalize=False, subset=subset)
    test = load_dataset("cifar10", train=False, normalize=False, subset=subset)
    exact = pixel_source("cifar10", subset=subset) == 1
    idx = torch.randperm(len(train), generator=make_generator(seed, "f47-images"))[:f.clients * f.images]
    clients = list(idx.view(f.clients, f.images))
    fl_cfg = FLConfig(rounds=f.rounds, clients_per_round=f.clients, local=LocalSGD(f.epochs, f.batch_size), lr=f.lr,
                      weighting="uniform", eval_every=f.rounds, seed=seed)  # the figure shows final accuracy
    out = {}
    for c, total, init in [(c, t, "kaiming") for c, t in f.runs] + [(c, t, "default") for c, t in f.default_init]:
        sigma = sigma_at(total, c) * f.images / DOC_SAMPLES * noise  # σ_run C / n = σ_doc C / 100
        spec = {"f47": dataclasses.replace(f, runs=(), default_init=()), "bound": c, "total_noise": total,
                "sigma_run": sigma, "init": init, "subset": subset,
                "fl": fl_cfg, "algorithm": "udp_fl (ClipPerLayer, GaussianNoise per_sample)", "model": "cnn6",
                "data": "cifar10, pixels in [0, 1]"}

        def train_run(c=c, sigma=sigma, init=init):
            model = fresh_model("cnn6", seed)
            if init == "kaiming":
                kaiming_init(model, make_generator(seed, "init", "cnn6-kaiming"))
            result = run_federated(model, train, clients, test, fl_cfg, udp_fl(c, sigma), progress=progress,
                                   device=device())
            set_flat(model, result.params)
            with torch.no_grad():
                pred = model.eval()(test.x[exact]).argmax(1)
            return result.summary(exact_accuracy=float((pred == test.y[exact]).float().mean()),
                                  exact_images=int(exact.sum()))

        unit_id = f"f47/C={c:g}/σC={total:g}" + ("/default-init" if init == "default" else "")
        out[(c, total, init)] = train_unit(units, unit_id, spec, train_run)
    return out


@torch.no_grad()
def kaiming_init(model: torch.nn.Module, generator: torch.Generator, negative_slope: float = 0.2) -> torch.nn.Module:
    """He et al. (2015) for LeakyReLU(a): every Conv/Linear weight from N(0, 2 / ((1 + a²) fan_in)), biases 0.

    Ours for Fig. 4.7 (the thesis does not state CNN6's initialisation): from PyTorch's default U(±1/√fan_in) each
    of CNN6's six LeakyReLU(0.2) convolutions shrinks the signal's std by ≈ 0.42, its logits start ≈ 0.007 apart and
    local SGD at the thesis's learning rate stays at chance for the thesis's 15 rounds.
    """
    for module in model.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
            fan_in = module.weight[0].numel()
            std = math.sqrt(2 / ((1 + negative_slope**2) * fan_in))
            module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * std)
            if module.bias is not None:
                module.bias.zero_()
    return model


def _progress(items: Iterable, progress: bool):
    if not progress:
        return items
    from fedlib.progress import progress_bar

    return progress_bar(list(items), desc="units", leave=False)


def _concordance(xs: list[float], ys: list[float]) -> float | None:
    """Fraction of pairs (i, j) with x_i ≠ x_j and y_i ≠ y_j that x and y order the same way (None without any)."""
    same = total = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            if dx != 0 and dy != 0:
                total += 1
                same += (dx > 0) == (dy > 0)
    return same / total if total else None


class _Tables:
    """The chapter's tables and series from the units' results; :meth:`build` returns what the ledger measures."""

    def __init__(self, res: Results, cfg: PrivacyEvalConfig, metrics: dict[Setting, dict | None],
                 mechanism: dict | None, dimension: int, fl: dict, f47: dict) -> None:
        self.res, self.cfg, self.metrics, self.mech, self.d, self.fl, self.f47 = (res, cfg, metrics, mechanism,
                                                                                  dimension, fl, f47)
        self.scale = sigma_scale(cfg.images, dimension)
        self.ts = cfg.attacked_rounds

    def get(self, bound, sigma, key="psnr", **kw) -> float | None:
        m = self.metrics.get(Setting(bound, sigma, **kw))
        return None if m is None else m[key]

    def per_image(self, bound, sigma, key="psnr", **kw) -> list[float] | None:
        """A setting's per-image values of ``key`` (None: not run, or its unit predates them)."""
        m = self.metrics.get(Setting(bound, sigma, **kw))
        return None if m is None else m.get("per_image", {}).get(key)

    def mean_over_rounds(self, bound, sigma, manner="one-round", key="mse", skip_first=False) -> float | None:
        ts = self.ts[1:] if skip_first else self.ts
        vals = [self.get(bound, sigma, key, manner=manner, round=t) for t in ts]
        return None if not vals or None in vals else sum(vals) / len(vals)

    def per_image_over_rounds(self, bound, sigma, manner="one-round", key="mse",
                              skip_first=False) -> list[float] | None:
        """Each image's ``key`` averaged over the attacked rounds, as :meth:`mean_over_rounds` averages the rounds'
        means (None where a round is not run or its unit predates per-image values)."""
        ts = self.ts[1:] if skip_first else self.ts
        rounds = [self.per_image(bound, sigma, key, manner=manner, round=t) for t in ts]
        if not rounds or None in rounds:
            return None
        return [sum(v) / len(v) for v in zip(*rounds)]

    def build(self) -> dict:
        cfg = self.cfg
        self.res.add_table("scale", "Run scale against the thesis's: σ is given as the thesis's σ; the run uses "
                           "σ × sigma_scale", [{
                               "images": cfg.images, "parameters": self.d, "paper": DOC_PARAMETERS, "ours": self.d,
                               "sigma_scale": self.scale, "iterations": cfg.attack.iterations,
                               "attack_lr": cfg.attack.lr, "rounds": cfg.rounds,
                               "attacked_rounds": ", ".join(map(str, self.ts)),
                               "median_bound_round1": None if self.mech is None else self.mech["median_bound"]}])
        self._t41()
        self._t43()
        self._t45()
        self._curves()
        t44 = self._t44()
        f47 = self._f47()
        eps = self._privacy()
        theory = self._theory()
        return {"t44": t44, "f47": f47, "eps": eps, "theory": theory}

    def _t41(self) -> None:
        rows = []
        for s, c in self.cfg.t41:
            paper = T41.get((s, c), (None, None, None))
            row = {"sigma": s, "C": c, "paper": paper[0], "ours": self.get(c, s),
                   "cos_sim_paper": paper[1], "cos_sim": self.get(c, s, "cos_sim"),
                   "euc_dis_paper": paper[2], "euc_dis": self.get(c, s, "euc_dis")}
            if (c, s) in self.cfg.normal_init:
                row["ours_normal_init"] = self.get(c, s, init="normal")
            rows.append(row)
        self.res.add_table("T4.1", "Table 4.1: one round, MLP, CIFAR-100 — PSNR, cosine similarity and Euclidean "
                           "distance (standardised images) between reconstructions and the real images "
                           "(ours_normal_init: the same attack from N(0, 1) dummies)", rows)

    def _t43(self) -> None:
        rows = []
        median = None if self.mech is None else self.mech["median_bound"]  # round 1, mean over the layers
        for c, s in dict.fromkeys([*((c, s) for s, c in self.cfg.t41), *self.cfg.t43]):
            paper = T43.get((c, s), (None, None, None))
            rows.append({"C": c, "sigma": s, "total_noise": None if c == "median" and median is None
                         else s * (median if c == "median" else c),
                         "paper": paper[0], "ours": self.get(c, s), "prob_leak_paper": paper[1],
                         "prob_leak": self.get(c, s, "prob_leak"), "lpips_paper": paper[2],
                         "ssim": self.get(c, s, "ssim")})
        self.res.add_table("T4.3", "Table 4.3: SE attack, MLP, CIFAR-100 — PSNR, Prob leak P(pl) (eq. 4.3, our two "
                           "evaluators), and SSIM in place of LPIPS (its weights need the internet)", rows)

    def _t45(self) -> None:
        rows = []
        for c, s in self.cfg.t45:
            for objective in ("euclidean", "cosine"):
                paper = T45.get((objective, c, s), (None, None, None))
                rows.append({"attack": objective, "C": c, "sigma": s, "total_noise": c * s, "paper": paper[0],
                             "ours": self.get(c, s, objective=objective), "prob_leak_paper": paper[1],
                             "prob_leak": self.get(c, s, "prob_leak", objective=objective), "lpips_paper": paper[2],
                             "ssim": self.get(c, s, "ssim", objective=objective)})
        self.res.add_table("T4.5", "Table 4.5: cosine vs Euclidean reconstruction, round 1 (PSNR, P(pl), SSIM)", rows)

    def _curves(self) -> None:
        """Figs. 4.2-4.4: image MSE ("attack loss", spec §7.7) over rounds, one-round (O_r) and all-round (A_r)."""
        ts = list(self.ts)
        for c, sigma in self.cfg.curves:
            for manner in ("one-round", "all-round"):
                ys = [self.get(c, sigma, "mse", manner=manner, round=t) for t in ts]
                self.res.add_series(f"loss/C = {c:g}, σ = {sigma:g}/{manner}", ts, ys,
                                    label=f"{'A_r' if manner == 'all-round' else 'O_r'}, C = {c:g}, σ = {sigma:g}")
        for c, sigma in _one_round_curves(self.cfg):
            ys = [self.get(c, sigma, "mse", round=t) for t in ts]
            c_text = c if c == "median" else f"{c:g}"
            self.res.add_series(f"loss_one_round/C = {c_text}, σ = {sigma:g}", ts, ys,
                                label=f"O_r, C = {c_text}, σ = {sigma:g}")

    def _t44(self) -> dict:
        """Table 4.4 (means over the attacked rounds) and Fig. 4.6 (attack loss per round, SE vs FL)."""
        rows, out = [], {}
        ts = list(self.ts)
        for where in ("FL", "SE"):
            for c in self.cfg.t44:
                sigma = sigma_at(self.cfg.t44_total_noise, c)
                if where == "FL":
                    per = [self.fl.get((c, t)) for t in ts]
                    per = None if None in per else per
                else:
                    per = [self.metrics.get(Setting(c, sigma, manner="all-round", round=t)) for t in ts]
                    per = None if None in per else per
                m = None if per is None else {k: sum(p[k] for p in per) / len(per)
                                               for k in ("psnr", "prob_leak", "ssim", "mse")}
                if per is not None:
                    self.res.add_series(f"se_fl/{where}/C = {c:g}", ts, [p["mse"] for p in per],
                                        label=f"{where}, C = {c:g}")
                paper = T44.get((where, c), (None, None, None))
                rows.append({"setting": where, "C": c, "sigma": sigma, "paper": paper[0],
                             "ours": None if m is None else m["psnr"], "prob_leak_paper": paper[1],
                             "prob_leak": None if m is None else m["prob_leak"], "lpips_paper": paper[2],
                             "ssim": None if m is None else m["ssim"],
                             "update_norm_round1": per[0]["update_norm_round1"] if where == "FL" and per else None})
                out[(where, c)] = None if per is None else {"psnr": m["psnr"], "first": per[0]["mse"],
                                                           "last": per[-1]["mse"]}
        self.res.add_table("T4.4", f"Table 4.4: SE vs FL, all-round attack, σC = {self.cfg.t44_total_noise:g}, "
                           f"metrics averaged over the attacked rounds {', '.join(map(str, ts))} (FL: "
                           f"{self.cfg.fl_clients} clients × {self.cfg.fl_images} images, client 0 attacked; "
                           f"update_norm_round1: its clean round-1 update, beside the SE gradient's norm in the "
                           f"theory table)", rows)
        return out

    def _f47(self) -> dict:
        f, rows, out = self.cfg.f47, [], {}
        for (c, total, init), run in self.f47.items():
            acc = None if run is None else run.final_accuracy
            rows.append({"C": c, "total_noise": total, "sigma": sigma_at(total, c), "init": init,
                         "paper": F47.get((c, total)), "ours": acc,
                         "exact_images_accuracy": None if run is None else run.extra.get("exact_accuracy"),
                         "diverged": None if run is None else run.diverged})
            out[(c, total, init)] = acc
        self.res.add_table("F4.7", f"Fig. 4.7: UDP-FL final test accuracy, CNN6 on CIFAR-10 ({f.clients} clients × "
                           f"{f.images} random images, {f.rounds} rounds; σ = σC / C, noise std σC/100 per "
                           f"coordinate as in the thesis; init: He (ours) or the default U(±1/√fan_in)); "
                           f"exact_images_accuracy: on the test images with exact pixels only; diverged: non-finite "
                           f"updates stopped training (accuracy of the last model)", rows)
        return out

    def _privacy(self) -> dict:
        """ε of the mechanism as run beside the thesis's convention, for every σ the chapter attacks."""
        cfg = self.cfg
        tensors = 2 * (len(cfg.hidden) + 1)  # a weight and a bias per layer
        sigmas = sorted({s.sigma for s in self.metrics} | {0.3, 0.5, 1.0})

        def as_run(sigma: float, releases: int) -> float:
            return udp_epsilon(sigma * self.scale, num_samples=cfg.images, tensors=tensors, releases=releases,
                               delta=cfg.delta)

        rows = [{"sigma": s, "sigma_run": s * self.scale, "paper": EPSILON_AT_SIGMA_ONE if s == 1.0 else None,
                 "ours": as_run(s, cfg.rounds), "epsilon_one_release": as_run(s, 1),
                 "epsilon_sensitivity_c_over_n": udp_epsilon(s * self.scale, num_samples=cfg.images, tensors=tensors,
                                                             releases=cfg.rounds, delta=cfg.delta,
                                                             sensitivity="per_sample"),
                 "epsilon_thesis_convention": thesis_epsilon(s, cfg.delta)} for s in sigmas]
        self.res.add_table("privacy", f"ε (δ = {cfg.delta:g}) of the UDP client as run — {tensors} tensors clipped "
                           f"to C each, noise σ_run·C/n, n = {cfg.images}, no subsampling, sensitivity 2C per tensor "
                           f"(nothing clips an image's own gradient) — after all {cfg.rounds} rounds (ours) and after "
                           f"one release; with sensitivity C/n instead; and the thesis's convention (sensitivity C/n, "
                           f"q = 0.25, 15 steps)", rows)
        rows = [{"sigma": s, "epsilon": as_run(s, 1), "epsilon_thesis_convention": thesis_epsilon(s, cfg.delta),
                 "psnr": self.get(1.0, s), "ssim": self.get(1.0, s, "ssim"),
                 "prob_leak": self.get(1.0, s, "prob_leak")}
                for s in sorted({s.sigma for s in self.metrics if s.bound == 1.0 and s.round == 1
                                 and s.manner == "one-round" and s.objective == "cosine" and s.init == "uniform"})]
        self.res.add_table("attack_vs_epsilon", "What the round-1 attack recovers (C = 1) beside the ε of the release "
                           "it attacked (the mechanism as run, one release) and the thesis's convention", rows)
        attacked = sorted({x.sigma for x in self.metrics if x.sigma < 1}) or [0.5]
        stated = sorted(set(attacked) & THESIS_SIGMAS) or [0.1]
        return {"run_1": as_run(1.0, cfg.rounds), "thesis_1": thesis_epsilon(1.0, cfg.delta),
                **{f"{name}_{over}": min(accountant(s) for s in sigmas)
                   for name, accountant in (("run", lambda s: as_run(s, cfg.rounds)),
                                            ("thesis", lambda s: thesis_epsilon(s, cfg.delta)))
                   for over, sigmas in (("below", attacked), ("stated", stated))},
                "sigma_below": max(attacked), "sigma_stated": max(stated)}

    def _theory(self) -> dict | None:
        """§4.3 against the measured attacks: per round-1 (C, σ), k1 (√n and √d), ‖ḡ‖/‖g‖ measured with flat
        clipping (Lemma 7), 1/k3 (Corollary 2, s = 0.5), k4 (Theorem 7), the SNR, and the attack's PSNR/MSE; and
        per round the all-round target's SNR gain over the one-round target's against √t."""
        if self.mech is None:
            return None
        cfg, n, rows = self.cfg, self.cfg.images, []
        for key, m in self.mech["pairs"].items():
            bound, sigma = (float(v) for v in key.split("/"))
            if Setting(bound, sigma) not in self.metrics:
                continue
            run_sigma = sigma * self.scale
            k1 = {r: lemma7_k1(run_sigma, bound, m["grad"], n, dim=None if r == "sqrt_n" else self.d)
                  for r in ("sqrt_n", "sqrt_d")}
            first = m["rounds"][0]
            rows.append({"C": bound, "sigma": sigma, "total_noise": bound * sigma, "grad_norm": m["grad"],
                         "k1_sqrt_n": k1["sqrt_n"], "k1_sqrt_d": k1["sqrt_d"],
                         "noisy_over_grad_flat": m["flat_noisy"] / m["grad"],
                         "bound_factor_sqrt_n": 1 / corollary2_k3(k1["sqrt_n"]),
                         "bound_factor_sqrt_d": 1 / corollary2_k3(k1["sqrt_d"]),
                         "theorem6_assumption_sqrt_n": k1["sqrt_n"] > 1,
                         "k4_sqrt_n": theorem7_k4(k1["sqrt_n"], m["grad"], m["grad"]),
                         "k4_sqrt_d": theorem7_k4(k1["sqrt_d"], m["grad"], m["grad"]),
                         "snr": 1 / noise_to_signal(first["signal"], run_sigma, bound, n, self.d) if sigma > 0
                         else None, "snr_measured": first["signal"] / first["noise"] if first["noise"] else None,
                         "psnr": self.get(bound, sigma), "mse": self.get(bound, sigma, "mse"),
                         "psnr_euclidean": self.get(bound, sigma, objective="euclidean")})
        self.res.add_table("theory", "§4.3 against the measured round-1 attacks: Lemma 7's k1 as printed (√n) and "
                           "with √d, the measured ‖ḡ‖/‖g‖ of eq. 4.1-4.2 (flat clipping), Corollary 2's bound factor "
                           "1/k3 (s = 0.5), Theorem 7's k4 (defined where k1 ≤ 1; ‖g(x)‖ = ‖g(x*)‖), the "
                           "signal-to-noise ratio ‖ĝ‖/‖noise‖ of the shared gradient (per layer, as run), and the "
                           "PSNR of the cosine attack (Theorem 6) and, where Table 4.5 runs it, of the Euclidean "
                           "attack (Theorem 7)", rows)
        for c, sigma in cfg.curves:
            m = self.mech["pairs"].get(f"{float(c)}/{float(sigma)}")
            if m is None:
                continue
            gain = [_snr_gain(r) for r in m["rounds"]]
            rounds = [r["round"] for r in m["rounds"]]
            self.res.add_series(f"snr_gain/C = {c:g}, σ = {sigma:g}", rounds, gain,
                                label=f"measured, C = {c:g}, σ = {sigma:g}")
        self.res.add_series("snr_gain/sqrt_t", list(range(1, cfg.rounds + 1)),
                            [math.sqrt(t) for t in range(1, cfg.rounds + 1)], label="√t (coherent signal)")
        self._all_round_gain()
        return {"rows": rows}

    def _all_round_gain(self) -> None:
        """Spec §6.5: the measured attack-quality gap A_t − O_t (PSNR of the all-round attack minus the one-round
        attack at round t) beside the √t SNR gain of a coherent signal, as PSNR: 20·log10 √t = 10·log10 t dB if the
        reconstruction error scaled with the noise-to-signal ratio (ours; the thesis states the all-round manner in
        words only)."""
        rows = []
        for c, sigma in self.cfg.curves:
            m = self.mech["pairs"].get(f"{float(c)}/{float(sigma)}") if self.mech else None
            gains = {r["round"]: _snr_gain(r) for r in (m["rounds"] if m else [])}
            for t in self.ts:
                one, all_ = self.get(c, sigma, round=t), self.get(c, sigma, manner="all-round", round=t)
                rows.append({"C": c, "sigma": sigma, "round": t, "psnr_one_round": one, "psnr_all_round": all_,
                             "psnr_gain": _diff(all_, one), "predicted_gain_db": 10 * math.log10(t),
                             "snr_gain": gains.get(t), "sqrt_t": math.sqrt(t)})
            self.res.add_series(f"psnr_gain/C = {c:g}, σ = {sigma:g}", list(self.ts),
                                [r["psnr_gain"] for r in rows[-len(self.ts):]],
                                label=f"measured, C = {c:g}, σ = {sigma:g}")
        self.res.add_series("psnr_gain/10log10t", list(self.ts), [10 * math.log10(t) for t in self.ts],
                            label="10·log10 t (√t SNR gain, ours)")
        self.res.add_table("all_round_gain", "Spec §6.5: all-round (A_t) against one-round (O_t) attacks at the "
                           "curves' (C, σ): measured PSNR gap, the gap a √t SNR gain would give (10·log10 t dB, "
                           "ours), and the measured SNR gain of the summed target (√t for a coherent signal)", rows)


def _snr_gain(r: dict) -> float | None:
    """SNR of round t's all-round target (the sum over rounds 1..t) over the one-round target's, from the norms of
    :func:`_mechanism` (None without noise)."""
    return r["sum_signal"] * r["noise"] / (r["sum_noise"] * r["signal"]) if r["sum_noise"] else None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _rel(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else (a - b) / b


def _ratio_items(num: list[float] | None, den: list[float] | None) -> list[float] | None:
    """Per-item values of R − 1 = mean(num) / mean(den) − 1 over the same items (two attacks on the same images):
    (numⱼ − R·denⱼ) / mean(den) + R − 1, which average to R − 1 and spread as its delta-method linearisation, so
    their confidence bound is the ratio's (None where either attack lacks per-image values)."""
    if num is None or den is None:
        return None
    mean_den = sum(den) / len(den)
    ratio = sum(num) / len(num) / mean_den
    return [(a - ratio * b) / mean_den + ratio - 1 for a, b in zip(num, den)]


def _fmt(v: float | None, digits: int = 2) -> str:
    return "not run" if v is None else f"{v:.{digits}f}"


def _mean_abs(pairs: list[tuple[float | None, float | None]]) -> float | None:
    pairs = [(a, b) for a, b in pairs if b is not None]
    if not pairs or any(a is None for a, _ in pairs):
        return None
    return sum(abs(a - b) for a, b in pairs) / len(pairs)


def _gap_per_image(cells: list[tuple[float, float, list[float] | None]]) -> list[float] | None:
    """Image by image, the mean over table cells (ours, the paper's, ours per image) of |ours − paper| as
    :func:`_mean_abs` computes it: image j's mean over the cells of sign(ours − paper)·(its value − paper), the sign
    fixed at each cell's mean (the images' values then average to the mean gap exactly). None where a cell lacks
    per-image values."""
    if not cells or any(images is None for *_, images in cells):
        return None
    signs = [1.0 if ours >= paper else -1.0 for ours, paper, _ in cells]
    return [sum(sign * (v - paper) for sign, (_, paper, _), v in zip(signs, cells, values)) / len(cells)
            for values in zip(*(images for *_, images in cells))]


def _measure(res: Results, tab: _Tables, built: dict, f47_test: int | None) -> None:
    """This run's value of every claim of :data:`LEDGER`; ``f47_test``: Fig. 4.7's test images (for the test set's
    sampling bound of its accuracy claims)."""
    claim = {c.id: c for c in LEDGER}
    cfg, get = tab.cfg, tab.get

    def put(cid: str, value: float | None, detail: str, per_image: list[float] | None = None,
            setting: str = "") -> None:
        """Record a claim; ``per_image``: the value image by image (a difference of two attacks on the same images),
        whose spread gives the verdict its image-sampling bound."""
        res.measure(claim[cid], value, detail, setting=setting,
                    per_item=per_image if value is not None else None)

    def pair(key: str, first: dict, second: dict) -> list[float] | None:
        """The per-image difference of ``key`` between two settings (``get``'s arguments), where both kept it."""
        a, b = (tab.per_image(key=key, **s) for s in (first, second))
        return None if a is None or b is None else [x - y for x, y in zip(a, b)]

    def psnr_pair(cid: str, c1, s1, c2, s2, setting: str = "", **kw) -> None:
        a, b = get(c1, s1, **kw), get(c2, s2, **kw)
        put(cid, _diff(a, b), f"{_lit(c1, s1)}: {_fmt(a)} dB, {_lit(c2, s2)}: {_fmt(b)} dB",
            pair("psnr", dict(bound=c1, sigma=s1, **kw), dict(bound=c2, sigma=s2, **kw)), setting)

    def psnr_pairs(cid: str) -> None:
        """Claim ``cid`` of :data:`PSNR_PAIRS`, every setting."""
        for p in PSNR_PAIRS[cid][1]:
            psnr_pair(cid, *p.first, *p.second, p.setting, init=p.init)

    psnr_pairs("psnr_falls_with_noise")
    ladder = sorted({s for c, s in [*((c, s) for s, c in cfg.t41), *cfg.t43] if c == 1.0})
    values = [get(1.0, s) for s in ladder]
    if None in values:
        res.measure(claim["collapse_between_001_and_004"], None, "not run yet")
    else:
        drops = {(a, b): get(1.0, a) - get(1.0, b) for a, b in zip(ladder, ladder[1:])}
        target = drops.get((0.01, 0.04))
        others = {k: v for k, v in drops.items() if k != (0.01, 0.04)}
        per_image = None
        if target is not None and others:  # the target drop minus the largest other one, image by image
            top = max(others, key=others.get)
            ends = [tab.per_image(1.0, s) for s in (0.01, 0.04, *top)]
            if None not in ends:
                per_image = [a - b - (c - d) for a, b, c, d in zip(*ends)]
        put("collapse_between_001_and_004", None if target is None or not others else target - max(others.values()),
            ", ".join(f"{a:g}→{b:g}: {v:.2f} dB" for (a, b), v in drops.items()), per_image)
    psnr_pairs("low_noise_leaks_at_small_c")
    for c in (0.1, 1.0):
        ours, paper = get(c, 0.001, "cos_sim"), T41[(0.001, c)][1]
        cos = tab.per_image(c, 0.001, "cos_sim")
        put("low_noise_cos_sim", _diff(ours, paper), f"cos-sim {_fmt(ours, 3)} (paper {paper})",
            None if cos is None else [v - paper for v in cos], f"C = {c:g}")
    for cid in ("larger_c_leaks_at_small_sigma", "larger_c_protects_at_large_sigma", "larger_c_leaks_more_each_step",
                "larger_c_leaks_more"):
        psnr_pairs(cid)
    hi, lo = get(1.0, 0.001, "prob_leak"), get(1.0, 1.0, "prob_leak")
    put("prob_leak_falls_with_noise", _diff(hi, lo), f"P(pl): σ = 0.001: {_fmt(hi)}, σ = 1: {_fmt(lo)}",
        pair("leaks", dict(bound=1.0, sigma=0.001), dict(bound=1.0, sigma=1.0)))
    for cid in ("sigma_01_defeats_attack", "median_leaks_more_at_small_sigma", "median_usable_at_large_sigma"):
        psnr_pairs(cid)

    # the MSE claims: relative differences of two attacks' mean MSE over the attacked rounds, each image's MSE
    # averaged over those rounds first, so that their delta-method per-image values (_ratio_items) bound them
    mean, images = tab.mean_over_rounds, tab.per_image_over_rounds
    for setting, (c, s1, s2) in (("C = 1, σ 0.01 → 0.1", (1.0, 0.01, 0.1)),
                                 ("C = 10, σ 0.001 → 0.01 (ours)", (10.0, 0.001, 0.01))):
        a, b = mean(c, s2), mean(c, s1)
        put("loss_rises_with_sigma", _rel(a, b), f"mean one-round MSE: σ = {s1:g}: {_fmt(b, 4)}, σ = {s2:g}: "
            f"{_fmt(a, 4)}", _ratio_items(images(c, s2), images(c, s1)), setting)
    for cid, c, s in (("all_round_beats_one_round", 1.0, 0.01), ("all_round_beats_one_round", 1.0, 0.1),
                      ("all_round_beats_one_round", 10.0, 0.01), ("all_round_beats_one_round_ladder", 1.0, 0.001),
                      ("all_round_beats_one_round_ladder", 1.0, 1.0)):
        one, every = mean(c, s, skip_first=True), mean(c, s, "all-round", skip_first=True)
        items = _ratio_items(images(c, s, "all-round", skip_first=True), images(c, s, skip_first=True))
        put(cid, None if None in (one, every) else (one - every) / one,
            f"MSE over rounds {', '.join(map(str, tab.ts[1:]))}: one-round {_fmt(one, 4)}, all-round "
            f"{_fmt(every, 4)}", None if items is None else [-v for v in items],
            _lit(c, s) + ("" if c == 1.0 else " (ours)"))
    small, large, median = mean(0.1, 0.1), mean(10.0, 0.1), mean("median", 0.1)
    detail = f"mean one-round MSE at σ = 0.1: C = 0.1: {_fmt(small, 4)}, C = 10: {_fmt(large, 4)}"
    rises = _ratio_items(images(10.0, 0.1), images(0.1, 0.1))
    put("f43_loss_rises_with_c", _rel(large, small), detail, rises)
    put("f43_loss_falls_with_c_literal", _rel(large, small), detail, rises)
    put("median_like_small_c", _rel(median, small), f"{detail}, median: {_fmt(median, 4)}",
        _ratio_items(images("median", 0.1), images(0.1, 0.1)))
    end_bounds = (0.1, 10.0)
    ends = [mean(c, sigma_at(cfg.f44_total_noise, c)) for c in end_bounds]
    mid = mean(1.0, cfg.f44_total_noise)
    lowest = None if None in ends else end_bounds[ends.index(min(ends))]  # bounded through the end it selects
    put("f44_interior_optimum", None if None in (*ends, mid) else (min(ends) - mid) / mid,
        f"mean one-round MSE at σC = {cfg.f44_total_noise:g}: C = 0.1: {_fmt(ends[0], 4)}, C = 1: {_fmt(mid, 4)}, "
        f"C = 10: {_fmt(ends[1], 4)}", None if lowest is None else
        _ratio_items(images(lowest, sigma_at(cfg.f44_total_noise, lowest)), images(1.0, cfg.f44_total_noise)))

    t44, floor = built["t44"], get(*SE_FLOOR)
    for c in T44_BOUNDS:
        fl, se = t44.get(("FL", c)), t44.get(("SE", c))
        setting = f"C = {c:g}"
        res.measure(claim["fl_leaks_more_than_se"], None if None in (fl, se) else fl["psnr"] - se["psnr"],
                    f"PSNR FL {_fmt(fl and fl['psnr'])} dB, SE {_fmt(se and se['psnr'])} dB", setting=setting)
        res.measure(claim["fl_attack_recovers"], None if fl is None else _diff(fl["psnr"], floor),
                    f"PSNR FL {_fmt(fl and fl['psnr'])} dB, SE at C = 1, σ = 1 {_fmt(floor)} dB", setting=setting)
        rises = [None if p is None else (p["last"] - p["first"]) / p["first"] for p in (se, fl)]
        res.measure(claim["se_loss_rises_faster_than_fl"], None if None in rises else rises[0] - rises[1],
                    f"relative rise of the all-round MSE: SE {_fmt(rises[0])}, FL {_fmt(rises[1])}", setting=setting)
    named = {"cosine": "cosine", "euclidean": "Euclidean"}
    for cid, (first, cells) in OBJECTIVE_PAIRS.items():
        second = "euclidean" if first == "cosine" else "cosine"
        for setting, (c, s) in cells:
            a, b = get(c, s, objective=first), get(c, s, objective=second)
            put(cid, _diff(a, b), f"{named[first]} {_fmt(a)} dB, {named[second]} {_fmt(b)} dB",
                pair("psnr", dict(bound=c, sigma=s, objective=first), dict(bound=c, sigma=s, objective=second)),
                setting)

    f47 = built["f47"]

    def paired(*keys: tuple[float, float, str]) -> float | None:
        """The share of test images exactly one of two Fig. 4.7 runs' final models gets right (None: not kept)."""
        runs = [tab.f47.get(k) for k in keys]
        return None if None in runs else disagreement(*(r.correct() for r in runs))

    for setting, total, init in (("σC = 0.1", 0.1, "kaiming"), ("σC = 1", 1.0, "kaiming"),
                                 ("σC = 0.1, default init", 0.1, "default")):
        lo, hi = f47.get((0.1, total, init)), f47.get((10.0, total, init))
        res.measure_difference(claim["f47_larger_c_more_accurate"], hi, lo,
                               f"final accuracy at σC = {total:g}: C = 0.1: {_fmt(lo, 3)}, C = 10: {_fmt(hi, 3)}",
                               setting=setting, test_images=f47_test,
                               disagreement=paired((10.0, total, init), (0.1, total, init)))
    for setting, large, small in (("equal σC = 10", (10.0, 10.0, "kaiming"), (0.1, 10.0, "kaiming")),
                                  ("base σ = 10, σC 1 → 100", (10.0, 100.0, "kaiming"), (0.1, 1.0, "kaiming"))):
        hi, lo = f47.get(large), f47.get(small)
        res.measure_difference(claim["f47_large_noise_destroys"], hi, lo,
                               f"final accuracy: C = 0.1, σC = {small[1]:g}: {_fmt(lo, 3)}; C = 10, σC = "
                               f"{large[1]:g}: {_fmt(hi, 3)}", setting=setting, test_images=f47_test,
                               disagreement=paired(large, small))

    eps = built["eps"]
    for setting, key in (("the thesis's convention", "thesis"), ("the mechanism as run", "run")):
        one = eps[f"{key}_1"]
        res.measure(claim["epsilon_at_sigma_one"], (one - EPSILON_AT_SIGMA_ONE) / EPSILON_AT_SIGMA_ONE,
                    f"ε(σ = 1) = {one:.4g}", setting=setting)
        for over, suffix, which in (("below", "", "σ < 1"), ("stated", ", the thesis's σ", "the thesis's σ < 1")):
            low = eps[f"{key}_{over}"]
            res.measure(claim["epsilon_large_below_one"], (low - 100) / 100,
                        f"smallest ε over {which} (at σ = {eps[f'sigma_{over}']:g}) = {low:.4g}",
                        setting=setting + suffix)

    theory = built["theory"]
    rows = None if theory is None else [r for r in theory["rows"] if r["mse"] is not None]
    for setting, reading in (("√n, as printed", "sqrt_n"), ("√d, ours", "sqrt_d")):
        if not rows:
            res.measure(claim["lemma7_bound"], None, "not run yet", setting=setting)
            res.measure(claim["corollary2_tracks_attack"], None, "not run yet", setting=setting)
            continue
        violated = [r for r in rows if r["noisy_over_grad_flat"] > r[f"k1_{reading}"]]
        res.measure(claim["lemma7_bound"], len(violated) / len(rows),
                    f"{len(violated)} of {len(rows)} settings violate it; largest ‖ḡ‖ / (k1‖g‖) = "
                    f"{max(r['noisy_over_grad_flat'] / r[f'k1_{reading}'] for r in rows):.3g}", setting=setting)
        agree = _concordance([r[f"bound_factor_{reading}"] for r in rows], [r["mse"] for r in rows])
        res.measure(claim["corollary2_tracks_attack"], None if agree is None else agree - 0.5,
                    f"concordant pairs: {_fmt(agree, 3)} of {len(rows)} settings", setting=setting)

    def table_gap(cid: str, table: str, detail: str, match=lambda r: True, key: str = "psnr", ours: str = "ours",
                  paper: str = "paper", setting: str = "", **kw) -> None:
        """Claim ``cid``: the mean |ours − paper| over a table's rows (``match``), with its image-sampling bound
        where every row's setting kept per-image values of ``key``."""
        rows = [r for r in res.tables[table]["rows"] if match(r) and r[paper] is not None]
        value = _mean_abs([(r[ours], r[paper]) for r in rows])
        items = None if value is None else _gap_per_image(
            [(r[ours], r[paper], tab.per_image(r["C"], r["sigma"], key, **kw)) for r in rows])
        put(cid, value, detail, items, setting)

    table_gap("t41_values", "T4.1", "mean |ours − paper| over Table 4.1's cells")
    table_gap("t41_cos_sim_values", "T4.1", "mean |ours − paper| over Table 4.1's cells", key="cos_sim",
              ours="cos_sim", paper="cos_sim_paper")
    rows = [r for r in res.tables["T4.1"]["rows"] if r["euc_dis_paper"] is not None]
    ratios = [None if r["euc_dis"] is None else r["euc_dis"] / r["euc_dis_paper"] for r in rows]
    res.measure(claim["t41_euc_dis_values"], _mean_abs([(q, 1.0) for q in ratios]),
                "ours / paper: " + ", ".join(f"{_fmt(q)} (σ = {r['sigma']:g}, C = {r['C']:g})"
                                             for q, r in zip(ratios, rows)))
    table_gap("t43_values", "T4.3", "mean |ours − paper| over Table 4.3's cells")
    for where in ("SE", "FL"):
        rows = [r for r in res.tables["T4.4"]["rows"] if r["setting"] == where]
        res.measure(claim["t44_values"], _mean_abs([(r["ours"], r["paper"]) for r in rows]),
                    f"mean |ours − paper| over Table 4.4's {where} rows", setting=where)
    table_gap("t45_values", "T4.5", "mean |ours − paper| over Table 4.5's Euclidean rows",
              lambda r: r["attack"] == "euclidean", objective="euclidean")
    for c in (0.1, 10.0):
        ours = f47.get((c, 1.0, "kaiming"))
        res.measure(claim["f47_values"], _diff(ours, F47[(c, 1.0)]),
                    f"final accuracy {_fmt(ours, 3)} (paper {F47[(c, 1.0)]})", setting=f"C = {c:g}",
                    test_images=None if ours is None else f47_test, accuracies=None if ours is None else (ours,))


def paper_values() -> dict[str, float]:
    """Each claim measured on the thesis's own numbers where its tables report what it reads (claim key -> value):
    the PSNR differences of :data:`PSNR_PAIRS` on the table each claim quotes (Table 4.1 or 4.3; the thesis ran one,
    unstated, dummy initialisation, so both of ours get its number), P(pl) on Table 4.3, the two objectives on Table
    4.5, FL against SE and against Table 4.3's SE at C = 1, σ = 1 on Table 4.4 (its σ unstated, read as σC = 0.04
    like ours), and the two accuracies at σC = 1 that the text gives for Fig. 4.7. Not the MSE claims (Figs. 4.2-4.4
    and 4.6 are curves), the collapse at σC = 0.04 (neither table has that σ at C = 1), the ε and §4.3 claims, nor
    those that compare our numbers with the thesis's (0 on its own numbers, by construction)."""
    claims = {c.id: c for c in LEDGER}
    out: dict[str, float] = {}

    def put(cid: str, setting: str, value: float) -> None:
        out[claims[cid].key(setting)] = value

    for cid, (table, pairs) in PSNR_PAIRS.items():
        for p in pairs:
            put(cid, p.setting, _thesis_psnr(table, *p.first) - _thesis_psnr(table, *p.second))
    put("prob_leak_falls_with_noise", "", T43[(1.0, 0.001)][1] - T43[(1.0, 1.0)][1])
    for cid, (first, cells) in OBJECTIVE_PAIRS.items():
        second = "euclidean" if first == "cosine" else "cosine"
        for setting, (c, s) in cells:
            put(cid, setting, T45[(first, c, s)][0] - T45[(second, c, s)][0])
    for c in T44_BOUNDS:
        fl = T44[("FL", c)][0]
        put("fl_leaks_more_than_se", f"C = {c:g}", fl - T44[("SE", c)][0])
        put("fl_attack_recovers", f"C = {c:g}", fl - _thesis_psnr("T4.3", *SE_FLOOR))
    for total in sorted({t for _, t in F47}):
        put("f47_larger_c_more_accurate", f"σC = {total:g}", F47[(10.0, total)] - F47[(0.1, total)])
    return out
