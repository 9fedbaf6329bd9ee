"""The reproduction report reads the results files, the ledgers and the registered verdicts: counts per chapter and
mode, the ledger rows, and paper tables with quick and full columns; a corrupt file shows as unreadable."""

from __future__ import annotations

import json

import pytest

from fedlib import ledger
from fedlib.experiments.foundations import LEDGER
from fedlib.report import (chapter_counts, chapter_status, full_text, ledger_rows, paper_tables,
                           quick_vs_full_html, status_table, totals)
from fedlib.results import CHAPTERS, Results

VALUES = {"fedavg_iid": 0.0, "noniid_slower": 0.05, "budget_52_rounds": 0.0, "ldp_worse_than_cdp": -0.3}


def fake_run(mode: str, ours: list[float], values: dict[str, float | None]) -> Results:
    """A hand-made results file of the Foundations chapter (test data only, never shown as a reproduction)."""
    res = Results("foundations", mode, 0, {}, elapsed_s=12.0)
    res.add_table("T3.3", "sanity", [{"setting": f"s{k}", "paper": 0.5, "ours": v} for k, v in enumerate(ours)])
    res.add_table("mechanisms", "not a paper table", [{"quantity": "x", "ours": 0.2}])
    for claim in LEDGER:
        res.measure(claim, values.get(claim.id), "made up")
    res.evaluate(LEDGER)
    return res


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A registered sweep of three runs for Foundations."""
    path = tmp_path / "verdicts" / "foundations.json"
    path.parent.mkdir()
    runs = [{"seed": s, "threads": 1, "elapsed_s": 1.0,
             "values": {"noniid_slower": 0.05 + s / 1000, "budget_52_rounds": 0.0, "ldp_worse_than_cdp": 0.005}}
            for s in (0, 1, 2)]
    path.write_text(json.dumps({"ledger": ledger.ledger_signature(LEDGER), "runs": runs}))
    monkeypatch.setattr(ledger, "verdicts_path", lambda chapter: tmp_path / "verdicts" / f"{chapter}.json")
    return path


def test_counts_come_from_the_registered_sweep_and_the_full_run(tmp_path, registry):
    fake_run("quick", [0.8, 0.7], VALUES).save(tmp_path / "r")
    c = chapter_counts("foundations", tmp_path / "r")
    # quick: noniid reproduced in every run (and by a new seed's prediction bound), budget exact, ldp_worse 0.005 < margin -> inconclusive; fedavg_iid full only
    assert c["quick"] == {"reproduced": 2, "not reproduced": 0, "inconclusive": 1} and c["claims"] == 4
    assert c["full"] == {"reproduced": 0, "not reproduced": 0, "inconclusive": 0, "not run": 4}
    assert c["contradicted"] == 0
    rows = {r["claim"]: r for r in ledger_rows("foundations", tmp_path / "r")}
    assert rows["fedavg_iid"]["quick"] == "full mode only" and rows["noniid_slower"]["quick spread"] == \
        "+5.0 pp … +5.2 pp"
    fake_run("full", [0.9, 0.6], {**VALUES, "noniid_slower": None}).save(tmp_path / "r")
    c = chapter_counts("foundations", tmp_path / "r")
    assert c["full"] == {"reproduced": 2, "not reproduced": 1, "inconclusive": 0, "not run": 1}
    assert totals(tmp_path / "r")["full"]["not reproduced"] == 1
    (_, rows), = paper_tables("foundations", tmp_path / "r")
    assert [r["ours (full)"] for r in rows] == [0.9, 0.6] and rows[0]["ours (quick)"] == 0.8
    assert [r["Δ (full − paper)"] for r in rows] == pytest.approx([0.4, 0.1])


def test_a_run_that_contradicts_a_decisive_verdict_is_flagged(tmp_path, registry):
    fake_run("quick", [0.8], {**VALUES, "noniid_slower": -0.05}).save(tmp_path)
    assert chapter_counts("foundations", tmp_path)["contradicted"] == 1
    assert "1 claim(s) disagree with the registered verdict" in chapter_status("foundations", tmp_path)["quick run"]


def test_a_corrupt_results_file_shows_as_unreadable_and_the_rest_renders(tmp_path, registry):
    fake_run("quick", [0.8], VALUES).save(tmp_path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "foundations.json").write_text("{ truncated")
    status = chapter_status("foundations", tmp_path)
    assert status["full run"].startswith("unreadable: ") and "foundations.json" in status["full run"]
    assert [r["chapter"] for r in status_table(tmp_path)][0] == "Foundations" and len(status_table(tmp_path)) == \
        len(CHAPTERS)
    with pytest.raises(ValueError, match="chapter"):
        chapter_status("flower", tmp_path)


def test_quick_vs_full_lists_only_what_the_full_run_measured(tmp_path, registry, monkeypatch):
    monkeypatch.setenv("FEDLIB_RESULTS", str(tmp_path / "r"))
    quick = fake_run("quick", [0.8, 0.7], VALUES)
    quick.save()
    assert "has not measured any of this chapter's claims yet" in quick_vs_full_html(quick)
    full = fake_run("full", [0.9, 0.6], {**VALUES, "noniid_slower": None})
    full.units = {"done": 3, "total": 7}
    full.save()
    out = quick_vs_full_html(quick)
    assert "3 of 7 units finished" in out and "budget_52_rounds" in out and "noniid_slower" not in out


def test_full_text_gives_the_full_runs_value_and_verdict_or_not_run(tmp_path, registry, monkeypatch):
    monkeypatch.setenv("FEDLIB_RESULTS", str(tmp_path / "r"))
    quick = fake_run("quick", [0.8, 0.7], VALUES)
    quick.save()
    assert full_text(quick, "ldp_worse_than_cdp") == "not run yet"
    full = fake_run("full", [0.9, 0.6], {**VALUES, "noniid_slower": None})
    full.save()
    row = next(r for r in ledger_rows("foundations", tmp_path / "r") if r["claim"] == "ldp_worse_than_cdp")
    assert full_text(quick, "ldp_worse_than_cdp") == f"{row['full value']}, {row['full']}"
    assert row["full"] in ("reproduced", "not reproduced", "inconclusive")
    assert full_text(quick, "noniid_slower") == "not run yet"
    with pytest.raises(KeyError, match="no claim 'nonsense'"):
        full_text(quick, "nonsense")
    for r in ledger_rows("foundations", tmp_path / "r"):  # every key of the ledger, settings included, resolves
        assert r["key"] == next(c for c in LEDGER if c.id == r["claim"]).key(r["setting"] or "")
        assert full_text(quick, r["key"]).endswith((r["full"], "not run yet"))


def test_a_full_runs_status_gives_its_units_compute_time_not_the_assembling_runs(tmp_path, registry, monkeypatch):
    monkeypatch.setenv("FEDLIB_RESULTS", str(tmp_path / "r"))
    full = fake_run("full", [0.9, 0.6], VALUES)  # elapsed_s = 12: the run that assembled the units
    full.units = {"done": 2, "total": 7, "seconds": {"a": 100.0, "b": 55.4}}
    full.save()
    row = chapter_status("foundations")["full run"]
    assert "units 2/7 (155 s of compute)" in row and "12 s" not in row
    full.units = {**full.units, "devices": {"b": "cuda"}}
    full.save()
    row = chapter_status("foundations")["full run"]
    assert "units 2/7 (155 s of compute: 1 unit 100 s on cpu, 1 unit 55 s on cuda)" in row
    quick = fake_run("quick", [0.8, 0.7], VALUES)  # a quick run computes all its units itself: its own time
    quick.units = {"done": 7, "total": 7, "seconds": {"a": 1.0}}
    quick.save()
    assert chapter_status("foundations")["quick run"].startswith("seed 0, 12 s on ")
