"""One module per book chapter: QUICK and FULL configurations, the paper's numbers, ``run(...)``."""

from __future__ import annotations

import importlib
from pathlib import Path

from fedlib.results import MODES, Results

#: chapter id -> module holding QUICK, FULL and run(config, mode=, seed=, progress=)
CHAPTER_MODULES = {"foundations": "fedlib.experiments.foundations"}


def run_chapter(chapter: str, mode: str = "quick", *, seed: int = 0, out: str | Path | None = None,
                progress: bool = False) -> Results:
    """Run a chapter's experiments in ``mode`` and write ``<out>/<mode>/<chapter>.json``."""
    if chapter not in CHAPTER_MODULES:
        raise ValueError(f"chapter must be one of {sorted(CHAPTER_MODULES)}, got {chapter!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    module = importlib.import_module(CHAPTER_MODULES[chapter])
    config = module.QUICK if mode == "quick" else module.FULL
    results = module.run(config, mode=mode, seed=seed, progress=progress)
    results.save(out)
    return results
