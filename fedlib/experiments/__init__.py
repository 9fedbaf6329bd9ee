"""One module per book chapter: QUICK and FULL configurations, the paper's numbers, ``run(...)``."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from fedlib.results import MODES, Results

#: chapter id -> module holding QUICK, FULL and run(config, mode=, seed=, progress=)
CHAPTER_MODULES = {"foundations": "fedlib.experiments.foundations", "dpfl": "fedlib.experiments.dpfl",
                   "fednore": "fedlib.experiments.fednore", "privacy_eval": "fedlib.experiments.privacy_eval",
                   "adpdfl": "fedlib.experiments.adpdfl", "sifu": "fedlib.experiments.sifu",
                   "deniability": "fedlib.experiments.deniability", "flz": "fedlib.experiments.flz",
                   "audit": "fedlib.experiments.audit"}


def run_chapter(chapter: str, mode: str = "quick", *, seed: int = 0, out: str | Path | None = None,
                progress: bool = False, checkpoints: str | Path | None = None) -> Results:
    """Run a chapter's experiments in ``mode`` and write ``<out>/<mode>/<chapter>.json``.

    ``checkpoints``: a folder where chapters that support it keep one checkpoint per training run (under
    ``<checkpoints>/<mode>/``), so an interrupted chapter run resumes where it stopped (finished runs are read back,
    not re-trained). A checkpoint written for another run (other configuration, algorithm, W^0, partition or data)
    stops the run with :class:`~fedlib.checkpoint.CheckpointMismatch` naming what differs.
    """
    if chapter not in CHAPTER_MODULES:
        raise ValueError(f"chapter must be one of {sorted(CHAPTER_MODULES)}, got {chapter!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    module = importlib.import_module(CHAPTER_MODULES[chapter])
    config = module.QUICK if mode == "quick" else module.FULL
    kwargs = {}
    if checkpoints is not None:
        if "checkpoints" not in inspect.signature(module.run).parameters:
            raise ValueError(f"chapter {chapter!r} does not support checkpoints")
        kwargs["checkpoints"] = Path(checkpoints) / mode
    results = module.run(config, mode=mode, seed=seed, progress=progress, **kwargs)
    results.save(out)
    return results
