"""One module per book chapter: QUICK and FULL configurations, the paper's numbers, its ledger, ``run(...)``."""

from __future__ import annotations

import importlib
import json
import logging
import inspect
from pathlib import Path
from typing import Any

from fedlib.results import MODES, Results
from fedlib.units import Budget, Units, default_folder

#: chapter id -> module holding QUICK, FULL, LEDGER and run(config, mode=, seed=, progress=, units=)
CHAPTER_MODULES = {"foundations": "fedlib.experiments.foundations", "dpfl": "fedlib.experiments.dpfl",
                   "fednore": "fedlib.experiments.fednore", "privacy_eval": "fedlib.experiments.privacy_eval",
                   "adpdfl": "fedlib.experiments.adpdfl", "sifu": "fedlib.experiments.sifu",
                   "deniability": "fedlib.experiments.deniability", "flz": "fedlib.experiments.flz",
                   "audit": "fedlib.experiments.audit"}


def chapter_module(chapter: str) -> Any:
    """The experiments module of ``chapter``."""
    if chapter not in CHAPTER_MODULES:
        raise ValueError(f"chapter must be one of {sorted(CHAPTER_MODULES)}, got {chapter!r}")
    return importlib.import_module(CHAPTER_MODULES[chapter])


def supports(chapter: str, option: str) -> bool:
    """Whether the chapter's ``run`` takes ``option`` (``"checkpoints"``, ``"units"``)."""
    return option in inspect.signature(chapter_module(chapter).run).parameters


def run_chapter(chapter: str, mode: str = "quick", *, seed: int = 0, out: str | Path | None = None,
                progress: bool = False, checkpoints: str | Path | None = None, budget: Budget | None = None,
                plan_only: bool = False) -> Results:
    """Run a chapter's experiments in ``mode`` and write ``<out>/<mode>/<chapter>.json``.

    Full mode is split into units (:mod:`fedlib.units`), one file each under ``<out>/full/<chapter>/units/``:
    finished units are read back, missing ones run (within ``budget``), and the results file is assembled from
    whatever is finished ("not run yet" for the rest), units that another run on the same results root finished
    meanwhile included. ``plan_only`` computes nothing and writes nothing: the
    returned results say which units exist, are done, or are blocked by missing data.

    ``checkpoints``: a folder where chapters that support it keep one checkpoint per training run (under
    ``<checkpoints>/<mode>/``), so an interrupted run resumes inside a unit. A checkpoint written for another run
    (other configuration, algorithm, W^0, partition or data) stops the run with
    :class:`~fedlib.checkpoint.CheckpointMismatch` naming what differs.

    Without ``progress`` (the book's pages) the engine's per-run warnings (a run stopped because it diverged) are
    not logged: every chapter records divergence in its tables, where the page explains it.
    """
    module = chapter_module(chapter)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    config = module.QUICK if mode == "quick" else module.FULL
    kwargs: dict[str, Any] = {}
    if checkpoints is not None:
        if not supports(chapter, "checkpoints"):
            raise ValueError(f"chapter {chapter!r} does not support checkpoints (chapters that do: "
                             f"{', '.join(c for c in CHAPTER_MODULES if supports(c, 'checkpoints'))})")
        kwargs["checkpoints"] = Path(checkpoints) / mode
    units = None
    if supports(chapter, "units"):
        folder = default_folder(chapter, mode, out) if mode == "full" else None
        units = kwargs["units"] = Units(chapter, mode, seed, folder=folder, budget=budget, plan_only=plan_only)
    elif plan_only or budget is not None:
        raise ValueError(f"chapter {chapter!r} is not split into units yet; it runs whole")
    engine_log = logging.getLogger("fedlib.fl.engine")
    level = engine_log.level
    if not progress:
        engine_log.setLevel(logging.ERROR)
    try:
        results = module.run(config, mode=mode, seed=seed, progress=progress, **kwargs)
        # a second run on the same results root may have finished units this one left "not run": assemble again
        # with them, so that the file written last does not drop the other run's units
        while units is not None and not plan_only and units.refresh():
            elapsed = results.elapsed_s
            results = module.run(config, mode=mode, seed=seed, progress=progress, **kwargs)
            results.elapsed_s += elapsed
    finally:
        engine_log.setLevel(level)
    if units is not None:
        results.units = units.summary()
    if not plan_only:
        _refuse_to_drop_done_units(results, out)
        results.save(out)
    return results


def _refuse_to_drop_done_units(results: Results, out: str | Path | None) -> None:
    """A full run whose data root lacks a dataset blocks its settings at once; written over a results file that
    assembled more finished units (a run with FEDLIB_DATA unset, say), it would show them all as "not run yet"."""
    summary, path = results.units, results.path(out)
    if results.mode != "full" or not summary or not summary["blocked"] or not path.exists():
        return
    try:
        before = json.loads(path.read_text()).get("units", {}).get("done", 0)
    except ValueError:
        return  # an unreadable file is replaced
    if before > summary["done"]:
        raise ValueError(
            f"{results.chapter} full: {len(summary['blocked'])} setting(s) are blocked by missing data "
            f"({'; '.join(f'{k}: {v}' for k, v in summary['blocked'].items())}), so this run assembles "
            f"{summary['done']} finished unit(s) where {path} has {before}; that file was left as it is. Point "
            "FEDLIB_DATA at the data root that holds them (offline: the shared data folder)")
