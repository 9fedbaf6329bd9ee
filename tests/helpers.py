"""Small models and configurations shared by the algorithm tests."""

import shutil
from pathlib import Path

from fedlib.experiments.foundations import LEDGER as FOUNDATIONS_LEDGER
from fedlib.fl import FLConfig, LocalSGD
from fedlib.models import build_model
from fedlib.results import Results
from fedlib.rng import make_generator


def mlp(seed=0):
    """The thesis MLP with one hidden layer of 32 units: fast, and on the explicit-backprop path."""
    return build_model("mlp", generator=make_generator(seed, "init"), hidden=(32,))


def cfg(**kw):
    """3 rounds, 4 clients per round, one local epoch of batch 16, LR 0.1, seed 0; ``kw`` overrides."""
    return FLConfig(**{**dict(rounds=3, clients_per_round=4, local=LocalSGD(1, 16), lr=0.1, seed=0), **kw})


def check_verdicts(results):
    """A quick run measures every quick-mode claim of its chapter's ledger and agrees with every decisive verdict
    registered by the chapter's seed sweep (a verdict must not depend on the seed or the machine)."""
    from fedlib.sweep import disagreements

    unmeasured = [c["key"] for c in results.claims if c["outcome"] == "not run"]
    assert not unmeasured, f"quick mode left claims unmeasured: {unmeasured}"
    disagree = disagreements(results)
    assert not disagree, disagree


#: measured values of a hand-made Foundations run (see :func:`fake_run`)
VALUES = {"fedavg_iid": 0.0, "noniid_slower": 0.05, "budget_52_rounds": 0.0, "ldp_worse_than_cdp": -0.3}


def fake_run(mode: str, ours: list[float], values: dict[str, float | None]) -> Results:
    """A hand-made results file of the Foundations chapter (test data only, never shown as a reproduction)."""
    res = Results("foundations", mode, 0, {}, elapsed_s=12.0)
    res.add_table("T3.3", "sanity", [{"setting": f"s{k}", "paper": 0.5, "ours": v} for k, v in enumerate(ours)])
    res.add_table("mechanisms", "not a paper table", [{"quantity": "x", "ours": 0.2}])
    for claim in FOUNDATIONS_LEDGER:
        res.measure(claim, values.get(claim.id), "made up")
    res.evaluate(FOUNDATIONS_LEDGER)
    return res


def assemble_committed_full(chapter: str, out: Path, exclude: tuple[str, ...] = ()) -> Results:
    """``chapter``'s full run assembled by today's code from the committed unit files (copied under ``out``; nothing
    is computed), so a test of a full-mode verdict fails when the measuring code changes, not only the file.
    ``exclude``: glob patterns of unit files left out, so a test pinned to some units holds as more are committed."""
    from fedlib.experiments import run_chapter
    from fedlib.units import Budget, default_folder

    root = Path(__file__).resolve().parents[1] / "results"
    folder = default_folder(chapter, "full", out)
    shutil.copytree(default_folder(chapter, "full", root), folder)
    for pattern in exclude:
        for unit in folder.glob(pattern):
            unit.unlink()
    return run_chapter(chapter, "full", out=out, budget=Budget(units=0))
