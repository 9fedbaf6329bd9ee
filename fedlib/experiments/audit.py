"""Chapter "Auditing our privacy claims": an empirical lower bound ε̂ beside the ε each DP configuration claims.

Every audited mechanism is fedlib's own code path (the client transforms, ADPDFL's ``privatize``, the central
aggregator), run on real updates: the first-round updates of MNIST clients training a logistic regression. In each
run a client's update is replaced by a canary with probability ½ (:func:`fedlib.privacy.audit.audit`); the attacker
sees the release. The claimed ε is the exact one-release ε of a Gaussian mechanism at the sensitivity/std ratio that the
configuration's accountant assumes (:func:`fedlib.privacy.mechanisms.gaussian_epsilon`); an audit of one release
is the strictest test of the noise code, and the accountants compose releases from it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from fedlib.algorithms.adpdfl import privatize
from fedlib.experiments.common import first_round_updates, make_federation
from fedlib.fl import CentralGaussian, ClipUpdate, GaussianNoise, LocalSGD
from fedlib.fl.component import RoundContext
from fedlib.fl.transforms import ClientMessage, ClientTransform, MedianClip, NormBound
from fedlib.ledger import Claim
from fedlib.privacy.audit import audit, clopper_pearson_upper, epsilon_from_rates
from fedlib.privacy.mechanisms import gaussian_epsilon
from fedlib.results import Results
from fedlib.rng import make_generator
from fedlib.units import Units

Release = Callable[[Tensor, int], Tensor]


@dataclass(frozen=True)
class AuditConfig:
    """QUICK: 8,000 runs per audit (ε̂ can then certify at most ≈ 6.1); FULL: 80,000 (≈ 8.4). Updates:
    first-round updates of ``clients`` MNIST clients (logistic regression, 7,850 parameters, one epoch of SGD,
    B = 50, lr 0.1)."""

    trials: int = 8000
    clients: int = 10
    sigma: float = 1.0
    sweep: tuple[float, ...] = (0.5, 0.75, 1.0, 1.5, 2.0, 4.0)
    canary_scale: float = 10.0
    clip: float = 1.0
    delta: float = 1e-5
    alpha: float = 0.05


QUICK = AuditConfig()
FULL = AuditConfig(trials=80_000)


def _context(run: int, dim: int, clients: int = 1) -> RoundContext:
    return RoundContext(run, clients, clients, tuple(range(clients)), [slice(0, dim)], 0)


def transforms_release(make: Callable[[], list[ClientTransform]], *, bound_if_unclipped: float | None = None
                       ) -> Release:
    """A client's upload through fresh client transforms (one run = one round; run r draws round r's noise).
    ``bound_if_unclipped``: the sensitivity the noise claims when a negative control removes the clipping."""
    def release(update: Tensor, run: int) -> Tensor:
        msg = ClientMessage(client=0, num_samples=1, update=update.clone())
        if bound_if_unclipped is not None:
            msg.bound = torch.tensor(bound_if_unclipped)
        ctx = _context(run, len(update))
        for step in make():
            step(msg, ctx)
        return msg.update
    return release


def median_clip_release(history: list[Tensor], sigma: float) -> Release:
    """Plain DPFL's client (MedianClip + GaussianNoise, eqs. 3.8-3.9, flat): the client's running median is
    primed with its earlier updates ``history``, then the audited update is clipped and noised."""
    def release(update: Tensor, run: int) -> Tensor:
        clip, noise = MedianClip(per_layer=False), GaussianNoise(sigma)
        for t, past in enumerate(history):
            clip(ClientMessage(0, 1, past.clone()), _context(t, len(update)))
        msg = ClientMessage(0, 1, update.clone())
        ctx = _context(len(history) + run, len(update))
        clip(msg, ctx)
        noise(msg, ctx)
        return msg.update
    return release


def central_release(others: Tensor, sigma: float, bound: float | str = "median") -> Release:
    """The central-DP server (CentralGaussian: clipping at the median norm as CDP-FL / LCDP-FL, or at a constant
    as DP-FedAvg; noise σS on the sum): client 0's update beside the other clients' ``others`` (m − 1, d); the
    attacker sees the noisy average."""
    def release(update: Tensor, run: int) -> Tensor:
        updates = torch.cat([update.unsqueeze(0), others])
        agg = CentralGaussian(sigma, bound)
        return agg(updates, torch.full((len(updates),), 1.0 / len(updates)), _context(run, updates.shape[1],
                                                                                     len(updates)))
    return release


@dataclass(frozen=True)
class Canaries:
    """What every audit of one seed shares: real client updates (clients, d) and the canary update (d,), ten
    times the larger of the median update norm and the clipping bound, in a random direction."""

    updates: Tensor
    canary: Tensor
    seed: int
    clip: float

    @property
    def direction(self) -> Tensor:
        return self.canary / self.canary.norm()


def make_canaries(seed: int, *, clients: int = 10, canary_scale: float = 10.0, clip: float = 1.0) -> Canaries:
    """First-round updates of ``clients`` IID MNIST clients (logistic regression, one epoch of SGD, B = 50,
    lr 0.1) and a canary."""
    fed = make_federation("mnist", "iid", 100, seed=seed)
    updates = torch.stack(first_round_updates("logreg", fed, range(clients), seed=seed, lr=0.1,
                                              opt=LocalSGD(1, 50), stream="audit"))
    direction = torch.randn(updates.shape[1], generator=make_generator(seed, "audit", "canary"))
    scale = max(float(updates.norm(dim=1).median()), clip)
    return Canaries(updates, canary_scale * scale * direction / direction.norm(), seed, clip)


@dataclass(frozen=True)
class Case:
    """One audit: the mechanism's release, the neighbouring inputs, the sensitivity its accountant assumes (as
    a ratio Δ/std at noise multiplier σ: 1/σ for all cases here) and the attacker's test."""

    label: str
    claim: str
    release: Release
    without: Tensor
    with_canary: Tensor
    score_norm: bool = False
    note: str = ""


#: the audited mechanisms (and the two negative controls) by name
MECHANISMS = ("local", "dp_fedavg", "adpdfl", "plain_dpfl", "central", "central_constant", "ldp_fl_literal",
              "ldp_fl_clipped")
CONTROLS = ("control_noise_off", "control_no_clipping")
#: the mechanisms whose sensitivity is bounded (a constant or a past median): their claim should hold
VALID = tuple(n for n in MECHANISMS if n != "ldp_fl_literal")


def make_case(name: str, data: Canaries, sigma: float) -> Case:
    """The audit of mechanism ``name`` (see :data:`MECHANISMS`, :data:`CONTROLS`) at noise multiplier σ."""
    c, canary = data.clip, data.canary
    base, zeros, others = data.updates[0], torch.zeros_like(canary), data.updates[1:]
    if name == "local":
        return Case("local clip + Gaussian (ClipUpdate, GaussianNoise)", "Δ = C, add/remove",
                    transforms_release(lambda: [ClipUpdate(c), GaussianNoise(sigma)]), zeros, canary,
                    note="client-level LDP, one release")
    if name == "dp_fedavg":
        return Case("DP-FedAvg client, ADPDFL B5.2 (n_i = 1)", "Δ = 2C/n_i, replace-one",
                    transforms_release(lambda: [ClipUpdate(c), GaussianNoise(2 * sigma, per_sample=True)]),
                    -canary, canary, note="eq. 5.3 through the engine's transforms")
    if name == "adpdfl":
        def release(x: Tensor, run: int) -> Tensor:
            return privatize(x, bound=c, sigma=sigma, num_samples=1,
                             generator=make_generator(data.seed, "audit-adpdfl", run))
        return Case("ADPDFL privatize, eqs. 5.2-5.4 (n_i = 1)", "Δ = 2C/n_i, replace-one", release, -canary,
                    canary, note="the decentralized loop's function")
    if name == "plain_dpfl":
        return Case("plain DPFL client (MedianClip, GaussianNoise)", "Δ = running median C_i",
                    median_clip_release(list(others), sigma), base, canary,
                    note=f"running median primed with {len(others)} real updates")
    if name == "central":
        return Case("CDP-FL / LCDP-FL server (CentralGaussian, median S)", "Δ = S on the sum, add/remove",
                    central_release(others, sigma), base, canary, note=f"{len(data.updates)} clients, noisy average")
    if name == "central_constant":
        return Case("central DP server (CentralGaussian, constant C)", "Δ = C on the sum, add/remove",
                    central_release(others, sigma, c), base, canary, note=f"{len(data.updates)} clients, noisy average")
    if name == "ldp_fl_literal":
        return Case("LDP-FL as written (NormBound: S_i = ‖D_i‖/n_i, eq. 3.2)", "Δ = own norm (data-dependent)",
                    transforms_release(lambda: [NormBound(), GaussianNoise(sigma, per_sample=True)]), base,
                    base + canary, score_norm=True, note="finding: the noise scale reveals the update's norm")
    if name == "ldp_fl_clipped":
        return Case("LDP-FL corrected (ours: clip to C, then noise)", "Δ = C, add/remove",
                    transforms_release(lambda: [ClipUpdate(c), GaussianNoise(sigma)]), base, base + canary,
                    score_norm=True, note="the same norm test against the corrected client")
    if name == "control_noise_off":
        return Case("negative control: noise switched off", "Δ = C, add/remove",
                    transforms_release(lambda: [ClipUpdate(c), GaussianNoise(0.0)]), zeros, canary,
                    note="must exceed the claim")
    if name == "control_no_clipping":
        return Case("negative control: clipping skipped", "Δ = C, add/remove",
                    transforms_release(lambda: [GaussianNoise(sigma)], bound_if_unclipped=c), zeros, canary,
                    note="must exceed the claim")
    raise ValueError(f"name must be one of {MECHANISMS + CONTROLS}, got {name!r}")


def audit_case(case: Case, data: Canaries, sigma: float, *, trials: int, delta: float, alpha: float, key: str
               ) -> dict:
    """Audit one case: a results row with the claimed ε (exact, one release, ratio 1/σ) and the lower bound ε̂."""
    flips = make_generator(data.seed, "audit", key)
    if case.score_norm:  # the attacker's test statistic is the norm of the release, not its projection
        result = audit(lambda x, r: case.release(x, r).norm().reshape(1), case.without, case.with_canary,
                       trials=trials, delta=delta, alpha=alpha, generator=flips, direction=torch.ones(1))
    else:
        result = audit(case.release, case.without, case.with_canary, trials=trials, delta=delta, alpha=alpha,
                       generator=flips, direction=data.direction)
    eps = gaussian_epsilon(1 / sigma, delta) if sigma > 0 else float("inf")
    return {"configuration": case.label, "sigma": sigma, "sensitivity_claim": case.claim, "claimed_eps": eps,
            "audited_eps_lb": result.epsilon_lb, "audit_exceeds_claim": result.epsilon_lb > eps, "tpr": result.tpr,
            "fpr": result.fpr, "runs": result.trials, "note": case.note}


def chapter_audit(names: Sequence[tuple[str, float]], *, seed: int, trials: int = 2000, delta: float = 1e-5,
                  alpha: float = 0.05) -> list[dict]:
    """The audit lines a DP chapter writes into its own results file: each (mechanism, σ) of ``names`` at the
    chapter's σ, on this module's real updates and canary (about a second per line)."""
    data = make_canaries(seed)
    return [audit_case(make_case(name, data, sigma), data, sigma, trials=trials, delta=delta, alpha=alpha,
                       key=f"chapter-{name}-{sigma:g}") for name, sigma in names]


def chapter_audit_as_run(cases: Sequence[tuple[str, float, float]], *, seed: int, trials: int = 2000,
                         delta: float = 1e-5) -> list[dict]:
    """Audit lines of a chapter whose clients add noise σC/n_i (thesis ch. 3): each (mechanism, σ, n_i) of ``cases``
    is audited as run — noise std σC/n_i, i.e. the case at multiplier σ/n_i, whose claimed ε is then the one-release
    ε against a client-level sensitivity C — beside the one-release ε of the thesis's convention (multiplier σ on a
    sensitivity C/n_i), and whether the audit exceeds that. n_i = 1 for a server-side mechanism."""
    rows = chapter_audit([(name, sigma / n) for name, sigma, n in cases], seed=seed, trials=trials, delta=delta)
    for row, (_, sigma, n) in zip(rows, cases):
        thesis = gaussian_epsilon(1 / sigma, delta) if sigma > 0 else float("inf")
        row.update(sigma_thesis=sigma, n_i=n, thesis_claimed_eps=thesis,
                   audit_exceeds_thesis_claim=row["audited_eps_lb"] > thesis)
    return rows


def audit_versus_thesis(row: dict | None) -> str:
    """A chapter's sentence on one audit line of :func:`chapter_audit_as_run`: the audited lower bound ε̂ of one upload
    and whether it exceeds the thesis's one-release claim — the comparison is computed, never assumed by the prose."""
    if row is None:
        return "not run yet"
    lb, claim = row["audited_eps_lb"], row["thesis_claimed_eps"]
    return (f"ε̂ = {lb:.2f} for one upload, {'above' if lb > claim else 'not above'} the {claim:.2f} that the "
            "thesis's convention claims for it")


def add_audit_as_run(res: Results, units: Units, cases: Sequence[tuple[str, float, float]], *, seed: int,
                     trials: int, what: str) -> None:
    """The ``audit`` unit of a thesis-ch.-3 chapter: :func:`chapter_audit_as_run` of ``cases``, written into the
    chapter's results as the table ``audit`` (nothing while the unit has not run)."""
    audit = units.run("audit", {"cases": cases, "trials": trials},
                      lambda: {"rows": chapter_audit_as_run(cases, seed=seed, trials=trials)})
    if audit is not None:
        res.add_table("audit", f"Privacy audit of {what} as run (noise σC/n_i on the client, so the audited "
                      "multiplier is σ/n_i): the exact one-release ε against a client-level sensitivity, the thesis's "
                      f"one-release claim (multiplier σ) and the audited lower bound ε̂ ({trials} runs, 95 %)",
                      audit["rows"])


def add_chapter_audit(res: Results, names: Sequence[tuple[str, float]], *, seed: int) -> None:
    """Write :func:`chapter_audit`'s lines into a DP chapter's results as the table ``audit``."""
    add_audit_table(res, chapter_audit(names, seed=seed))


def add_audit_table(res: Results, rows: list[dict]) -> None:
    """A DP chapter's ``audit`` table from :func:`chapter_audit`'s rows."""
    res.add_table("audit", "Privacy audit of this chapter's mechanisms at its σ: exact one-release ε and the "
                  "audited lower bound ε̂ (2,000 runs, 95 %; see the chapter Auditing our privacy claims)", rows)


LEDGER = [
    Claim("within_claim", "Each DP mechanism is (ε, δ)-DP for the ε its accountant claims: one release at noise "
          "multiplier σ with the sensitivity the accountant assumes (local clip + Gaussian; DP-FedAvg and ADPDFL's "
          "privatize, thesis §5.3; plain DPFL's median clipping, §3.3; the CDP-FL / LCDP-FL and constant-bound "
          "central servers, §3.2 and Geyer et al. 2017; LDP-FL with clipping, ours)",
          "the accountants of thesis chs. 3 and 5; Geyer et al. 2017",
          "(ε̂ − ε) / ε: the audited lower bound relative to the claimed ε", "<", unit="epsilon",
          settings=VALID, central=True,
          note="an audit can refute a claim, never prove it: 'reproduced' means the audit finds no violation"),
    Claim("ldp_fl_as_written", "LDP-FL as written (noise σ‖D_i‖/n_i scaled by the update's own norm, eqs. 3.1-3.2) "
          "is (ε, δ)-LDP at its claimed ε", "thesis §3.2.1", "(ε̂ − ε) / ε of the norm test", "<", unit="epsilon"),
    Claim("controls_exceed", "A mechanism with a deliberate bug (noise switched off, clipping skipped) violates its "
          "unchanged claim, and the audit detects it", "Jagielski, Ullman & Oprea 2020; Nasr et al. 2021 (method)",
          "(ε̂ − ε) / ε of the negative control", ">", unit="epsilon", settings=CONTROLS),
    Claim("within_claim_sweep", "The local clip + Gaussian client stays within its claimed ε at every σ",
          "thesis Lemma 2 (Gaussian mechanism)", "(ε̂ − ε) / ε over the σ sweep", "<", unit="epsilon",
          settings=tuple(f"σ = {z:g}" for z in QUICK.sweep)),
]

#: Deliberate defects for the falsification test: each must flip the central claim's verdict.
DEFECTS = {"noise_off": "every audited mechanism releases without noise; its claimed ε stays that of σ"}

#: The smallest configuration whose central claim the defect test flips.
TINY = AuditConfig(trials=2000, sweep=(1.0,))


def run(config: AuditConfig = QUICK, *, mode: str = "quick", seed: int = 0, progress: bool = False,
        units: Units | None = None, defect: str | None = None) -> Results:
    """Run the audits (one unit per mechanism and σ) and return the chapter's :class:`~fedlib.results.Results`."""
    if defect is not None and defect not in DEFECTS:
        raise ValueError(f"defect must be one of {sorted(DEFECTS)} or None, got {defect!r}")
    began = time.perf_counter()
    cfg = config
    units = units or Units("audit", mode, seed)
    res = Results("audit", mode, seed, dataclasses.asdict(cfg))
    data = make_canaries(seed, clients=cfg.clients, canary_scale=cfg.canary_scale, clip=cfg.clip)
    s = cfg.sigma

    def row(name: str, sigma: float) -> dict | None:
        spec = {"name": name, "sigma": sigma, "trials": cfg.trials, "delta": cfg.delta, "alpha": cfg.alpha,
                "clients": cfg.clients, "canary_scale": cfg.canary_scale, "clip": cfg.clip, "defect": defect}
        released = 0.0 if defect == "noise_off" else sigma
        out = units.run(f"{name}-sigma{sigma:g}", spec, lambda: audit_case(
            make_case(name, data, released), data, sigma, trials=cfg.trials, delta=cfg.delta, alpha=cfg.alpha,
            key=f"{name}-{sigma:g}"))
        return out or {"configuration": name, "sigma": sigma, "claimed_eps": None, "audited_eps_lb": None}

    rows = [row(n, s) for n in MECHANISMS]
    res.add_table("audit", f"Claimed ε (exact, one release, δ = {cfg.delta:g}) and audited lower bound ε̂ "
                  f"(confidence {1 - cfg.alpha:.0%}, {cfg.trials} runs), σ = {s:g}, C = {cfg.clip:g}", rows)
    ctrl_rows = [row(n, s) for n in CONTROLS]  # a control keeps the claim (σ) of the mechanism it breaks
    res.add_table("controls", "Negative controls: the local Gaussian client with a deliberate bug, audited "
                  "against its unchanged claim", ctrl_rows)
    sweep = [row("local", z) for z in cfg.sweep]
    for r in sweep:
        r["configuration"] = f"σ = {r['sigma']:g}"
    res.add_table("sweep", "Local clip + Gaussian over σ: claimed ε and ε̂", sweep)
    res.add_table("capacity", "The largest ε̂ an audit can certify: every run classified correctly, Clopper-Pearson "
                  f"at confidence {1 - cfg.alpha:.0%} on half of the runs", [
                      {"runs": n, "max_certifiable_eps": epsilon_from_rates(
                          *(2 * [clopper_pearson_upper(0, n // 4, cfg.alpha / 2)]), cfg.delta)}
                      for n in (QUICK.trials, FULL.trials)])
    done = [r for r in sweep if r["claimed_eps"] is not None]
    res.add_series("sweep/claimed", [r["claimed_eps"] for r in done], [r["claimed_eps"] for r in done],
                   label="ε̂ = ε")
    res.add_series("sweep/audited", [r["claimed_eps"] for r in done], [r["audited_eps_lb"] for r in done],
                   label="audited ε̂")
    claim = {c.id: c for c in LEDGER}
    by_name = dict(zip(MECHANISMS, rows))
    for name in VALID:
        _measure(res, claim["within_claim"], by_name[name], setting=name)
    _measure(res, claim["ldp_fl_as_written"], by_name["ldp_fl_literal"])
    for name, r in zip(CONTROLS, ctrl_rows):
        _measure(res, claim["controls_exceed"], r, setting=name)
    for z, r in zip(cfg.sweep, sweep):
        setting = f"σ = {z:g}"
        if setting in claim["within_claim_sweep"].settings:
            _measure(res, claim["within_claim_sweep"], r, setting=setting)
    res.evaluate(LEDGER)
    res.elapsed_s = time.perf_counter() - began
    return res


def _measure(res: Results, claim: Claim, row: dict, *, setting: str = "") -> None:
    """(ε̂ − ε) / ε of one audit row as the value of ``claim``."""
    eps, low = row["claimed_eps"], row["audited_eps_lb"]
    value = None if eps is None else (low - eps) / eps
    res.measure(claim, value, "not run yet" if eps is None else f"ε̂ {low:.2f} vs ε {eps:.2f} ({row['configuration']})",
                setting=setting)
