"""The reproduction report reads the results files, the ledgers and the registered verdicts: counts per chapter and
mode, the ledger rows, and paper tables with quick and full columns; a corrupt file shows as unreadable."""

from __future__ import annotations

import json

import pytest

from fedlib.experiments.foundations import LEDGER
from fedlib.ledger import unacknowledged
from fedlib.report import (chapter_counts, chapter_status, decisive_in_both, full_text, heldout_rows, ledger_of,
                           ledger_rows, paper_agreement, paper_self_check, paper_tables, paper_values_of,
                           quick_vs_full_html, status_table, totals)
from fedlib.results import CHAPTERS

from helpers import VALUES, fake_run


def test_counts_come_from_the_registered_sweep_and_the_full_run(tmp_path, registry):
    fake_run("quick", [0.8, 0.7], VALUES).save(tmp_path / "r")
    c = chapter_counts("foundations", tmp_path / "r")
    # quick: noniid reproduced in every run and by a new seed's prediction bound, budget exact, ldp_worse
    # 0.005 < margin -> inconclusive; fedavg_iid full only
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


def test_decisive_in_both_modes_flags_a_full_verdict_that_reverses_the_quick_one(tmp_path, registry, monkeypatch):
    monkeypatch.setattr("fedlib.report.CHAPTERS", ["foundations"])
    fake_run("quick", [0.8], VALUES).save(tmp_path)
    assert decisive_in_both(tmp_path) == []  # no full run yet
    fake_run("full", [0.8], VALUES).save(tmp_path)
    rows = {r["claim"]: r for r in decisive_in_both(tmp_path)}
    assert rows["noniid_slower"]["agree"] and "ldp_worse_than_cdp" not in rows  # quick: inconclusive
    fake_run("full", [0.8], {**VALUES, "noniid_slower": -0.05}).save(tmp_path)
    (row,) = [r for r in decisive_in_both(tmp_path) if not r["agree"]]
    assert (row["claim"], row["quick verdict"], row["full verdict"]) == ("noniid_slower", "reproduced",
                                                                        "not reproduced")


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


def test_paper_tables_match_the_full_run_by_row_not_by_position(tmp_path, registry):
    # DPFL's Table 3.1: the full run adds the 1,000-client rows, which quick mode does not run; matched by
    # position the report dropped the whole "ours (full)" column
    quick = fake_run("quick", [], VALUES)
    quick.add_table("T3.3", "sanity", [
        {"algorithm": "A", "clients": 100, "paper": 0.9, "rounds_ours": 15, "ours": 0.8},
        {"algorithm": "B", "clients": 100, "paper": 0.7, "rounds_ours": 15, "ours": 0.6}])
    quick.save(tmp_path)
    full = fake_run("full", [], VALUES)
    full.add_table("T3.3", "sanity", [{"algorithm": "B", "clients": 100, "paper": 0.7, "rounds_ours": 52, "ours": 0.75},
                                      {"algorithm": "A", "clients": 1000, "paper": 0.97, "rounds_ours": 63,
                                       "ours": 0.95}])
    full.save(tmp_path)
    (caption, rows), = paper_tables("foundations", tmp_path)
    assert "committed full run" in caption
    assert [(r["algorithm"], r["clients"], r["ours (quick)"], r["ours (full)"]) for r in rows] == [
        ("B", 100, 0.6, 0.75), ("A", 1000, None, 0.95), ("A", 100, 0.8, None)]
    assert rows[0]["rounds_ours"] == 15 and "rounds_ours" not in rows[1]  # our columns come from one mode only
    assert rows[1]["Δ (full − paper)"] == pytest.approx(-0.02) and rows[2]["Δ (full − paper)"] is None
    # rows of ours that the paper does not have (no label, no paper number) match only when their settings agree
    quick.add_table("T3.3", "ours", [{"C": 1.0, "sigma": 0.04, "paper": None, "ours": 17.3}])
    full.add_table("T3.3", "ours", [{"C": 10.0, "sigma": 0.004, "paper": None, "ours": 9.0},
                                    {"C": 1.0, "sigma": 0.04, "paper": None, "ours": 18.0}])
    quick.save(tmp_path)
    full.save(tmp_path)
    (_, rows), = paper_tables("foundations", tmp_path)
    assert [(r["C"], r["ours (quick)"], r["ours (full)"]) for r in rows] == [(10.0, None, 9.0), (1.0, 17.3, 18.0)]


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


def test_heldout_rows_list_each_chapter_and_seed_with_what_it_contradicted(tmp_path):
    assert heldout_rows(tmp_path) == []
    env = {"threads": "1", "cpus": "2", "torch": "2.4", "cuda": "none"}
    (tmp_path / "heldout").mkdir()
    for seed, sifu in ((6, []), (5, ["x: registered reproduced, this run inconclusive (0.001)"])):
        chapters = {"sifu": {"decisive": 56, "disagree": sifu, "elapsed_s": 312.4, "environment": env},
                    "audit": {"decisive": 14, "disagree": [], "elapsed_s": 62.0, "environment": env}}
        (tmp_path / "heldout" / f"seed{seed}.json").write_text(json.dumps({"seed": seed, "chapters": chapters}))
    rows = heldout_rows(tmp_path)
    assert [(r["chapter"], r["seed"], r["contradicted"]) for r in rows] == [
        ("SIFU", 5, 1), ("SIFU", 6, 0), ("Auditing our claims", 5, 0), ("Auditing our claims", 6, 0)]
    assert rows[0]["which"].startswith("x: registered reproduced") and rows[1]["which"] == "–"
    assert rows[0]["run"] == "312 s, 1 thread(s) of 2 CPU(s), torch 2.4"
    cpu = {**env, "cpu_model": "AMD EPYC", "cpu_capability": "AVX2"}  # recorded since 2026-12-07
    (tmp_path / "heldout" / "seed7.json").write_text(json.dumps(
        {"seed": 7, "chapters": {"audit": {"decisive": 14, "disagree": [], "elapsed_s": 60.0, "environment": cpu}}}))
    assert heldout_rows(tmp_path)[-1]["run"] == "60 s, 1 thread(s) of 2 CPU(s) (AMD EPYC AVX2), torch 2.4"


def test_paper_agreement_counts_the_full_accuracies_within_two_points_of_the_papers(tmp_path, registry):
    fake_run("full", [0.51, 0.47], VALUES).save(tmp_path / "r")  # the paper's cells are 0.5 (helpers.fake_run)
    (row,) = paper_agreement(tmp_path / "r")
    assert (row["table"], row["cells with both"], row["within 2 pp"], row["more than 2 pp off"]) == \
        ("T3.3", "2 of 2", 1, 1)
    assert row["mean |ours − paper| (pp)"] == pytest.approx(2.0) and row["largest gap"] == "-3.0 pp (setting s1)"
    fake_run("full", [None, 0.5], VALUES).save(tmp_path / "r")  # a cell not run yet is not compared
    (row,) = paper_agreement(tmp_path / "r")
    assert (row["cells with both"], row["within 2 pp"], row["largest gap"]) == ("1 of 2", 1, "+0.0 pp (setting s1)")
    assert paper_agreement(tmp_path / "empty") == []


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_claim_the_papers_own_numbers_fail_says_so_in_its_note(chapter):
    # a 'not reproduced' the paper's own table would get too is no failure of ours: the reader must be told
    assert unacknowledged(ledger_of(chapter), paper_values_of(chapter)) == []


def test_the_report_counts_the_papers_own_numbers_on_our_tests():
    rows = {r["chapter"]: r for r in paper_self_check()}
    row = rows["Plausible deniability"]
    assert row["reproduced"] + row["inconclusive"] + row["not reproduced"] == \
        row["claim settings with the paper's numbers"] > 100
    assert "faster_than_retrain_small_k_full: 3" in row["not reproduced on the paper's own numbers (claim: settings)"]
    # ADPDFL's full run is complete: 'only a small degradation compared to DP-FedAvg' is not reproduced by ours and
    # by the thesis's own Table 5.4, but ours is far *above* DP-FedAvg with central noise, the thesis's far below:
    # not the same failure. Deniability's 'k = 4 is the worst column' (row-wise L2): ours and Table 2's MNIST-iid row
    # both have k = 4 above another column (ours by 22-30 pp, the paper's by 0.5)
    key = "our 'not reproduced' the paper's own numbers fail too, on the same side (quick / full)"
    assert rows["ADPDFL"][key] == "0 / 0" and rows["Plausible deniability"][key].startswith("1 / ")
    # ... and ours is within 1 pp of its Non-Private twin and of DP-FedAvg (client noise) where Table 5.4 is 2.7-5.1 pp
    # below: the words reproduced where the thesis's numbers are not
    assert rows["ADPDFL"]["our 'reproduced' the paper's own numbers fail (quick / full)"] == "0 / 3"


def test_the_ledger_page_shows_each_claims_note_and_the_papers_own_numbers(tmp_path):
    from fedlib.report import ledger_html

    quick = fake_run("quick", [0.8], VALUES)
    quick.save(tmp_path / "r")
    page = ledger_html(quick)
    noted = next(c for c in LEDGER if c.note)
    assert noted.note.split(",")[0] in page  # the interpretation a claim records is on the page, not only in its file
    assert "the paper&#x27;s own numbers on this test" in page or "the paper's own numbers on this test" in page
