"""The ledger of a chapter: every result statement of its source, declared before our numbers are seen, and the
verdicts our runs give them.

A :class:`Claim` holds the paper's words, where the paper shows it, what we measure (one number per setting: an
*effect*, signed so that the paper's direction is positive for ``">"``), the direction and the margin. A chapter run
records one measured value per claim and setting (:meth:`fedlib.results.Results.measure`); :func:`outcome` turns a
value into one of three verdicts:

* ``">"`` (the paper says the effect is positive): reproduced if value ≥ margin, not reproduced if value ≤ −margin,
  inconclusive in between;
* ``"<"``: the mirror image;
* ``"≈"`` (the paper says two things are close): reproduced if ``|value|`` ≤ margin, not reproduced if
  ``|value|`` ≥ 2·margin, inconclusive in between.

One run is not a verdict. :func:`register` combines the runs of a seed sweep (quick mode: seeds 0-4, 1 and 2 torch
threads): a verdict is decisive only when *every* run gives it *and* a new seed would give it too: the one-sided
99 % prediction bound for a new seed's value, mean − t(0.99; n − 1)·sd·√(1 + 1/n) over the n seeds (Student's t,
:data:`PREDICTION_LEVEL`), still clears the margin (a seed's runs with other thread counts count once, as their
mean); otherwise the claim is inconclusive at this scale, reported with its spread. (Until 2026-11-27 the bound was
mean − 2·sd: with 5 seeds a new seed then crosses a borderline margin about 7 % of the time, and over the 183
decisive verdicts of that day about 1.5 would flip on each unseen seed; privacy evaluation's seed 7 flipped one.)
The registered verdicts live in ``fedlib/experiments/verdicts/<chapter>.json`` (written by
``python -m fedlib sweep``); the report counts them, and CI checks that seed 0 and one other seed agree with every
decisive one.

Full mode has no sweep: its verdicts come from one run. Where that run's value is itself a mean over seeds (the
paper's own repeats, e.g. FLZ's five seeds), the run records the per-seed values with it, and the verdict is
decisive only when the one-sided 99 % confidence bound of that mean, mean − t(0.99; n − 1)·sd/√n, clears the
margin (:func:`clears`): a mean that lands just inside the margin is not a reproduction.

A full-mode value read off one run's test accuracies carries the test set's sampling noise as well: ten thousand
test images pin an accuracy near 0.25 down to ±0.43 pp (one standard error), and a run that clears a one-point
margin by 0.01 pp (one image) has not shown the effect. Where the chapter says which test set a value was measured
on and which accuracies it was computed from (:meth:`fedlib.results.Results.measure` with ``test_images`` and
``accuracies``), the verdict is decisive only when the value clears the margin by :func:`sampling_halfwidth` too
(:func:`clears`). For a difference of two separately trained models' accuracies p₁ − p₂ on the same images, where
the units kept both models' per-image results (``disagreement``: the share of images exactly one of them gets
right), that halfwidth is the paired (McNemar) one; where they did not, it is the widest any dependence between the
two models' errors allows, √((min(p₁ + p₂, 2 − p₁ − p₂) − (p₁ − p₂)²)/N): most model pairs err on the same hard
images, but some (non-IID models that specialise in different classes) disagree on more images than independent
errors would, so no narrower bound holds without the per-image results. (Until 2026-12-02 the bound was first the
smallest a paired test allows whatever the per-image results, then the independent-errors one,
√((p₁(1 − p₁) + p₂(1 − p₂))/N); both could keep verdicts the models' actual errors do not.) A value that
combines several models' accuracies with fixed weights (a mean over settings of a difference) carries
:func:`combination_halfwidth`: exact from the models' per-image results, else likewise the widest any dependence
allows. A value that is a mean over a sample of items, image by image (privacy evaluation's PSNR of two attacks on
the same 100 images, subtracted), carries the one-sided 99 % confidence bound of those per-item values
(:func:`confidence_halfwidth`), and a membership attack's ROC AUC (or a gap of two) :func:`auc_halfwidth`. A value
that is not linear in the accuracies it reads (the share of rounds a run saves to first reach another run's best
accuracy; a mean over cells of ``|ours − the paper's|``, :func:`distance_interval`) carries the values it takes
with its accuracies moved by their sampling bound either way (``interval``): the verdict must hold at both ends. Quick
mode leaves this to the registered seed sweep (its verdicts do not change).

A ``kind="fact"`` entry is bookkeeping that no defect of the implementation could flip (a count, an identity that
holds by construction): it is shown with its value but not counted as a reproduced claim.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from scipy.special import ndtri, stdtrit

VERDICTS = ("reproduced", "not reproduced", "inconclusive")
NOT_RUN = "not run"

#: Default margins: the smallest effect we call a difference, by the quantity compared. Chosen once for all chapters
#: (not per claim after seeing numbers); a claim may state another margin only when the paper's own words give one.
MARGINS: dict[str, float] = {
    "accuracy": 0.01,     # one percentage point of test accuracy
    "psnr": 1.0,          # dB
    "ssim": 0.05,
    "auc": 0.05,          # membership-inference AUC / TPR
    "relative": 0.10,     # a relative change (rounds, time, storage, noise): 10 %
    "cosine": 0.05,
    "probability": 0.05,  # a rate or a fraction
    "epsilon": 0.05,      # relative, on ε
    "loss": 0.05,         # relative, on a loss
    "count": 0.5,         # an integer the paper states exactly (rounds a budget allows): it must match
}

#: The one-sided level of the prediction bound a new seed's value must clear for a verdict to be decisive.
PREDICTION_LEVEL = 0.99

#: The outcomes of a claim in a mode it is not evaluated in (e.g. an absolute number of the paper's configuration,
#: which quick mode's scaled-down runs cannot test).
MODE_ONLY = ("full mode only", "quick mode only")


@dataclass(frozen=True)
class Claim:
    """One result statement of a source, as a test declared before looking at our numbers.

    Attributes:
        id: short key, unique in the chapter.
        paper: the statement, in the paper's words (or a faithful paraphrase).
        evidence: where the paper shows it ("Table 3.1", "Fig. 3.2", "§5.4.2").
        metric: what we measure, as a formula of our numbers ("best acc(proposed) − best acc(plain), σ = 8").
        direction: ``">"``, ``"<"`` or ``"≈"`` (see the module docstring).
        unit: the quantity compared (a key of :data:`MARGINS`, and how values are printed).
        margin: the smallest effect counted; default :data:`MARGINS` of ``unit``.
        settings: the settings (datasets, configurations) the claim is evaluated on; each gets its own verdict.
        kind: ``"claim"`` or ``"fact"`` (bookkeeping, shown but not counted).
        central: the chapter's central claim(s), which the deliberate-defect tests must be able to flip.
        modes: the modes it is evaluated in: a statement about the paper's absolute numbers is full mode only;
            orderings and trends that should hold at small scale are evaluated in both.
        quick_only: settings evaluated in quick mode only (a parameter of ours chosen for quick mode's scale,
            which full mode, the paper's configuration, does not run).
        note: our reading, where the source is ambiguous.
    """

    id: str
    paper: str
    evidence: str
    metric: str
    direction: Literal[">", "<", "≈"]
    unit: str = "accuracy"
    margin: float | None = None
    settings: tuple[str, ...] = ("",)
    kind: Literal["claim", "fact"] = "claim"
    central: bool = False
    modes: tuple[str, ...] = ("quick", "full")
    quick_only: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if self.direction not in (">", "<", "≈"):
            raise ValueError(f"claim {self.id!r}: direction must be '>', '<' or '≈', got {self.direction!r}")
        if self.unit not in MARGINS:
            raise ValueError(f"claim {self.id!r}: unit must be one of {sorted(MARGINS)}, got {self.unit!r}")
        if self.margin is not None and not self.margin > 0:
            raise ValueError(f"claim {self.id!r}: margin must be > 0, got {self.margin!r}")
        if self.kind not in ("claim", "fact"):
            raise ValueError(f"claim {self.id!r}: kind must be 'claim' or 'fact', got {self.kind!r}")
        if not self.settings or len(set(self.settings)) != len(self.settings):
            raise ValueError(f"claim {self.id!r}: settings must be distinct and non-empty, got {self.settings!r}")
        if not self.modes or not set(self.modes) <= {"quick", "full"}:
            raise ValueError(f"claim {self.id!r}: modes must be a non-empty subset of ('quick', 'full'), "
                             f"got {self.modes!r}")
        if self.quick_only and not (set(self.quick_only) <= set(self.settings) and "quick" in self.modes):
            raise ValueError(f"claim {self.id!r}: quick_only must name settings of {self.settings!r} of a claim "
                             f"evaluated in quick mode, got {self.quick_only!r} (modes {self.modes!r})")

    def mode_only(self, mode: str, setting: str = "") -> str | None:
        """None where the claim is evaluated in ``mode`` on ``setting``, else the outcome that says which mode it
        belongs to (one of :data:`MODE_ONLY`)."""
        if mode in self.modes and not (mode == "full" and setting in self.quick_only):
            return None
        return "quick mode only" if setting in self.quick_only else f"{self.modes[0]} mode only"

    @property
    def threshold(self) -> float:
        return self.margin if self.margin is not None else MARGINS[self.unit]

    def key(self, setting: str = "") -> str:
        """``id`` or ``id/setting``: the key of one measured value."""
        if setting not in self.settings:
            raise KeyError(f"claim {self.id!r} has settings {self.settings}, not {setting!r}")
        return f"{self.id}/{setting}" if setting else self.id


def outcome(claim: Claim, value: float | None) -> str:
    """The verdict of one run's measured ``value`` (None or NaN: :data:`NOT_RUN`)."""
    if value is None or not math.isfinite(value):
        return NOT_RUN
    m = claim.threshold
    if claim.direction == "≈":
        return "reproduced" if abs(value) <= m else "not reproduced" if abs(value) >= 2 * m else "inconclusive"
    effect = value if claim.direction == ">" else -value
    return "reproduced" if effect >= m else "not reproduced" if effect <= -m else "inconclusive"


def check_ledger(ledger: Sequence[Claim]) -> None:
    """Raise if two claims share an id."""
    ids = [c.id for c in ledger]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"claim ids must be unique; repeated: {dupes}")


#: How a claim's note says that the paper's own numbers do not pass its test (required where they do not); a
#: phrase, not "paper's own" alone, which many notes use to quote a number without judging it.
OWN_NUMBERS = "own numbers"


def paper_verdicts(ledger: Sequence[Claim], values: dict[str, float]) -> dict[str, tuple[float, str]]:
    """The verdict each claim's own test gives the *paper's* numbers: ``values`` maps a claim key to the claim's
    metric computed on what the paper reports (a chapter's ``paper_values()``, from its transcribed tables). A
    reading that the paper's own numbers do not pass is stricter than the paper (or the paper contradicts its own
    words): the report shows it beside our verdict, and the claim's note must say so (:func:`unacknowledged`)."""
    keys = {c.key(s): c for c in ledger for s in c.settings}
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise KeyError(f"paper values for claims or settings that are not in the ledger: {unknown}")
    bad = sorted(k for k, v in values.items() if not isinstance(v, (int, float)) or not math.isfinite(v))
    if bad:
        raise ValueError(f"paper values must be finite numbers; got {[(k, values[k]) for k in bad]}")
    # the papers print a few decimals: a difference of them that lands on a margin (0.02 − 0.01 = 0.009999...98)
    # must be judged as the decimal it is, not as its float rounding
    exact = {k: round(float(v), 10) for k, v in values.items()}
    return {k: (v, outcome(keys[k], v)) for k, v in exact.items()}


def unacknowledged(ledger: Sequence[Claim], values: dict[str, float]) -> list[str]:
    """The keys whose paper value does not read *reproduced* on the claim's own test while the claim's note does not
    say so (does not contain :data:`OWN_NUMBERS`): a reader would take a "not reproduced" there for our failure."""
    claims = {c.key(s): c for c in ledger for s in c.settings}
    return sorted(k for k, (_, verdict) in paper_verdicts(ledger, values).items()
                  if verdict != "reproduced" and OWN_NUMBERS not in claims[k].note)


def evaluate(ledger: Sequence[Claim], measured: dict[str, dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """One entry per claim and setting: the claim's fields, the measured value and detail, and this run's outcome.

    ``measured`` maps :meth:`Claim.key` to ``{"value": float | None, "detail": str}``, in full mode optionally with
    ``"samples"`` (the per-seed values whose mean is the value; see :func:`clears`), ``"untested"`` (why the run
    cannot test the claim: inconclusive whatever the value), ``"sampling"`` (what an
    accuracy value was read off: its test-set sampling bound) or ``"interval"`` (the value at the two ends of that
    bound, where the value is not linear in accuracies: the verdict must hold at both); a key that was not measured
    (a unit not run yet) gives :data:`NOT_RUN`; a claim not evaluated in ``mode`` gives one of :data:`MODE_ONLY`.
    """
    check_ledger(ledger)
    keys = {c.key(s) for c in ledger for s in c.settings}
    unknown = sorted(set(measured) - keys)
    if unknown:
        raise KeyError(f"measured values for claims that are not in the ledger: {unknown}")
    out = []
    for claim in ledger:
        for setting in claim.settings:
            m = measured.get(claim.key(setting), {})
            value, detail, samples = m.get("value"), m.get("detail", ""), m.get("samples")
            verdict = claim.mode_only(mode, setting) or outcome(claim, value)
            if m.get("at_most") and verdict in (*VERDICTS, NOT_RUN):
                value, verdict, detail = decided_by_bound(claim, value, detail)
            sampling = m.get("sampling")
            if sampling is not None and value is not None and mode == "full" and verdict in VERDICTS[:2]:
                halfwidth, kind = _sampling(sampling)
                shown = (f"{halfwidth * 100:.2f} pp" if claim.unit == "accuracy" else
                         format_value(halfwidth, claim.unit).lstrip("+"))
                detail += (f"{'; ' if detail else ''}test-set sampling ({sampling['test_images']:,} images, {kind}"
                           f"one-sided {PREDICTION_LEVEL * 100:.0f} %) ±{shown}")
                if not clears(claim, verdict, value, halfwidth):
                    verdict = "inconclusive"
            interval = m.get("interval")
            if interval is not None and value is not None and mode == "full" and verdict in VERDICTS[:2]:
                low, high = (format_value(x, claim.unit) for x in interval)
                detail += f"{'; ' if detail else ''}at the ends of its test-set sampling bound {low} … {high}"
                if outcome(claim, interval[0]) != verdict or outcome(claim, interval[1]) != verdict:
                    verdict = "inconclusive"
            if samples is not None and value is not None and mode == "full":  # quick mode: the sweep's spread
                halfwidth = confidence_halfwidth(samples)
                detail += (f"{'; ' if detail else ''}mean of {len(samples)} seeds, one-sided "
                           f"{PREDICTION_LEVEL * 100:.0f} % bound ±{format_value(halfwidth, claim.unit).lstrip('+')}")
                if verdict in VERDICTS[:2] and not clears(claim, verdict, value, halfwidth):
                    verdict = "inconclusive"
            if m.get("untested") and value is not None and mode == "full" and verdict in VERDICTS:
                detail += f"{'; ' if detail else ''}untested: {m['untested']}"
                verdict = "inconclusive"
            entry = {k: v for k, v in asdict(claim).items() if k != "settings"}
            entry.update(setting=setting, key=claim.key(setting), margin=claim.threshold, value=value,
                         detail=detail, outcome=verdict)
            if m.get("at_most") and value is not None:
                entry["at_most"] = True
            out.append(entry)
    return out


def _sampling(sampling: dict[str, Any]) -> tuple[float, str]:
    """The sampling halfwidth of a measured entry's ``"sampling"`` and how it was computed, for the detail."""
    if "per_item" in sampling:  # a mean over a sample of items, paired item by item
        return confidence_halfwidth(sampling["per_item"]), "paired per image, "
    n, accuracies = sampling["test_images"], sampling["accuracies"]
    if sampling.get("auc"):
        return auc_halfwidth(n, accuracies), ("AUCs over as many members and at least as many non-members, "
                                              "any dependence of the two, " if len(accuracies) == 2 else
                                              "an AUC over as many members and at least as many non-members, ")
    if "weights" in sampling:
        paired = "mean_square" in sampling
        how = ("paired by their per-image results" if paired else
               "no per-image results: the widest any dependence of their errors allows")
        return (combination_halfwidth(n, accuracies, sampling["weights"], sampling.get("mean_square")),
                f"{len(accuracies)} models, {how}, ")
    if sampling.get("independent"):
        (p, q) = accuracies  # two test sets: each image's pair of outcomes is independent
        return sampling_halfwidth(n, accuracies, p * (1 - q) + q * (1 - p)), "two test sets, errors independent, "
    kind = ("" if len(accuracies) == 1 else
            f"paired, models disagree on {sampling['disagreement'] * 100:.2f} % of them, " if "disagreement" in
            sampling else "no per-image results: the widest any dependence of the two models' errors allows, ")
    return sampling_halfwidth(n, accuracies, sampling.get("disagreement")), kind


def decided_by_bound(claim: Claim, bound: float | None, detail: str) -> tuple[float | None, str, str]:
    """(value, verdict, detail) of a claim whose runs are not all done, from an upper bound of its value over the
    runs at hand (e.g. acc(A) − the best of the others done so far: the others still missing can only lower it).
    The bound decides the verdict when every value at or below it gives the same one: not reproduced for ``">"``,
    reproduced for ``"<"``; otherwise the claim stays not run and the detail says how far the bound got."""
    if claim.direction == "≈":
        raise ValueError(f"claim {claim.id!r}: an upper bound cannot decide a two-sided ('≈') claim")
    verdict = outcome(claim, bound)
    if verdict == ("not reproduced" if claim.direction == ">" else "reproduced"):
        return bound, verdict, (f"{detail}{'; ' if detail else ''}at most {format_value(bound, claim.unit)} "
                                "whatever the runs not run yet give (they can only lower it)")
    if bound is None or not math.isfinite(bound):
        return None, NOT_RUN, detail
    return None, NOT_RUN, (f"{detail}{'; ' if detail else ''}at most {bound:+.4g} over the runs done so far, not "
                           f"yet ≤ {-claim.threshold:+.4g}, where the runs not run yet could no longer change the "
                           "verdict")


def clears(claim: Claim, verdict: str, mean: float, halfwidth: float) -> bool:
    """Whether ``verdict`` (reproduced or not reproduced) holds for every value within ``halfwidth`` of ``mean``
    on the side that could overturn it: the test of both the registered sweeps and full mode's seed means."""
    m = claim.threshold
    if claim.direction == "≈":
        room = m - (abs(mean) + halfwidth) if verdict == "reproduced" else (abs(mean) - halfwidth) - 2 * m
    else:
        effect = mean if claim.direction == ">" else -mean
        room = (effect - halfwidth) - m if verdict == "reproduced" else -m - (effect + halfwidth)
    return room >= 0


@dataclass
class Registered:
    """The verdict of one claim and setting over a seed sweep."""

    verdict: str
    runs: int
    values: list[float | None] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def spread(self) -> tuple[float, float, float] | None:
        finite = [v for v in self.values if v is not None and math.isfinite(v)]
        if not finite:
            return None
        return min(finite), statistics.median(finite), max(finite)


def register(claim: Claim, values: Iterable[float | None], seeds: Sequence[int] | None = None) -> Registered:
    """Combine the runs of a sweep into one verdict (see the module docstring).

    ``seeds``: each run's seed. Runs of one seed with other torch thread counts must agree with the rest, but count
    once in the spread (their mean): repeating a seed is not a new sample, and counting it twice would shrink the sd.
    None: every run is its own seed.
    """
    values = list(values)
    if seeds is not None and len(seeds) != len(values):
        raise ValueError(f"seeds must give one seed per run ({len(values)}), got {len(seeds)}")
    outcomes = [outcome(claim, v) for v in values]
    counts = {o: outcomes.count(o) for o in (*VERDICTS, NOT_RUN) if outcomes.count(o)}
    if not values or NOT_RUN in counts:
        return Registered(NOT_RUN, len(values), values, counts)
    first = outcomes[0]
    if first == "inconclusive" or any(o != first for o in outcomes):
        return Registered("inconclusive", len(values), values, counts)
    by_seed: dict[int, list[float]] = {}
    for k, v in enumerate(values):
        by_seed.setdefault(k if seeds is None else seeds[k], []).append(v)
    samples = [statistics.fmean(vs) for vs in by_seed.values()]
    # a new seed's value must clear the margin too (its prediction bound)
    if len(samples) > 1 and not clears(claim, first, statistics.fmean(samples), prediction_halfwidth(samples)):
        return Registered("inconclusive", len(values), values, counts)
    return Registered(first, len(values), values, counts)


def sampling_halfwidth(test_images: int, accuracies: Sequence[float], disagreement: float | None = None,
                       level: float = PREDICTION_LEVEL) -> float:
    """z(level)·SE: how far test-set sampling alone may move a value read off ``accuracies`` measured on
    ``test_images`` images, one-sided.

    One accuracy p (the value is p minus a fixed number, e.g. the paper's): SE √(p(1 − p)/N). Two accuracies
    p₁, p₂ of separately trained models on the same images (the value is p₁ − p₂): with ``disagreement`` d, the share
    of images that exactly one of the two models classifies correctly, the paired (McNemar) SE √((d − (p₁ − p₂)²)/N);
    without it the widest SE any dependence between the two models' errors allows, √((min(p₁ + p₂, 2 − p₁ − p₂) −
    (p₁ − p₂)²)/N) (the most the two can disagree, by the Fréchet bounds). Each accuracy must be one model's (every
    image right or wrong; a best-of-rounds or best-of-models value qualifies, as one model's): a mean over several
    models' accuracies is a combination of them (:func:`combination_halfwidth`).
    """
    if len(accuracies) not in (1, 2):
        raise ValueError(f"accuracies must hold one accuracy (against a fixed number) or two (a difference), got "
                         f"{len(accuracies)}: {list(accuracies)!r}")
    if disagreement is not None:
        if len(accuracies) != 2:
            raise ValueError(f"a disagreement needs two accuracies, got {list(accuracies)!r}")
        gap, tol = abs(accuracies[0] - accuracies[1]), 1e-9
        most = min(sum(accuracies), 2 - sum(accuracies))
        if not gap - tol <= disagreement <= most + tol:
            raise ValueError(f"disagreement must lie between |p1 − p2| = {gap:.6g} and min(p1 + p2, 2 − p1 − p2) = "
                             f"{most:.6g} for accuracies {list(accuracies)}, got {disagreement!r}")
    # (c₁ − c₂)² is 1 exactly where the two models disagree: the disagreement is the pair's mean square
    return combination_halfwidth(test_images, accuracies, (1.0, -1.0)[:len(accuracies)], disagreement, level)


def combination_halfwidth(test_images: int, accuracies: Sequence[float], weights: Sequence[float],
                          mean_square: float | None = None, level: float = PREDICTION_LEVEL) -> float:
    """z(level)·SE of v = Σₖ wₖ·pₖ, a fixed combination of the accuracies pₖ of K models on the same N images
    (e.g. a mean over m_tcs of acc(m_e = 50) − acc(m_e = 30): weights ±1/4), one-sided.

    Per image j the combination is Xⱼ = Σₖ wₖ·cₖⱼ (cₖⱼ = 1 where model k classifies image j correctly), and v is
    the mean of the Xⱼ. With ``mean_square``, the mean of Xⱼ² over the images (from the models' per-image results;
    for a difference of two models, their disagreement), the SE is exact: √((mean_square − v²)/N). Without it, the
    widest SE any dependence between the models' errors allows: mean_square taken from :func:`widest_mean_square`.
    """
    if isinstance(test_images, bool) or not isinstance(test_images, int) or test_images < 1:
        raise ValueError(f"test_images must be a positive int, got {test_images!r}")
    if not accuracies or len(weights) != len(accuracies):
        raise ValueError(f"weights must give one weight per accuracy ({len(accuracies)} accuracies), got "
                         f"{list(weights)!r}")
    for p in accuracies:
        if not 0 <= p <= 1:
            raise ValueError(f"each accuracy must lie in [0, 1], got {p!r}")
    value = sum(w * p for w, p in zip(weights, accuracies))
    if mean_square is None:
        variance = max(widest_mean_square(accuracies, weights) - value * value, 0.0)
    else:
        # X lies between the sums of the negative and of the positive weights: its mean square cannot exceed the
        # larger square, nor fall below the square of its mean
        most = max(sum(w for w in weights if w > 0), -sum(w for w in weights if w < 0)) ** 2
        if not value * value - 1e-9 <= mean_square <= most + 1e-9:
            raise ValueError(f"mean_square must lie between v² = {value * value:.6g} (v = Σ w·p) and "
                             f"{most:.6g} for weights {list(weights)} and accuracies {list(accuracies)}, got "
                             f"{mean_square!r}")
        variance = max(mean_square - value * value, 0.0)
    return float(ndtri(level)) * math.sqrt(variance / test_images)


def distance_interval(ours: Sequence[float], paper: Sequence[float], halfwidths: Sequence[float]
                      ) -> tuple[float, float]:
    """(low, high) of the mean over cells of ``|ours − paper|`` with each of our values moved by its one-sided bound
    (``halfwidths``: e.g. :func:`sampling_halfwidth` of one model's accuracy, or :func:`confidence_halfwidth` of a
    mean over seeds) towards the paper's number and away from it: the ends of the bound of a value that is not
    linear in ours (an ``interval`` of :meth:`fedlib.results.Results.measure`)."""
    if not ours or not len(ours) == len(paper) == len(halfwidths):
        raise ValueError(f"ours, paper and halfwidths must give one number per cell each, got {len(ours)}, "
                         f"{len(paper)} and {len(halfwidths)}")
    gaps = [abs(o - q) for o, q in zip(ours, paper)]
    return (sum(max(g - w, 0.0) for g, w in zip(gaps, halfwidths)) / len(gaps),
            sum(g + w for g, w in zip(gaps, halfwidths)) / len(gaps))


def auc_halfwidth(positives: int, aucs: Sequence[float], level: float = PREDICTION_LEVEL) -> float:
    """z(level)·SE of one ROC AUC, or of the difference of two measured on the same samples, over at least
    ``positives`` positives and as many negatives, one-sided: each AUC's variance is at most A(1 − A)/min(m, n)
    (Birnbaum & Klose 1957, Ann. Math. Stat. 28:933-945, a bound that holds for any score distributions), and two
    AUCs' standard errors add (the widest any dependence between them allows)."""
    if isinstance(positives, bool) or not isinstance(positives, int) or positives < 1:
        raise ValueError(f"positives must be a positive int, got {positives!r}")
    if len(aucs) not in (1, 2) or not all(0 <= a <= 1 for a in aucs):
        raise ValueError(f"aucs must hold one or two AUCs in [0, 1], got {list(aucs)!r}")
    return float(ndtri(level)) * sum(math.sqrt(a * (1 - a) / positives) for a in aucs)


def widest_mean_square(accuracies: Sequence[float], weights: Sequence[float]) -> float:
    """The largest mean of Xⱼ² = (Σₖ wₖ·cₖⱼ)² over the images that models of accuracies pₖ can give, whatever their
    errors' dependence: the comonotone coupling of the terms wₖ·cₖ (one uniform U per image; a model of positive
    weight right where U > 1 − pₖ, one of negative weight where U < pₖ), whose sum is the largest in convex order
    (Dhaene et al. 2002, Insurance: Mathematics and Economics 31:3-33). For a difference of two models it is
    min(p₁ + p₂, 2 − p₁ − p₂), the Fréchet bound of their disagreement; for one model, p."""
    cuts = sorted({0.0, 1.0, *(1 - p if w > 0 else p for w, p in zip(weights, accuracies))})
    total = 0.0
    for lo, hi in zip(cuts, cuts[1:]):
        u = (lo + hi) / 2
        x = sum(w for w, p in zip(weights, accuracies) if (u > 1 - p if w > 0 else u < p))
        total += (hi - lo) * x * x
    return total


def prediction_halfwidth(samples: Sequence[float], level: float = PREDICTION_LEVEL) -> float:
    """t(level; n − 1)·sd·√(1 + 1/n): how far a new sample may fall from the mean of ``samples`` (n ≥ 2),
    one-sided at ``level``, for normally distributed values of unknown variance."""
    n = len(samples)
    if n < 2:
        raise ValueError(f"a prediction bound needs at least 2 samples, got {n}")
    return float(stdtrit(n - 1, level)) * statistics.stdev(samples) * math.sqrt(1 + 1 / n)


def confidence_halfwidth(samples: Sequence[float], level: float = PREDICTION_LEVEL) -> float:
    """t(level; n − 1)·sd/√n: how far the mean of ``samples`` (n ≥ 2) may lie from the true mean, one-sided at
    ``level``, for normally distributed values of unknown variance."""
    n = len(samples)
    if n < 2:
        raise ValueError(f"a confidence bound needs at least 2 samples, got {n}")
    return float(stdtrit(n - 1, level)) * statistics.stdev(samples) / math.sqrt(n)


def verdicts_path(chapter: str) -> Path:
    """Where the registered quick-mode verdicts of ``chapter`` are kept (committed with the code)."""
    return Path(__file__).resolve().parent / "experiments" / "verdicts" / f"{chapter}.json"


def ledger_signature(ledger: Sequence[Claim]) -> list[list[Any]]:
    """What a registry must match: every quick-mode claim's key, direction, unit and margin (a changed test needs a
    new sweep)."""
    return [[c.key(s), c.direction, c.unit, c.threshold, c.kind] for c in ledger for s in c.settings
            if "quick" in c.modes]


def load_registry(chapter: str) -> dict[str, Any] | None:
    """The registered verdicts of ``chapter`` (None if no sweep has been run)."""
    path = verdicts_path(chapter)
    if not path.exists():
        return None
    return json.loads(path.read_text())


def registered_verdicts(chapter: str, ledger: Sequence[Claim]) -> dict[str, Registered]:
    """key -> :class:`Registered` from the chapter's sweep; empty when the sweep is missing or stale (its ledger
    signature differs from ``ledger``)."""
    registry = load_registry(chapter)
    if registry is None or registry.get("ledger") != ledger_signature(ledger):
        return {}
    runs = registry["runs"]
    out = {}
    for claim in ledger:
        if "quick" not in claim.modes:
            continue
        for setting in claim.settings:
            key = claim.key(setting)
            out[key] = register(claim, [r["values"].get(key) for r in runs], [r["seed"] for r in runs])
    return out


def counts(verdicts: Iterable[str]) -> dict[str, int]:
    """How many of each verdict (reproduced, not reproduced, inconclusive, and not run if any)."""
    verdicts = list(verdicts)
    out = {v: verdicts.count(v) for v in VERDICTS}
    if verdicts.count(NOT_RUN):
        out[NOT_RUN] = verdicts.count(NOT_RUN)
    return out


def format_value(value: float | None, unit: str) -> str:
    """A measured value as a reader sees it (3 significant digits; percentage points for accuracy)."""
    if value is None or not math.isfinite(value):
        return "not run yet"
    if unit in ("accuracy", "probability"):
        return f"{value * 100:+.1f} pp" if unit == "accuracy" else f"{value:+.3f}"
    if unit == "psnr":
        return f"{value:+.2f} dB"
    if unit in ("relative", "epsilon", "loss"):
        return f"{value * 100:+.0f} %"
    if unit == "count":
        return f"{value:+.0f}"
    return f"{value:+.3g}"
