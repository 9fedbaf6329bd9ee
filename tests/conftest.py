"""Shared fixtures: the data root, a small real-MNIST federation, a registered sweep, and the executed book."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
if "FEDLIB_DATA" not in os.environ and (ROOT.parent / "shared" / "data").is_dir():
    os.environ["FEDLIB_DATA"] = str(ROOT.parent / "shared" / "data")

torch.set_num_threads(int(os.environ.get("FEDLIB_NUM_THREADS", "2")))


@pytest.fixture(scope="session")
def mnist():
    from fedlib.data import load_dataset

    return load_dataset("mnist", train=True), load_dataset("mnist", train=False)


@pytest.fixture(scope="session")
def small_fed(mnist):
    """12 clients x 40 real MNIST samples, and 500 test samples."""
    train, test = mnist
    from fedlib.data import iid
    from fedlib.rng import make_generator

    sub = train.subset(torch.arange(480))
    clients = iid(sub.y, 12, generator=make_generator(0, "test-partition"))
    return sub, clients, test.subset(torch.arange(500))


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A registered sweep of three runs (seeds 0-2) for Foundations, in place of the committed one."""
    from fedlib import ledger
    from fedlib.experiments.foundations import LEDGER

    path = tmp_path / "verdicts" / "foundations.json"
    path.parent.mkdir()
    runs = [{"seed": s, "threads": 1, "elapsed_s": 1.0,
             "values": {"noniid_slower": 0.05 + s / 1000, "budget_52_rounds": 0.0, "ldp_worse_than_cdp": 0.005}}
            for s in (0, 1, 2)]
    path.write_text(json.dumps({"ledger": ledger.ledger_signature(LEDGER), "seeds": [0, 1, 2], "runs": runs}))
    monkeypatch.setattr(ledger, "verdicts_path", lambda chapter: tmp_path / "verdicts" / f"{chapter}.json")
    return path


@pytest.fixture(scope="session")
def executed_book(tmp_path_factory):
    """Stage the book, execute every chapter in quick mode (results into a temp folder; ``$FEDLIB_BOOK_JOBS``
    chapters at a time, default 2, one torch thread each), build the HTML.

    Returns a dict with the results root, per-notebook errors (None if it ran) and the build result.
    """
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_book

    results_root = tmp_path_factory.mktemp("results")
    for folder in ("full", "heldout"):  # the committed full-mode runs and held-out checks, for the report
        if (ROOT / "results" / folder).is_dir():
            shutil.copytree(ROOT / "results" / folder, results_root / folder)
    os.environ["FEDLIB_RESULTS"] = str(results_root)
    try:
        build_book.stage()
        jobs = int(os.environ.get("FEDLIB_BOOK_JOBS", "2"))
        done = build_book.execute_all("quick", 0, jobs)
        errors = {k: None if isinstance(v, float) else f"{type(v).__name__}: {v}" for k, v in done.items()}
        build = build_book.build() if all(e is None for e in errors.values()) else None
    finally:
        del os.environ["FEDLIB_RESULTS"]
    return {"results": results_root, "errors": errors, "build": build}
