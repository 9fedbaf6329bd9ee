"""The reproduction report reads the results files: status per mode, paper tables with quick and full columns."""

from __future__ import annotations

import pytest

from fedlib.report import chapter_status, paper_tables, status_table
from fedlib.results import CHAPTERS, Results


def fake_run(mode: str, ours: list[float], holds: bool) -> Results:
    """A hand-made results file (test data only, never shown as a reproduction)."""
    res = Results("flz", mode, 0, {}, elapsed_s=12.0)
    res.add_table("T4.2", "sanity", [{"framework": f"f{k}", "paper": 0.5, "ours": v} for k, v in enumerate(ours)])
    res.add_table("shares", "not a paper table", [{"agent": 0, "share": 0.2}])
    res.add_claim("a", "first", holds, "e")
    res.add_claim("b", "second", False, "e", expected=False)
    return res


def test_status_and_tables_from_results_files(tmp_path):
    fake_run("quick", [0.8, 0.7], True).save(tmp_path)
    status = chapter_status("flz", tmp_path)
    assert status["quick"].startswith("2/2 claims as expected (1 documented") and status["full"] == "not run"
    assert "seed 0, 12 s on " in status["quick"] and "thread(s) of" in status["quick"]
    assert status["status"] == "every claim as expected"
    (caption, rows), = paper_tables("flz", tmp_path)
    assert caption.startswith("flz T4.2") and rows[0] == {"framework": "f0", "paper": 0.5, "ours (quick)": 0.8}

    fake_run("full", [0.9, 0.6], False).save(tmp_path)
    assert chapter_status("flz", tmp_path)["status"] == "1 claim(s) differ from expected"
    (_, rows), = paper_tables("flz", tmp_path)
    assert [r["ours (full)"] for r in rows] == [0.9, 0.6]
    assert [r["chapter"] for r in status_table(tmp_path)] == list(CHAPTERS)
    assert status_table(tmp_path)[0]["status"] == "no results yet"
    with pytest.raises(ValueError, match="chapter"):
        chapter_status("flower", tmp_path)
