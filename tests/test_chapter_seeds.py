"""A verdict must not depend on the seed or the machine: each chapter's quick run at one more seed (seed 0 runs in
the notebook tests) gives every decisive verdict registered by its sweep (``python -m fedlib sweep CHAPTER``:
seeds 0-4 with 1 thread, and with 2 where the registry has them). The runs go two at a time, one torch thread each. ``FEDLIB_ALL_SEEDS=1`` checks
seeds 1-4 instead of one."""

import os

import pytest

from fedlib.experiments import CHAPTER_MODULES, chapter_module
from fedlib.fingerprint import fingerprint
from fedlib.ledger import ledger_signature, load_registry
from fedlib.sweep import run_quick

from helpers import check_verdicts

#: the extra seed each chapter is checked with in CI
CI_SEED = {"foundations": 3, "dpfl": 1, "fednore": 2, "privacy_eval": 1, "adpdfl": 3, "audit": 2, "sifu": 4,
           "deniability": 2, "flz": 1}
SEEDS = {c: (1, 2, 3, 4) if os.environ.get("FEDLIB_ALL_SEEDS") == "1" else (s,) for c, s in CI_SEED.items()}


@pytest.fixture(scope="module")
def other_seeds():
    jobs = [(chapter, seed, 1) for chapter in CHAPTER_MODULES for seed in SEEDS[chapter]]
    return run_quick(jobs, cores=2, log=lambda *_: None)


@pytest.mark.chapter
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("chapter", list(CHAPTER_MODULES))
def test_other_seeds_give_the_registered_verdicts(chapter, other_seeds):
    for seed in SEEDS[chapter]:
        check_verdicts(other_seeds[(chapter, seed, 1)])


@pytest.mark.parametrize("chapter", list(CHAPTER_MODULES))
def test_a_registered_sweep_is_of_the_current_ledger_and_quick_configuration(chapter):
    registry = load_registry(chapter)
    assert registry is not None, f"{chapter}: no sweep registered (python -m fedlib sweep {chapter})"
    module = chapter_module(chapter)
    assert registry["ledger"] == ledger_signature(module.LEDGER), "the ledger changed: run the sweep again"
    assert registry["config"] == fingerprint(module.QUICK), "the quick configuration changed: run the sweep again"
    runs = {(r["seed"], r["threads"]) for r in registry["runs"]}
    assert 1 in registry["threads"], "a sweep runs every seed with one torch thread at least"
    assert runs == {(s, t) for s in range(5) for t in registry["threads"]}, "seeds 0-4 at every thread count"
