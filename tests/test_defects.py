"""Falsifiable claims: each chapter's central claim, on the chapter's smallest configuration, flips its verdict when
a deliberate defect is injected (noise off, unlearning disabled, ...). A claim no defect can flip is bookkeeping."""

import pytest

from fedlib.experiments import CHAPTER_MODULES, chapter_module

CHAPTERS = [c for c in CHAPTER_MODULES if hasattr(chapter_module(c), "DEFECTS")]


def central_outcomes(results):
    return {c["key"]: c["outcome"] for c in results.claims if c["central"]}


@pytest.mark.chapter
@pytest.mark.timeout(900)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_deliberate_defect_flips_the_central_claim(chapter):
    module = chapter_module(chapter)
    healthy = central_outcomes(module.run(module.TINY, seed=0))
    assert healthy and all(v == "reproduced" for v in healthy.values()), healthy
    for defect, what in module.DEFECTS.items():
        broken = central_outcomes(module.run(module.TINY, seed=0, defect=defect))
        assert all(v != "reproduced" for v in broken.values()), f"{defect} ({what}) left {broken}"


def test_every_chapter_with_a_ledger_declares_central_claims_and_defects():
    for chapter in CHAPTER_MODULES:
        module = chapter_module(chapter)
        if not hasattr(module, "LEDGER"):
            continue
        assert any(c.central for c in module.LEDGER), chapter
        assert getattr(module, "DEFECTS", None) and hasattr(module, "TINY"), chapter
        with pytest.raises(ValueError, match="defect must be one of"):
            module.run(module.TINY, seed=0, defect="no-such-defect")
