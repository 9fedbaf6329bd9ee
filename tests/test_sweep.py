"""The held-out check: a registered verdict is a prediction about seeds the sweep did not see, and a run at such a
seed lists the decisive verdicts it contradicts."""

import json

import pytest

from fedlib import sweep
from fedlib.sweep import disagreements, heldout

from helpers import VALUES, fake_run


def test_a_run_contradicting_a_decisive_verdict_is_listed(registry):
    # the fake sweep registers noniid_slower as reproduced (+5.0 … +5.2 pp) and ldp_worse as inconclusive
    assert disagreements(fake_run("quick", [0.8], VALUES)) == []
    broken = disagreements(fake_run("quick", [0.8], {**VALUES, "noniid_slower": -0.05, "ldp_worse_than_cdp": 0.3}))
    assert broken == ["noniid_slower: registered reproduced, this run not reproduced (-0.05)"]


def test_heldout_refuses_a_sweep_seed_and_records_each_chapter_once(registry, tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="seed 2 is one of foundations's sweep seeds"):
        heldout(["foundations"], 2, out=tmp_path)
    ran = []

    def fake_quick(jobs, *, cores, log, done):
        for job in jobs:
            ran.append(job)
            done(job, fake_run("quick", [0.8], {**VALUES, "noniid_slower": -0.05}))

    monkeypatch.setattr(sweep, "run_quick", fake_quick)
    record = heldout(["foundations"], 7, out=tmp_path)
    entry = json.loads((tmp_path / "heldout" / "seed7.json").read_text())["chapters"]["foundations"]
    assert entry == record["chapters"]["foundations"] and ran == [("foundations", 7, 1)]
    assert entry["decisive"] == 2 and entry["disagree"] == [
        "noniid_slower: registered reproduced, this run not reproduced (-0.05)"]
    heldout(["foundations"], 7, out=tmp_path)  # already recorded: nothing runs
    assert ran == [("foundations", 7, 1)]
    assert entry["values"]["noniid_slower"] == -0.05


def test_the_report_tests_a_heldout_run_against_todays_registry(registry, tmp_path, monkeypatch):
    """A held-out record keeps the run's values, so a registry changed since (e.g. a longer sweep) is what the
    report tests them against; a record without values shows what it found when it ran."""
    from fedlib.report import heldout_rows

    monkeypatch.setattr(sweep, "run_quick", lambda jobs, *, cores, log, done: [
        done(job, fake_run("quick", [0.8], {**VALUES, "noniid_slower": -0.05})) for job in jobs])
    heldout(["foundations"], 7, out=tmp_path)
    path = tmp_path / "heldout" / "seed7.json"
    record = json.loads(path.read_text())
    record["chapters"]["foundations"]["disagree"] = []  # what an earlier registry would have said
    path.write_text(json.dumps(record))
    row, = heldout_rows(tmp_path)
    assert row["contradicted"] == 1 and row["tested against"] == "today's registry"
    assert row["decisive verdicts"] == 2
    del record["chapters"]["foundations"]["values"]["noniid_slower"]  # a claim added after the run: not tested
    path.write_text(json.dumps(record))
    row, = heldout_rows(tmp_path)
    assert row["contradicted"] == 0 and row["decisive verdicts"] == 1
    assert disagreements(fake_run("quick", [0.8], {k: v for k, v in VALUES.items() if k != "noniid_slower"})) == [
        "noniid_slower: registered reproduced, this run not run (None)"]  # a run of today's code must have it
    del record["chapters"]["foundations"]["values"]
    path.write_text(json.dumps(record))
    row, = heldout_rows(tmp_path)
    assert row["contradicted"] == 0 and row["tested against"] == "the registry when it ran"


def test_quick_runs_start_longest_first(monkeypatch, tmp_path):
    """On 2 cores the seed check's makespan depends on the order: the registered sweep's times put the longest
    chapter first (simulated with the chapter times of the CI check of 2026-11-27: 812 s in the old order, 745 s)."""
    times = {c: sweep.expected_seconds(c) for c in ("fednore", "audit", "flz")}
    assert times["fednore"] > times["flz"] > times["audit"] > 0
    assert sweep.expected_seconds("no-such-chapter") == float("inf")
    started = []

    class Done:
        returncode = 0

        def poll(self):
            return 0

    def fake_start(chapter, seed, threads, out):
        started.append(chapter)
        return Done()

    monkeypatch.setattr(sweep, "_start", fake_start)
    monkeypatch.setattr(sweep, "load_results", lambda chapter, mode, folder: chapter)
    monkeypatch.setattr(sweep.time, "sleep", lambda s: None)
    sweep.run_quick([("audit", 1, 1), ("flz", 1, 1), ("fednore", 1, 1)], cores=2, log=lambda *_: None)
    assert started == ["fednore", "flz", "audit"]
