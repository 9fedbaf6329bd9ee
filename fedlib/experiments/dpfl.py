"""Chapter "DPFL" (Weng's thesis §3.2): LDP-FL and LCDP-FL with top-k sparsification and Global-MGD.

Reproduces Table 3.1 and Figs. 3.2-3.5: vanilla-FL, plain LDP-FL, each of the two techniques alone and both
together (the proposed LDP-FL), LCDP-FL at three top-rates, CDP-FL (Geyer et al.) re-run in the same setup, DP-SGD
as the sample-level reference, the literal CDP variants beside our corrections, the privacy accounting that stops
training — in the thesis's convention and as run — and a measurement of the sensitivity the thesis accounts with.

Every training run is a unit (:mod:`fedlib.units`); :data:`LEDGER` holds the section's result statements.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import torch

from fedlib.algorithms.dpfl import (
    cdp_fl,
    epsilon_as_run,
    lcdp_fl,
    ldp_fl,
    moments_budget,
    participations,
    rounds_within_budget,
    sensitivity_ratio,
    thesis_epsilon,
    vanilla_fl,
)
from fedlib.algorithms.dpsgd import DPSGDConfig, train_dpsgd
from fedlib.data.datasets import blocking_errors, load_dataset
from fedlib.experiments.audit import add_audit_as_run
from fedlib.experiments.common import (
    Federation,
    checkpoint_path,
    device,
    first_round_updates,
    fresh_model,
    make_federation,
    one_sample_neighbours,
    rounds_saved,
    train_unit,
)
from fedlib.fl import Algorithm, FLConfig, LocalSGD, RunSummary, run_federated
from fedlib.fl.engine import disagreement
from fedlib.ledger import Claim
from fedlib.privacy import MOMENTS_ORDERS, compute_rdp, epsilon_curve, noise_norm_ratio, rdp_to_delta
from fedlib.privacy.sparsify import top_k, top_k_count
from fedlib.results import Results
from fedlib.rng import make_generator
from fedlib.units import Units


@dataclass(frozen=True)
class Setting:
    """One federation of Table 3.1 (100 or 1,000 clients) with its noise scales and the paper's numbers."""

    num_clients: int
    clients_per_round: int
    repeat: int  # MNIST is repeated 10x for 1,000 clients (thesis §3.2.2)
    ldp_sigma: float  # σ_LDP of LDP-FL
    cdp_sigma: float  # σ_CDP of LCDP-FL and CDP-FL
    cdp_delta: float
    lcdp_lr: float  # initial local LR of LCDP-FL / CDP-FL (×0.78 for ten rounds)
    paper_ldp: float  # Table 3.1 accuracies and rounds
    paper_ldp_rounds: int
    paper_lcdp: float
    paper_cdp: float
    paper_lcdp_rounds: int
    extra_sigma: float | None = None  # the Fig. 3.2 variants also at this σ_LDP (ours)

    @property
    def label(self) -> str:
        return f"{self.num_clients} clients"


#: σ_LDP = 96 (ours): with one local epoch (quick mode), the paper's σ = 8 barely costs accuracy, so the Fig. 3.2
#: variants also run where the noise dominates. The claims stay at the paper's σ; this is an extra setting.
EXTRA_SIGMA = 96.0
SETTING_100 = Setting(100, 50, 1, 8.0, 1.18, 1e-3, 0.0025, 0.963, 52, 0.8024, 0.78, 11, extra_sigma=EXTRA_SIGMA)
SETTING_1000 = Setting(1000, 220, 10, 2.0, 1.43, 1e-5, 0.1, 0.97, 63, 0.943, 0.92, 54)


@dataclass(frozen=True)
class DPFLConfig:
    """Everything the chapter runs. FULL is the thesis's configuration (our choice for the
    unstated batch size and local momentum); QUICK keeps the 100-client federation on real MNIST and shortens local
    training and the number of rounds so that the chapter runs in about 3 minutes on 2 cores.
    """

    dataset: str = "mnist"
    model: str = "mlp"
    settings: tuple[Setting, ...] = (SETTING_100,)
    local_epochs: int = 10
    batch_size: int = 10
    local_momentum: float = 0.5  # β_loc of local MGD (EMA form)
    # LDP-FL track (Figs. 3.2-3.3): LR 0.1, ×0.96 for the first 20 rounds, budget (0.5, 1e-6)
    ldp_lr: float = 0.1
    ldp_epsilon: float = 0.5
    ldp_delta: float = 1e-6
    ldp_max_rounds: int | None = None  # None: run until the budget stops training
    top_rate: float = 0.1
    momentum: float = 0.5  # β of Global-MGD
    top_rates: tuple[float, ...] = (0.01, 0.1, 1.0)  # LCDP ablation (Fig. 3.4)
    betas: tuple[float, ...] = (0.0, 0.5, 0.9)  # Global-MGD ablation on the proposed LDP-FL (β ∉ {0, 0.5}: ours)
    # LCDP-FL track (Figs. 3.4-3.5): σ_LDP = 2, both budgets ε = 8, LR ×0.78 for ten rounds
    lcdp_ldp_sigma: float = 2.0
    lcdp_epsilon: float = 8.0
    lcdp_lr_scale: float = 1.0  # multiplies Setting.lcdp_lr (quick runs 50x fewer local steps)
    lcdp_max_rounds: int | None = None
    # DP-SGD reference (Table 3.1 row 1: 97 % at (8, 1e-5) after 700 epochs, Abadi et al.'s lot 600, σ = 2)
    dpsgd: DPSGDConfig = field(default_factory=lambda: DPSGDConfig(epochs=700, batch_size=600, lr=0.1, clip=4.0,
                                                                   noise_multiplier=2.0, delta=1e-5))
    curve_rounds: int = 70
    sensitivity_swaps: int = 5  # neighbouring data sets of the sensitivity measurement
    audit_trials: int = 2000


QUICK = DPFLConfig(local_epochs=1, batch_size=50, ldp_max_rounds=15, betas=(0.0, 0.5), lcdp_lr_scale=40.0,
                   lcdp_max_rounds=11,
                   dpsgd=DPSGDConfig(epochs=2, batch_size=600, lr=0.1, clip=4.0, noise_multiplier=1.1, delta=1e-5))
FULL = DPFLConfig(settings=(SETTING_100, SETTING_1000))
#: The smallest configuration whose central claim the deliberate-defect test flips (seconds).
TINY = dataclasses.replace(QUICK, settings=(dataclasses.replace(SETTING_100, clients_per_round=20),),
                           ldp_max_rounds=1, lcdp_max_rounds=4, curve_rounds=3, sensitivity_swaps=1,
                           audit_trials=200, dpsgd=DPSGDConfig(epochs=1, batch_size=6000, lr=0.1, clip=4.0,
                                                               noise_multiplier=1.1))

#: Deliberate defects for the falsification test: each must flip the central claim's verdict.
DEFECTS = {"noise_off": "every noise multiplier set to 0: clients add no LDP noise and the server no CDP noise"}

#: Literature rows of Table 3.1 that are quoted, not re-run.
QUOTED_ROWS = [
    {"algorithm": "LDPFL (Sun et al., 2021)", "clients": 100, "csr": 1.0, "rounds_paper": 10, "dp": "(0.5)-DP",
     "paper": 0.9536},
]

PAPER, OURS = "σ = 8", f"σ = {EXTRA_SIGMA:g} (ours)"
#: the LCDP-FL server as we run it, and the two literal readings of the thesis (eq. 3.3, Alg. 3.1 line 14)
GEYER, AFTER, AVERAGE = ("noise std σS/m before Global-MGD (ours)", "noise after Global-MGD (Alg. 3.1 l. 14)",
                         "noise std σS on the average (eq. 3.3 as written)")

LEDGER = [
    Claim("vanilla_above_ldp", "Although the PPFL has degraded accuracy performance when compared with the vanilla "
          "one, ...", "Fig. 3.2 (100 clients)", "best accuracy, vanilla-FL − the best LDP-FL variant (plain, "
          "+ top-10 %, + Global-MGD, proposed)", ">", settings=(PAPER, OURS)),
    Claim("topk_helps", "... the sparse gradients ... can alleviate the performance degradation caused by the added "
          "noise", "Fig. 3.2 (100 clients)", "best accuracy, + top-10 % − plain LDP-FL", ">", settings=(PAPER, OURS)),
    Claim("mgd_helps", "... and central MGD can alleviate the performance degradation caused by the added noise",
          "Fig. 3.2 (100 clients)", "best accuracy, + Global-MGD (β = 0.5) − plain LDP-FL", ">",
          settings=(PAPER, OURS)),
    Claim("mgd_speeds_up", "MGD is adopted on the clients' side and the servers' side to speed up the training "
          "process under the influence of the added noise", "§3.2.1, Figs. 3.2-3.3",
          "1 − rounds + Global-MGD (β = 0.5) needs to reach plain LDP-FL's best accuracy / rounds plain LDP-FL needs",
          ">", unit="relative", modes=("full",), settings=(PAPER, OURS, "1,000 clients"),
          note="the thesis states it as the design's aim (§3.2.1, Alg. 3.1) and shows no rounds; a run that spends "
               "the whole LDP budget without reaching plain LDP-FL's best never does under it (−100 %)"),
    Claim("proposed_beats_plain", "The final accuracy of the FL with these techniques outperforms the others "
          "(plain LDP-FL)", "Fig. 3.2 (100 clients)", "final accuracy, proposed LDP-FL − plain LDP-FL", ">",
          settings=(PAPER, OURS)),
    Claim("proposed_beats_each_technique", "The final accuracy of the FL with these techniques outperforms the "
          "others (each technique alone)", "Fig. 3.2 (100 clients)", "final accuracy, proposed LDP-FL − the better "
          "of + top-10 % and + Global-MGD", ">", settings=(PAPER, OURS)),
    Claim("proposed_ldp_accuracy", "The proposed LDP-FL reaches 96.3 % with 100 clients in 52 rounds at "
          "(0.5, 1e-6)-DP", "Table 3.1", "best accuracy of the proposed LDP-FL − 0.963", "≈", modes=("full",)),
    Claim("proposed_final_value", "The final accuracy of the FL with these techniques outperforms the others and "
          "reaches 96.31 %", "Fig. 3.2 (100 clients), §3.2.2.1", "final accuracy of the proposed LDP-FL − 0.9631", "≈",
          modes=("full",), note="proposed_ldp_accuracy reads Table 3.1's maximum accuracy (96.3 %)"),
    Claim("beats_sun_ldpfl", "The proposed LDP-FL framework has a higher accuracy performance than the one in "
          "[Sun et al., 2021] (95.36 %)", "Table 3.1, §3.2.2.1",
          "best accuracy of the proposed LDP-FL (100 clients) − 0.9536", ">",
          modes=("full",), note="LDPFL (Sun et al., 2021) is quoted, not re-run. The thesis's own Table 3.1 puts the "
          "proposed LDP-FL's 96.3 % only 0.94 pp above LDPFL's 95.36 % (0.95 pp with §3.2.2.1's final 96.31 %), "
          "inside the 1-pp margin: inconclusive on its own numbers"),
    Claim("ldp_budget_rounds", "The (0.5, 1e-6) LDP budget stops LDP-FL after 52 rounds (100 clients)",
          "Table 3.1 (CR)", "rounds the proposed LDP-FL ran − 52", "≈", unit="count", modes=("full",),
          note="quick mode caps the LDP-FL track at fewer rounds"),
    Claim("lcdp_top10_best", "The proposed method [top-10 %] achieves the highest accuracy performance among all the "
          "LCDP-FL", "Fig. 3.4 (100 clients)", "best accuracy, LCDP-FL top-10 % − the best of top-1 % and top-100 %",
          ">", central=True),
    Claim("top1_worst", "Updating only 1 % of the gradients has the worst performance, as only very little useful "
          "information is updated", "Fig. 3.4 (100 clients)", "best accuracy, the worst of LCDP-FL top-10 % and "
          "top-100 % − top-1 %", ">"),
    Claim("lcdp_below_vanilla", "It [LCDP-FL] has much worse accuracy than that of the vanilla FL",
          "Fig. 3.4 (100 clients)", "best accuracy, vanilla-FL − LCDP-FL top-10 %", ">", settings=(GEYER, AFTER)),
    Claim("lcdp_beats_cdp", "It [LCDP-FL] outperforms the CDP-FL [of Geyer et al., 2017] with 100 clients "
          "(80.24 % vs 78 %)",
          "Table 3.1, §3.2.2.2", "best accuracy, LCDP-FL top-10 % − CDP-FL re-run in the same setup", ">",
          settings=(GEYER, AFTER, AVERAGE), note="the thesis quotes Geyer et al.'s published 78 %; we re-run CDP-FL "
          "with the same partition, model, schedule and CDP budget"),
    Claim("lcdp_beats_cdp_quoted", "LCDP-FL outperforms the CDP-FL of [Geyer et al., 2017] (Table 3.1: 80.24 % vs "
          "78 % with 100 clients, 94.3 % vs 92 % with 1,000)", "Table 3.1, §3.2.2.2",
          "best accuracy, LCDP-FL top-10 % − Geyer et al.'s published accuracy the thesis quotes (0.78, 0.92)", ">",
          modes=("full",), settings=("100 clients", "1,000 clients"),
          note="the thesis's own comparison, against the quoted number; lcdp_beats_cdp re-runs CDP-FL instead"),
    Claim("cdp_quoted_value", "CDP-FL [Geyer et al., 2017] reaches 78 % with 100 clients and 92 % with 1,000",
          "Table 3.1", "best accuracy, CDP-FL re-run in the thesis's setup − the quoted accuracy", "≈",
          modes=("full",), settings=("100 clients", "1,000 clients"),
          note="Geyer et al.'s number comes from their own setup; whether it carries over to the thesis's partition, "
               "model, schedule and budget is what the re-run tests"),
    Claim("lcdp_accuracy", "The proposed LCDP-FL reaches 80.24 % with 100 clients", "Table 3.1",
          "best accuracy of LCDP-FL top-10 % − 0.8024", "≈", modes=("full",)),
    Claim("cdp_budget_rounds", "The (8, 1e-3) CDP budget stops LCDP-FL after 11 rounds (100 clients)",
          "Table 3.1 (CR)", "rounds LCDP-FL top-10 % ran − 11", "≈", unit="count"),
    Claim("upload_saving", "It can reduce 90 % of the total communication costs", "§3.2.2.2",
          "fraction of the d values an LCDP-FL top-10 % client does not upload − 0.9", "≈", unit="probability",
          kind="fact", note="indices are not counted, as in the thesis; the next two readings count them"),
    Claim("upload_saving_with_indices", "It can reduce 90 % of the total communication costs", "§3.2.2.2",
          "fraction of the 32-bit words an LCDP-FL top-10 % client does not upload, a 32-bit index with each value "
          "(ours) − 0.9", "≈", unit="probability", kind="fact", modes=("full",),
          note="a sparse upload names its coordinates: top-k of d sends k values and k indices"),
    Claim("round_trip_saving", "It can reduce 90 % of the total communication costs", "§3.2.2.2",
          "fraction of a round's 32-bit words (the client's sparse upload with indices, the server's dense broadcast) "
          "saved against dense FL (ours) − 0.9", "≈", unit="probability", kind="fact", modes=("full",),
          note="'total' read as both directions: the server broadcasts the dense noisy aggregate (Alg. 3.1), so "
               "at most half the traffic can be saved"),
    Claim("lcdp_top10_best_1000", "The proposed LCDP-FL with 1,000 clients also reaches the highest accuracy "
          "performance, 94.2 %", "Fig. 3.5, §3.2.2.2", "best accuracy, LCDP-FL top-10 % − the best of top-1 % and "
          "top-100 %, 1,000 clients", ">", modes=("full",), note="lcdp_top10_best reads it with 100 clients"),
    Claim("dpsgd_value", "DP-SGD [Abadi et al., 2016] reaches 97 % at (8, 1e-5)-DP in 700 epochs", "Table 3.1",
          "accuracy of DP-SGD re-run (the chapter's MLP, after 700 epochs) − 0.97", "≈", modes=("full",),
          note="the thesis quotes Abadi et al., who project the images onto 60 PCA components first; the re-run "
               "trains the chapter's MLP on the pixels and reports the final accuracy, not the best"),
    Claim("proposed_beats_plain_1000", "The proposed framework outperforms the plain LDP-FL (1,000 clients)",
          "Fig. 3.3", "best accuracy, proposed LDP-FL − plain LDP-FL, 1,000 clients", ">", modes=("full",)),
    Claim("proposed_close_to_vanilla_1000", "... and obtains almost the same accuracy of 97 %, compared with vanilla "
          "FL", "Fig. 3.3", "best accuracy, proposed LDP-FL − vanilla-FL, 1,000 clients", "≈", modes=("full",)),
    Claim("proposed_ldp_accuracy_1000", "The proposed LDP-FL reaches 97 % with 1,000 clients", "Table 3.1",
          "best accuracy of the proposed LDP-FL, 1,000 clients − 0.97", "≈", modes=("full",)),
    Claim("ldp_budget_rounds_1000", "The LDP budget stops LDP-FL after 63 rounds (1,000 clients)", "Table 3.1 (CR)",
          "rounds the proposed LDP-FL ran, 1,000 clients − 63", "≈", unit="count", modes=("full",)),
    Claim("lcdp_beats_cdp_1000", "LCDP-FL with 1,000 clients also outperforms the CDP-only FL framework in "
          "[Geyer et al., 2017] (94.3 % vs 92 %)", "Table 3.1, Fig. 3.5",
          "best accuracy, LCDP-FL top-10 % − CDP-FL re-run, 1,000 clients", ">", modes=("full",)),
    Claim("lcdp_accuracy_1000", "The proposed LCDP-FL reaches 94.3 % with 1,000 clients", "Table 3.1",
          "best accuracy of LCDP-FL top-10 %, 1,000 clients − 0.943", "≈", modes=("full",)),
    Claim("lcdp_below_ldp_1000", "When adopting CDP, the LCDP-FL has slightly worse accuracy than LDP-FL",
          "Fig. 3.5, §3.2.2.2", "best accuracy, proposed LDP-FL − LCDP-FL top-10 %, 1,000 clients", ">",
          modes=("full",)),
    Claim("cdp_budget_rounds_1000", "The CDP budget stops LCDP-FL after 54 rounds (1,000 clients)",
          "Table 3.1 (CR)", "rounds LCDP-FL top-10 % ran, 1,000 clients − 54", "≈", unit="count", modes=("full",)),
    Claim("ldp_guarantee", "The proposed LDP-FL is (0.5, 1e-6)-DP after 52 rounds (σ = 8, 100 clients)",
          "Table 3.1 (DP)", "ε as run / 0.5 − 1: one client's uploads against the server (client level, no "
          "amplification by sampling), noise σC/n_i on a clipped update, the most frequent participant of 52 rounds",
          "≈", unit="epsilon", note="LDP-FL as written does not clip (S_i = ‖D_i‖/n_i), so its ε has no bound at "
          "all; the value is for our clipped correction. The thesis's convention (q = 1/M per participant, "
          "sensitivity ‖D_i‖/n_i) gives the 0.5 (see the privacy table)"),
    Claim("cdp_accountant_binds", "CDP has relatively higher loss than the one of LDP. Therefore, the FL always "
          "stops when the CDP accountant exceeds the privacy budget", "§3.2.2.2, Table 3.1",
          "1 − ε of LCDP-FL's LDP track (σ = 2) after the rounds the CDP budget allows (11 / 54) / the budget ε = 8",
          ">", unit="epsilon", modes=("full",),
          settings=tuple(f"{n} clients, {a}" for n in ("100", "1,000") for a in ("the thesis's convention", "as run")),
          note="the thesis's convention is its moments accountant (q = 1/M per participant, sensitivity ‖D_i‖/n_i); "
               "as run is one client's clipped uploads against the server (as ldp_guarantee reads them)"),
    Claim("sample_sensitivity", "The LDP sensitivity of client i is S_LDP_i = ‖∇W_i‖/n_i", "eq. 3.2",
          "largest measured ‖∇W_i(D') − ∇W_i(D)‖ / (‖∇W_i(D)‖/n_i) − 1 over neighbouring D, D' (one sample "
          "replaced; D' clipped at ‖∇W_i(D)‖)", "<", unit="relative",
          note="our reading: the division by n_i is a sample-level sensitivity; the measurement is a lower bound on "
          "the true one (a sup over all neighbours)"),
]


def _fl_config(cfg: DPFLConfig, seed: int, *, rounds: int, m: int, lr: float, decay: float, decay_rounds: int,
               local_momentum: float | None = None) -> FLConfig:
    beta = cfg.local_momentum if local_momentum is None else local_momentum
    return FLConfig(rounds=rounds, clients_per_round=m,
                    local=LocalSGD(cfg.local_epochs, cfg.batch_size, momentum=beta, dampening=beta),
                    lr=lr, lr_decay=decay, lr_decay_rounds=decay_rounds, seed=seed)


def ldp_budget_rounds(cfg: DPFLConfig, s: Setting) -> int:
    """Rounds the LDP budget allows at the setting's σ_LDP: 52 (100 clients) / 65 (1,000)."""
    return rounds_within_budget(noise_multiplier=s.ldp_sigma, sample_rate=1 / s.num_clients,
                                steps_per_round=s.clients_per_round,
                                budget=moments_budget(cfg.ldp_epsilon, cfg.ldp_delta))


def ldp_rounds(cfg: DPFLConfig, s: Setting) -> int:
    """Rounds the LDP-FL track runs: the budget's stop, capped in quick mode."""
    budget = ldp_budget_rounds(cfg, s)
    return min(budget, cfg.ldp_max_rounds or budget)


def lcdp_rounds(cfg: DPFLConfig, s: Setting) -> int:
    """Rounds the LCDP-FL track runs: the CDP budget's stop (10 / 53 with our accountant), capped in quick mode."""
    budget = rounds_within_budget(noise_multiplier=s.cdp_sigma, sample_rate=s.clients_per_round / s.num_clients,
                                  steps_per_round=1, budget=moments_budget(cfg.lcdp_epsilon, s.cdp_delta))
    return min(budget, cfg.lcdp_max_rounds or budget)


def lcdp_epsilon(cfg: DPFLConfig, s: Setting, rounds: int) -> float:
    """The ε the LCDP-FL track's CDP accountant has spent after ``rounds`` rounds (the budget's δ and conversion)."""
    budget = moments_budget(cfg.lcdp_epsilon, s.cdp_delta)
    return float(epsilon_curve(noise_multiplier=s.cdp_sigma, sample_rate=s.clients_per_round / s.num_clients,
                               steps=rounds, delta=budget.delta, orders=MOMENTS_ORDERS,
                               conversion=budget.conversion)[-1])


def at_sigma(name: str, sigma: float, s: Setting) -> str:
    """The variant name of ``name`` run at σ_LDP = ``sigma`` (the paper's σ keeps the plain name)."""
    return name if sigma == s.ldp_sigma else f"{name}, σ = {sigma:g}"


def ldp_variants(cfg: DPFLConfig, s: Setting, noise: bool = True) -> dict[str, Callable[[], Algorithm]]:
    """The LDP-FL runs of a setting (Figs. 3.2-3.3): vanilla-FL, then plain / + top-k / + Global-MGD / proposed at
    the paper's σ_LDP (stopped by the budget) and at the setting's extra σ (ours, same rounds), and the β
    ablation. ``noise=False`` is the ``noise_off`` defect."""
    budget = moments_budget(cfg.ldp_epsilon, cfg.ldp_delta)

    def ldp(top_rate: float, beta: float, sigma: float) -> Callable[[], Algorithm]:
        paper = sigma == s.ldp_sigma  # the budget is the paper's at the paper's σ; another σ runs the same rounds
        return lambda: ldp_fl(sigma if noise else 0.0, top_rate=top_rate, momentum=beta,
                              budget=budget if paper else None)

    variants: dict[str, Callable[[], Algorithm]] = {"vanilla-FL": vanilla_fl}
    for sigma in [s.ldp_sigma] + ([s.extra_sigma] if s.extra_sigma is not None else []):
        variants[at_sigma("plain LDP-FL", sigma, s)] = ldp(1.0, 0.0, sigma)
        variants[at_sigma(f"+ top-{cfg.top_rate:.0%}", sigma, s)] = ldp(cfg.top_rate, 0.0, sigma)
        variants[at_sigma("+ Global-MGD", sigma, s)] = ldp(1.0, cfg.momentum, sigma)
        variants[at_sigma("proposed LDP-FL", sigma, s)] = ldp(cfg.top_rate, cfg.momentum, sigma)
    for beta in cfg.betas:
        if beta not in (0.0, cfg.momentum):
            variants[f"proposed, β = {beta:g}"] = ldp(cfg.top_rate, beta, s.ldp_sigma)
    return variants


def lcdp_variants(cfg: DPFLConfig, s: Setting, noise: bool = True) -> dict[str, Callable[[], Algorithm]]:
    """The LCDP-FL runs of a setting (Figs. 3.4-3.5): three top-rates, the two literal readings of the CDP step,
    and CDP-FL (Geyer et al.) re-run. ``noise=False`` is the ``noise_off`` defect."""
    ldp_budget = moments_budget(cfg.lcdp_epsilon, cfg.ldp_delta)
    cdp_budget = moments_budget(cfg.lcdp_epsilon, s.cdp_delta)
    ldp_sigma, cdp_sigma = (cfg.lcdp_ldp_sigma, s.cdp_sigma) if noise else (0.0, 0.0)

    def lcdp(top_rate: float, **kw) -> Callable[[], Algorithm]:
        return lambda: lcdp_fl(ldp_sigma, cdp_sigma, top_rate=top_rate, momentum=cfg.momentum,
                               ldp_budget=ldp_budget, cdp_budget=cdp_budget, **kw)

    variants = {f"LCDP-FL, top-{rate:.0%}": lcdp(rate) for rate in cfg.top_rates}
    variants["LCDP-FL, noise after momentum (Alg. 3.1 l. 14)"] = lcdp(cfg.top_rate, placement="after_momentum")
    variants["LCDP-FL, noise std σS on the average (eq. 3.3)"] = lcdp(cfg.top_rate, noise_on="average")
    variants["CDP-FL (Geyer et al.)"] = lambda: cdp_fl(cdp_sigma, budget=cdp_budget)
    return variants


class _Runs:
    """The training runs of one setting, each a unit, on one federation."""

    def __init__(self, cfg: DPFLConfig, s: Setting, fed: Federation, *, seed: int, mode: str, units: Units,
                 progress: bool, checkpoints: Path | None) -> None:
        self.cfg, self.s, self.fed, self.seed, self.mode = cfg, s, fed, seed, mode
        self.units, self.progress, self.checkpoints = units, progress, checkpoints
        self.out: dict[str, RunSummary | None] = {}

    def train(self, name: str, algorithm: Callable[[], Algorithm], *, track: str) -> None:
        cfg, s = self.cfg, self.s
        geyer = name.startswith("CDP-FL")  # Geyer et al. train with plain local SGD
        if track == "ldp":
            fl = _fl_config(cfg, self.seed, rounds=ldp_rounds(cfg, s), m=s.clients_per_round, lr=cfg.ldp_lr,
                            decay=0.96, decay_rounds=20)
        else:
            fl = _fl_config(cfg, self.seed, rounds=lcdp_rounds(cfg, s), m=s.clients_per_round,
                            lr=s.lcdp_lr * cfg.lcdp_lr_scale, decay=0.78, decay_rounds=9,
                            local_momentum=0.0 if geyer else None)
        ckpt = checkpoint_path(self.checkpoints, "dpfl", self.seed, f"{s.num_clients}-{name}")

        def compute() -> RunSummary:
            out = run_federated(fresh_model(cfg.model, self.seed), self.fed.train, self.fed.clients, self.fed.test,
                                fl, algorithm(), progress=self.progress, checkpoint=ckpt, device=device())
            if ckpt is not None and self.units.folder is not None:
                ckpt.unlink(missing_ok=True)  # the unit file keeps the result
            return out.summary()

        spec = {"dataset": cfg.dataset, "model": cfg.model, "partition": "class_shards", "clients": s.num_clients,
                "repeat": s.repeat, "subset": self.mode, "fl": fl, "algorithm": algorithm()}
        self.out[name] = train_unit(self.units, f"{s.num_clients}/{name}", spec, compute)

    def best(self, name: str) -> float | None:
        out = self.out.get(name)
        return None if out is None else out.best_accuracy

    def final(self, name: str) -> float | None:
        out = self.out.get(name)
        return None if out is None else out.final_accuracy

    def rounds(self, name: str) -> int | None:
        out = self.out.get(name)
        return None if out is None else out.rounds_completed

    def speedup(self, res: Results, claim: Claim, name: str, reference: str, *, setting: str,
                budget: int | None) -> None:
        """Record the share of rounds run ``name`` saves to reach run ``reference``'s best accuracy
        (:func:`~fedlib.experiments.common.rounds_saved`; ``budget``: the rounds the privacy budget allows)."""
        value, detail, interval = rounds_saved(self.out.get(name), self.out.get(reference), len(self.fed.test),
                                               budget, reference=reference)
        res.measure(claim, value, detail, setting=setting, interval=interval)

    def pick(self, names: Sequence[str], *, worst: bool = False, final: bool = False) -> str | None:
        """The run of ``names`` with the highest (``worst``: lowest) best accuracy (``final``: final accuracy); None
        while any of them has not run."""
        accs = [(self.final if final else self.best)(n) for n in names]
        if any(a is None for a in accs):
            return None
        return names[accs.index(min(accs) if worst else max(accs))]

    def compare(self, res: Results, claim: Claim, a: str | None, b: str | None, detail: str, *, setting: str = "",
                final: bool = False) -> None:
        """Record acc(a) − acc(b), the runs' best (``final``: final) test accuracies, with the test set's sampling
        bound: paired where both runs kept the per-image results of those models."""
        acc = self.final if final else self.best
        bits = [None if x is None or self.out.get(x) is None else self.out[x].correct(best=not final)
                for x in (a, b)]
        res.measure_difference(claim, None if a is None else acc(a), None if b is None else acc(b), detail,
                               setting=setting, test_images=len(self.fed.test), disagreement=disagreement(*bits))


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _noise_anatomy(cfg: DPFLConfig, s: Setting, fed: Federation, seed: int, clients: int = 5) -> list[dict]:
    """What top-k keeps of real first-round updates, and the LDP noise norm it leaves (eqs. 3.1-3.2).

    ‖noise‖ / ‖D‖ = σ √k ‖D_sparse‖ / (n_i ‖D‖): sparsity shrinks both √k and ‖D_sparse‖.
    """
    beta = cfg.local_momentum
    updates = first_round_updates(cfg.model, fed, range(clients), seed=seed, lr=cfg.ldp_lr,
                                  opt=LocalSGD(cfg.local_epochs, cfg.batch_size, momentum=beta, dampening=beta),
                                  stream="anatomy")
    sizes = [len(fed.clients[i]) for i in range(clients)]
    rows = []
    for rate in sorted({*cfg.top_rates, cfg.top_rate}):
        kept = [float(torch.linalg.vector_norm(top_k(u, rate)[0]) / torch.linalg.vector_norm(u)) for u in updates]
        k = top_k_count(updates[0].numel(), rate)
        noise = [noise_norm_ratio(s.ldp_sigma, k, n) * f for f, n in zip(kept, sizes)]
        rows.append({"clients": s.num_clients, "top_rate": rate, "k": k, "norm_kept": sum(kept) / clients,
                     "noise_over_update": sum(noise) / clients,
                     "noise_over_update_mean_of_m": sum(noise) / clients / math.sqrt(s.clients_per_round)})
    return rows


def replacements(fed: Federation, client: int, count: int, seed: int) -> list[int]:
    """``count`` training samples to put in place of client ``client``'s first sample: drawn at random among the
    samples whose label differs from it (a neighbouring data set a worst case would look like)."""
    first = fed.clients[client][0]
    others = torch.nonzero(fed.train.y != fed.train.y[first]).flatten()
    pick = torch.randperm(len(others), generator=make_generator(seed, "sensitivity", "replacements"))[:count]
    return others[pick].tolist()


def _sensitivity(cfg: DPFLConfig, s: Setting, fed: Federation, seed: int) -> dict:
    """LDP-FL's eq. 3.2 measured: one client's first-round update (local MGD, dense, as plain LDP-FL) on its data and
    on neighbouring data sets, each ratio ‖D' − D‖ / (‖D‖/n_i) with D' clipped at ‖D‖."""
    beta = cfg.local_momentum
    swaps = replacements(fed, 0, cfg.sensitivity_swaps, seed)
    update, neighbours = one_sample_neighbours(cfg.model, fed, 0, swaps, seed=seed, lr=cfg.ldp_lr,
                                               opt=LocalSGD(cfg.local_epochs, cfg.batch_size, momentum=beta,
                                                            dampening=beta), stream="sensitivity")
    flat = [slice(0, update.numel())]
    bound = torch.linalg.vector_norm(update).reshape(1)
    n = len(fed.clients[0])
    return {"n_i": n, "update_norm": float(bound), "replaced_label": int(fed.train.y[fed.clients[0][0]]),
            "labels": [int(fed.train.y[r]) for r in swaps],
            "ratios": [sensitivity_ratio(update, d, bound, flat, n) for d in neighbours]}


def run(config: DPFLConfig = QUICK, *, mode: str = "quick", seed: int = 0, progress: bool = False,
        units: Units | None = None, defect: str | None = None, checkpoints: Path | None = None) -> Results:
    """Run the chapter and return its :class:`~fedlib.results.Results` (full mode: as units; ``checkpoints``: a
    folder where each training run resumes from; in full mode it defaults to ``<units>/../checkpoints``)."""
    if defect is not None and defect not in DEFECTS:
        raise ValueError(f"defect must be one of {sorted(DEFECTS)} or None, got {defect!r}")
    began = time.perf_counter()
    cfg = config
    units = units or Units("dpfl", mode, seed)
    if checkpoints is None and units.folder is not None:
        checkpoints = units.folder.parent / "checkpoints"
    res = Results("dpfl", mode, seed, dataclasses.asdict(cfg))
    noise = defect != "noise_off"

    feds: dict[int, Federation] = {}
    for s in cfg.settings:  # every data set the run needs, before any unit runs
        try:
            feds[s.num_clients] = make_federation(cfg.dataset, "class_shards", s.num_clients, seed=seed,
                                                  repeat=s.repeat, subset=mode)
        except blocking_errors(mode) as err:
            units.block(f"{s.num_clients}/*", str(err))
    try:
        dpsgd_data = (load_dataset(cfg.dataset, train=True, subset=mode),
                      load_dataset(cfg.dataset, train=False, subset=mode))
    except blocking_errors(mode) as err:
        dpsgd_data = None
        units.block("dpsgd", str(err))

    t31, ablation, literal, comm, anatomy, privacy, sensitivity = [], [], [], [], [], [], []
    top = f"top-{cfg.top_rate:.0%}"
    runs: dict[int, _Runs] = {}
    for s in cfg.settings:
        fed = feds.get(s.num_clients)
        if fed is None:
            continue
        r = runs[s.num_clients] = _Runs(cfg, s, fed, seed=seed, mode=mode, units=units, progress=progress,
                                        checkpoints=checkpoints)
        for name, algorithm in ldp_variants(cfg, s, noise).items():
            r.train(name, algorithm, track="ldp")
        for name, algorithm in lcdp_variants(cfg, s, noise).items():
            r.train(name, algorithm, track="lcdp")
        key = f"{s.num_clients}"
        for name, out in r.out.items():
            if out is not None:
                res.add_series(f"{key}/{name}", *out.series("accuracy"), label=name)
        d = sum(p.numel() for p in fresh_model(cfg.model, seed).parameters())
        lcdp10 = f"LCDP-FL, {top}"
        t31 += _t31_rows(cfg, s, r, lcdp10)
        for name, out in r.out.items():
            values = None if out is None or not out.metrics else out.metrics[-1].get("uploaded_values", d) / d
            ablation.append({"clients": s.num_clients, "variant": name, "rounds": r.rounds(name),
                             "values_uploaded": values, "best": r.best(name), "final": r.final(name),
                             "diverged": None if out is None else out.diverged})
            if name in ("vanilla-FL", "proposed LDP-FL") or name.startswith("LCDP-FL, top-"):
                sparse = values is not None and values < 1
                comm.append({"clients": s.num_clients, "variant": name, "values_uploaded": values,
                             "indices_uploaded": None if values is None else values if sparse else 0.0,
                             "paper": 1 - cfg.top_rate if name in ("proposed LDP-FL", lcdp10) else None,
                             "ours": None if values is None else 1 - values,
                             "saving_incl_indices": None if values is None else 1 - values * (2 if sparse else 1)})
        literal += [
            {"clients": s.num_clients, "item": "CDP noise scale: std σS/m (Geyer, ours) vs σS (eq. 3.3 literal)",
             "corrected": r.best(lcdp10), "literal": r.best("LCDP-FL, noise std σS on the average (eq. 3.3)")},
            {"clients": s.num_clients, "item": "CDP noise before Global-MGD (eqs. 3.3, 3.6) vs after (Alg. 3.1 l. 14)",
             "corrected": r.best(lcdp10), "literal": r.best("LCDP-FL, noise after momentum (Alg. 3.1 l. 14)")},
            {"clients": s.num_clients, "item": "rounds the CDP budget allows: ε_CDP = 8 (Table 3.1) vs 0.5 (text)",
             "corrected": rounds_within_budget(noise_multiplier=s.cdp_sigma,
                                               sample_rate=s.clients_per_round / s.num_clients, steps_per_round=1,
                                               budget=moments_budget(cfg.lcdp_epsilon, s.cdp_delta)),
             "literal": rounds_within_budget(noise_multiplier=s.cdp_sigma,
                                             sample_rate=s.clients_per_round / s.num_clients, steps_per_round=1,
                                             budget=moments_budget(cfg.ldp_epsilon, s.cdp_delta))},
        ]
        privacy += _privacy_rows(cfg, s, fed, seed)
        # ε(t) of both accountants over the rounds (thesis's convention: LDP q = 1/M per participant, CDP q = m/M)
        rounds = list(range(1, cfg.curve_rounds + 1))
        res.add_series(f"{key}/eps_ldp", rounds, epsilon_curve(
            noise_multiplier=s.ldp_sigma, sample_rate=1 / s.num_clients, steps=cfg.curve_rounds,
            steps_per_round=s.clients_per_round, delta=cfg.ldp_delta, orders=MOMENTS_ORDERS,
            conversion="classic").tolist(), label=f"LDP-FL: σ = {s.ldp_sigma:g}, q = 1/M, δ = {cfg.ldp_delta:g}")
        res.add_series(f"{key}/eps_cdp", rounds, epsilon_curve(
            noise_multiplier=s.cdp_sigma, sample_rate=s.clients_per_round / s.num_clients, steps=cfg.curve_rounds,
            delta=s.cdp_delta, orders=MOMENTS_ORDERS, conversion="classic").tolist(),
            label=f"CDP: σ = {s.cdp_sigma:g}, q = m/M, δ = {s.cdp_delta:g}")
        spec = {"model": cfg.model, "dataset": cfg.dataset, "subset": mode, "clients": s.num_clients,
                "repeat": s.repeat, "local": (cfg.local_epochs, cfg.batch_size, cfg.local_momentum), "lr": cfg.ldp_lr}
        out = units.run(f"{key}/noise-anatomy", {**spec, "top_rates": sorted({*cfg.top_rates, cfg.top_rate}),
                                                 "sigma": s.ldp_sigma},
                        lambda: {"rows": _noise_anatomy(cfg, s, fed, seed)})
        anatomy += [] if out is None else out["rows"]
        if s is cfg.settings[0]:
            out = units.run(f"{key}/sensitivity", {**spec, "swaps": cfg.sensitivity_swaps},
                            lambda: _sensitivity(cfg, s, fed, seed))
            if out is not None:
                sensitivity = [{"neighbour": k, "replaced_label": out["replaced_label"], "new_label": label,
                                "ratio": ratio, "paper": 1.0, "ours": ratio}
                               for k, (label, ratio) in enumerate(zip(out["labels"], out["ratios"]))]

    # DP-SGD, the sample-level reference of Table 3.1
    dpsgd = dataclasses.replace(cfg.dpsgd, seed=seed)
    ref = None if dpsgd_data is None else units.run(
        "dpsgd", {"dpsgd": dpsgd, "model": cfg.model, "dataset": cfg.dataset, "subset": mode},
        lambda: dataclasses.asdict(train_dpsgd(fresh_model(cfg.model, seed), *dpsgd_data, dpsgd)))
    t31.insert(0, {"algorithm": "DP-SGD (Abadi et al., 2016)", "clients": 1, "csr": 1.0, "rounds_paper": 700,
                   "rounds_ours": dpsgd.epochs, "dp": f"(8, {dpsgd.delta:g})-DP",
                   "epsilon_ours": None if ref is None else ref["epsilon"], "paper": 0.97,
                   "ours": None if ref is None else ref["accuracy"]})
    t31[1:1] = [{**row, "rounds_ours": None, "epsilon_ours": None, "ours": None} for row in QUOTED_ROWS]
    res.add_table("T3.1", "Table 3.1: maximum test accuracy of the proposed LDP-FL / LCDP-FL and the DP baselines "
                  "(MNIST, MLP); ε in the thesis's convention. LDPFL (Sun et al., 2021) is quoted, not re-run.", t31)
    res.add_table("noise", "Top-k on real first-round updates (5 clients): share of the update's norm kept, and "
                  "the LDP noise norm relative to the full update, per client and on the average of m clients",
                  anatomy)
    res.add_table("ablation", "Every variant: rounds run, fraction of values uploaded, best and final accuracy",
                  ablation)
    res.add_table("communication", "Upload per client per round as a fraction of the model's d values; paper/ours: "
                  "the saving in values (the thesis's '90 %'); the last column also counts the 32-bit indices",
                  comm)
    res.add_table("literal", "The literal CDP variants beside the corrected ones (best accuracy; last row: rounds)",
                  literal)
    res.add_table("privacy", "What the uploads spend: ε in the thesis's convention (σ a multiplier on the "
                  "sensitivity ‖D_i‖/n_i, every participant one sampled Gaussian mechanism with q = 1/M) and ε as run "
                  "(one client's uploads against the server, which sees who uploads: q = 1; client level, noise "
                  "σC/n_i on an update clipped at C, i.e. multiplier σ/n_i; the most frequent participant)", privacy)
    if sensitivity:
        res.add_table("sensitivity", "Eq. 3.2 measured: how far replacing one of a client's samples moves its "
                      "update, in units of the sensitivity ‖D_i‖/n_i the thesis accounts with (paper: at most 1)",
                      sensitivity)
    first = cfg.settings[0]
    n_mean = None if first.num_clients not in feds else sum(len(c) for c in feds[first.num_clients].clients) / \
        len(feds[first.num_clients].clients)
    if n_mean is not None:
        cases = [("ldp_fl_literal", first.ldp_sigma, n_mean), ("ldp_fl_clipped", first.ldp_sigma, n_mean),
                 ("central", first.cdp_sigma, 1.0)]
        add_audit_as_run(res, units, cases, seed=seed, trials=cfg.audit_trials,
                         what="LDP-FL's client (as written and clipped, σ = 8) and the CDP server (σ_CDP)")
    _measure(res, cfg, runs, privacy, sensitivity,
             dpsgd=None if ref is None else (ref, f"ε = {ref['epsilon']:.3g} after {ref['steps']:,} steps",
                                             len(dpsgd_data[1])))
    res.evaluate(LEDGER)
    res.elapsed_s = time.perf_counter() - began
    return res


def _measure_saving(res: Results, claim: dict[str, Claim], out: RunSummary | None, d: int) -> None:
    """§3.2.2.2's "reduce 90 % of the total communication costs" on LCDP-FL top-10 %'s last round, three ways: the
    values uploaded (the thesis's count), the upload with its indices, and the round trip with the dense broadcast.
    Counted in exact fractions: top-10 % of d = 199,210 is exactly d/10, and the upload with indices saves exactly
    the 80 % that sits on the '≈' rule's 2·margin line, which float rounding would move inside it."""
    kept = None if out is None or not out.metrics else int(out.metrics[-1]["uploaded_values"])
    paper = Fraction(9, 10)
    for cid, saved, detail in (
            ("upload_saving", lambda k: Fraction(d - k, d), "values uploaded: {k:,} of d = {d:,}"),
            ("upload_saving_with_indices", lambda k: Fraction(d - 2 * k, d),
             "32-bit words uploaded: {k:,} values + {k:,} indices, of d = {d:,}"),
            ("round_trip_saving", lambda k: 1 - Fraction(2 * k + d, 2 * d),
             "32-bit words a round moves per client: {k:,} values + {k:,} indices up, d = {d:,} down, against 2 d "
             "for dense FL")):
        res.measure(claim[cid], None if kept is None else float(saved(kept) - paper),
                    "" if kept is None else detail.format(k=kept, d=d))


def _t31_rows(cfg: DPFLConfig, s: Setting, r: _Runs, lcdp10: str) -> list[dict]:
    proposed, cdp = r.out.get("proposed LDP-FL"), r.out.get("CDP-FL (Geyer et al.)")
    lcdp = r.out.get(lcdp10)

    def eps(out: RunSummary | None, key: str) -> float | None:
        return None if out is None or not out.metrics else out.metrics[-1].get(key)

    base = {"clients": s.num_clients, "csr": s.clients_per_round / s.num_clients}
    return [
        {"algorithm": "Proposed LDP-FL", **base, "rounds_paper": s.paper_ldp_rounds,
         "rounds_ours": r.rounds("proposed LDP-FL"), "dp": f"({cfg.ldp_epsilon:g}, {cfg.ldp_delta:g})-LDP",
         "epsilon_ours": eps(proposed, "epsilon_ldp"), "paper": s.paper_ldp, "ours": r.best("proposed LDP-FL")},
        {"algorithm": "CDP-FL (Geyer et al., 2017)", **base, "rounds_paper": s.paper_lcdp_rounds,
         "rounds_ours": r.rounds("CDP-FL (Geyer et al.)"), "dp": f"({cfg.lcdp_epsilon:g}, {s.cdp_delta:g})-CDP",
         "epsilon_ours": eps(cdp, "epsilon_cdp"), "paper": s.paper_cdp, "ours": r.best("CDP-FL (Geyer et al.)")},
        {"algorithm": "Proposed LCDP-FL", **base, "rounds_paper": s.paper_lcdp_rounds,
         "rounds_ours": r.rounds(lcdp10), "dp": f"({cfg.lcdp_epsilon:g}, {s.cdp_delta:g})-CDP & "
         f"({cfg.lcdp_epsilon:g}, δ)-LDP", "epsilon_ours": eps(lcdp, "epsilon_cdp"),
         "ldp_delta_ours": None if lcdp is None else _lcdp_ldp_delta(cfg, s, lcdp.rounds_completed),
         "paper": s.paper_lcdp, "ours": r.best(lcdp10)},
    ]


def _lcdp_ldp_delta(cfg: DPFLConfig, s: Setting, rounds: int) -> float:
    """δ of LCDP-FL's LDP track at ε = 8 after ``rounds`` rounds, in the thesis's convention (1.07e-107 / 4e-111)."""
    rdp = compute_rdp(q=1 / s.num_clients, noise_multiplier=cfg.lcdp_ldp_sigma, steps=rounds * s.clients_per_round,
                      orders=MOMENTS_ORDERS)
    return rdp_to_delta(MOMENTS_ORDERS, rdp, cfg.lcdp_epsilon)[0]


def _privacy_rows(cfg: DPFLConfig, s: Setting, fed: Federation, seed: int) -> list[dict]:
    """ε of LDP-FL (σ_LDP, the budget's rounds) and of LCDP-FL's LDP part (σ = 2, the CDP budget's rounds), in the
    thesis's convention (its moments accountant) and as run (the tightest conversion fedlib has: RDP over
    TF-Privacy's orders, improved conversion)."""
    n_mean = sum(len(c) for c in fed.clients) / len(fed.clients)
    rows = []
    for track, sigma, rounds, eps_paper in (("LDP-FL", s.ldp_sigma, s.paper_ldp_rounds, cfg.ldp_epsilon),
                                            ("LCDP-FL, LDP part", cfg.lcdp_ldp_sigma, s.paper_lcdp_rounds, None)):
        thesis, order = thesis_epsilon(noise_multiplier=sigma, num_clients=s.num_clients,
                                       clients_per_round=s.clients_per_round, rounds=rounds, delta=cfg.ldp_delta,
                                       orders=MOMENTS_ORDERS, conversion="classic")
        k = max(participations(s.num_clients, s.clients_per_round, rounds, seed))
        as_run, _ = epsilon_as_run(noise_multiplier=sigma, num_samples=n_mean, participations=k, delta=cfg.ldp_delta)
        base = {"clients": s.num_clients, "track": track, "sigma": sigma, "rounds": rounds, "delta": cfg.ldp_delta}
        rows += [{**base, "accounting": "the thesis's convention (q = 1/M, sensitivity ‖D_i‖/n_i)",
                  "uploads": rounds * s.clients_per_round, "paper": eps_paper, "ours": thesis, "order": order},
                 {**base, "accounting": f"as run, clipped at C (ours; as written: no bound), n_i = {n_mean:.0f}",
                  "uploads": k, "paper": None, "ours": as_run, "order": None}]
    return rows


def _measure(res: Results, cfg: DPFLConfig, runs: dict[int, _Runs], privacy: list[dict],
             sensitivity: list[dict], *, dpsgd: tuple[dict, str, int] | None) -> None:
    """This run's value of every claim of :data:`LEDGER` (None where a unit has not run); ``dpsgd``: the DP-SGD
    unit's result, what it spent, and its test set's size."""
    claim = {c.id: c for c in LEDGER}
    top = f"+ top-{cfg.top_rate:.0%}"
    lcdp = {rate: f"LCDP-FL, top-{rate:.0%}" for rate in cfg.top_rates}
    lcdp10 = lcdp[cfg.top_rate]
    variant_of = {GEYER: lcdp10, AFTER: "LCDP-FL, noise after momentum (Alg. 3.1 l. 14)",
                  AVERAGE: "LCDP-FL, noise std σS on the average (eq. 3.3)"}

    def quoted(r: _Runs) -> None:
        """Table 3.1's LCDP-FL and CDP-FL re-run against the CDP-FL accuracy the thesis quotes."""
        setting, n = f"{r.s.num_clients:,} clients", len(r.fed.test)
        for cid, name in (("lcdp_beats_cdp_quoted", lcdp10), ("cdp_quoted_value", "CDP-FL (Geyer et al.)")):
            acc = r.best(name)
            res.measure(claim[cid], _sub(acc, r.s.paper_cdp), f"{name} {acc} vs Geyer et al.'s {r.s.paper_cdp} "
                        "(quoted)", setting=setting, test_images=None if acc is None else n,
                        accuracies=None if acc is None else (acc,))

    r = runs.get(SETTING_100.num_clients)
    if r is not None:
        s, n = r.s, len(r.fed.test)  # accuracy claims: the test set's sampling bound (full mode)
        for setting, sigma in ((PAPER, s.ldp_sigma), (OURS, s.extra_sigma)):
            name = {n: at_sigma(n, sigma, s) for n in ("plain LDP-FL", top, "+ Global-MGD", "proposed LDP-FL")}
            best = {n: r.best(v) for n, v in name.items()}
            final = {n: r.final(v) for n, v in name.items()}
            shown = ", ".join(f"{n} {v}" for n, v in best.items())
            r.compare(res, claim["vanilla_above_ldp"], "vanilla-FL", r.pick(list(name.values())),
                      f"best accuracy: vanilla-FL {r.best('vanilla-FL')}, {shown}", setting=setting)
            r.compare(res, claim["topk_helps"], name[top], name["plain LDP-FL"], shown, setting=setting)
            r.compare(res, claim["mgd_helps"], name["+ Global-MGD"], name["plain LDP-FL"], shown, setting=setting)
            r.speedup(res, claim["mgd_speeds_up"], name["+ Global-MGD"], name["plain LDP-FL"], setting=setting,
                      budget=ldp_budget_rounds(cfg, s) if setting == PAPER else None)
            finals = ", ".join(f"{n} {v}" for n, v in final.items())
            r.compare(res, claim["proposed_beats_plain"], name["proposed LDP-FL"], name["plain LDP-FL"],
                      f"final accuracy: {finals}", setting=setting, final=True)
            r.compare(res, claim["proposed_beats_each_technique"], name["proposed LDP-FL"],
                      r.pick([name[top], name["+ Global-MGD"]], final=True), f"final accuracy: {finals}",
                      setting=setting, final=True)
        res.measure(claim["proposed_ldp_accuracy"], _sub(r.best("proposed LDP-FL"), s.paper_ldp),
                    f"best accuracy {r.best('proposed LDP-FL')} after {r.rounds('proposed LDP-FL')} rounds",
                    test_images=n, accuracies=(r.best("proposed LDP-FL"),))
        final = r.final("proposed LDP-FL")
        res.measure(claim["proposed_final_value"], _sub(final, 0.9631), f"final accuracy {final} after "
                    f"{r.rounds('proposed LDP-FL')} rounds", test_images=None if final is None else n,
                    accuracies=None if final is None else (final,))
        res.measure(claim["beats_sun_ldpfl"], _sub(r.best("proposed LDP-FL"), 0.9536),
                    f"best accuracy {r.best('proposed LDP-FL')} vs LDPFL (Sun et al., 2021) 0.9536 (quoted)",
                    test_images=n, accuracies=(r.best("proposed LDP-FL"),))
        rounds = r.rounds("proposed LDP-FL")
        res.measure(claim["ldp_budget_rounds"], _sub(rounds, s.paper_ldp_rounds), f"{rounds} rounds")
        accs = {rate: r.best(name) for rate, name in lcdp.items()}
        shown = ", ".join(f"top-{rate:.0%}: {a}" for rate, a in accs.items())
        r.compare(res, claim["lcdp_top10_best"], lcdp10,
                  r.pick([v for rate, v in lcdp.items() if rate != cfg.top_rate]), shown)
        low = min(cfg.top_rates)
        r.compare(res, claim["top1_worst"], r.pick([v for rate, v in lcdp.items() if rate != low], worst=True),
                  lcdp[low], shown)
        for setting in (GEYER, AFTER):
            r.compare(res, claim["lcdp_below_vanilla"], "vanilla-FL", variant_of[setting],
                      f"vanilla-FL {r.best('vanilla-FL')}, {variant_of[setting]} {r.best(variant_of[setting])}",
                      setting=setting)
        cdp = r.best("CDP-FL (Geyer et al.)")
        for setting, name in variant_of.items():
            r.compare(res, claim["lcdp_beats_cdp"], name, "CDP-FL (Geyer et al.)",
                      f"{name} {r.best(name)} vs CDP-FL re-run {cdp} (paper: 0.8024 vs Geyer et al.'s published "
                      "0.78)", setting=setting)
        res.measure(claim["lcdp_accuracy"], _sub(r.best(lcdp10), s.paper_lcdp), f"best accuracy {r.best(lcdp10)}",
                    test_images=n, accuracies=(r.best(lcdp10),))
        rounds = r.rounds(lcdp10)
        res.measure(claim["cdp_budget_rounds"], _sub(rounds, s.paper_lcdp_rounds),
                    f"{rounds} rounds (the thesis's {s.paper_lcdp_rounds} rounds spend ε = "
                    f"{lcdp_epsilon(cfg, s, s.paper_lcdp_rounds):.2f} against the budget's {cfg.lcdp_epsilon:g} with "
                    "our accountant)")
        _measure_saving(res, claim, r.out.get(lcdp10), sum(p.numel() for p in fresh_model(cfg.model, 0).parameters()))
        quoted(r)
    r = runs.get(SETTING_1000.num_clients)
    if r is not None:
        quoted(r)
        s, n = r.s, len(r.fed.test)
        accs = {rate: r.best(name) for rate, name in lcdp.items()}
        r.compare(res, claim["lcdp_top10_best_1000"], lcdp10,
                  r.pick([v for rate, v in lcdp.items() if rate != cfg.top_rate]),
                  ", ".join(f"top-{rate:.0%}: {a}" for rate, a in accs.items()))
        r.speedup(res, claim["mgd_speeds_up"], "+ Global-MGD", "plain LDP-FL", setting="1,000 clients",
                  budget=ldp_budget_rounds(cfg, s))
        r.compare(res, claim["proposed_beats_plain_1000"], "proposed LDP-FL", "plain LDP-FL",
                  f"proposed {r.best('proposed LDP-FL')}, plain {r.best('plain LDP-FL')}")
        r.compare(res, claim["proposed_close_to_vanilla_1000"], "proposed LDP-FL", "vanilla-FL",
                  f"proposed {r.best('proposed LDP-FL')}, vanilla-FL {r.best('vanilla-FL')}")
        res.measure(claim["proposed_ldp_accuracy_1000"], _sub(r.best("proposed LDP-FL"), s.paper_ldp),
                    f"best accuracy {r.best('proposed LDP-FL')}", test_images=n,
                    accuracies=(r.best("proposed LDP-FL"),))
        rounds = r.rounds("proposed LDP-FL")
        res.measure(claim["ldp_budget_rounds_1000"], _sub(rounds, s.paper_ldp_rounds), f"{rounds} rounds")
        r.compare(res, claim["lcdp_beats_cdp_1000"], lcdp10, "CDP-FL (Geyer et al.)",
                  f"LCDP-FL {r.best(lcdp10)}, CDP-FL re-run {r.best('CDP-FL (Geyer et al.)')}")
        res.measure(claim["lcdp_accuracy_1000"], _sub(r.best(lcdp10), s.paper_lcdp), f"best accuracy {r.best(lcdp10)}",
                    test_images=n, accuracies=(r.best(lcdp10),))
        r.compare(res, claim["lcdp_below_ldp_1000"], "proposed LDP-FL", lcdp10,
                  f"proposed LDP-FL {r.best('proposed LDP-FL')}, LCDP-FL {r.best(lcdp10)}")
        rounds = r.rounds(lcdp10)
        res.measure(claim["cdp_budget_rounds_1000"], _sub(rounds, s.paper_lcdp_rounds), f"{rounds} rounds")
    acc = None if dpsgd is None else dpsgd[0]["accuracy"]
    res.measure(claim["dpsgd_value"], _sub(acc, 0.97), "" if dpsgd is None else f"accuracy {acc} ({dpsgd[1]})",
                test_images=None if acc is None else dpsgd[2], accuracies=None if acc is None else (acc,))
    row = next((p for p in privacy if p["clients"] == SETTING_100.num_clients and p["track"] == "LDP-FL"
                and p["accounting"].startswith("as run")), None)
    res.measure(claim["ldp_guarantee"], None if row is None else row["ours"] / cfg.ldp_epsilon - 1,
                "" if row is None else f"ε as run {row['ours']:.4g} after {row['uploads']} uploads of one client "
                f"(σ = {row['sigma']:g}, δ = {row['delta']:g}); the thesis's convention gives 0.5")
    for row in privacy:
        if row["track"] == "LCDP-FL, LDP part":
            accounting = "as run" if row["accounting"].startswith("as run") else "the thesis's convention"
            res.measure(claim["cdp_accountant_binds"], 1 - row["ours"] / cfg.lcdp_epsilon,
                        f"ε_LDP {row['ours']:.4g} after {row['rounds']} rounds ({row['uploads']:,} "
                        f"{'uploads of the most frequent participant' if accounting == 'as run' else 'steps at q = 1/M'}"
                        f") against the budget ε = {cfg.lcdp_epsilon:g} the CDP accountant stops at",
                        setting=f"{row['clients']:,} clients, {accounting}")
    ratios = [row["ratio"] for row in sensitivity]
    res.measure(claim["sample_sensitivity"], max(ratios) - 1 if ratios else None,
                f"‖D' − D‖ n_i / ‖D‖ for {len(ratios)} neighbours: " + ", ".join(f"{x:.3g}" for x in ratios))


def paper_values() -> dict[str, float]:
    """Each claim measured on the thesis's own Table 3.1 where it reports what the claim reads (claim key -> value):
    the proposed LDP-FL against LDPFL (Sun et al., quoted) with 100 clients, LCDP-FL against the CDP-FL accuracy it
    quotes (100 and 1,000 clients), and the proposed LDP-FL against LCDP-FL with 1,000 clients. The table has no
    vanilla-FL, plain LDP-FL or single-technique row (Figs. 3.2-3.5 only), no CDP-FL or DP-SGD run in the thesis's
    own setup (both are quoted), no final accuracies and no rounds but the budgets' stops; claims that set our number
    beside the table's (proposed_ldp_accuracy, lcdp_accuracy, the budgets' rounds) read 0 on it by construction and
    get none."""
    sun = QUOTED_ROWS[0]["paper"]
    out = {"beats_sun_ldpfl": SETTING_100.paper_ldp - sun,
           "lcdp_below_ldp_1000": SETTING_1000.paper_ldp - SETTING_1000.paper_lcdp}
    for s in (SETTING_100, SETTING_1000):
        out[f"lcdp_beats_cdp_quoted/{s.num_clients:,} clients"] = s.paper_lcdp - s.paper_cdp
    return out
