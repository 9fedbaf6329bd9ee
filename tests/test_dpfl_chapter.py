"""The DPFL chapter's experiment: resuming from checkpoints, full mode as units, bad input."""

import pytest

from fedlib.experiments import dpfl, run_chapter
from fedlib.units import Units


def test_an_interrupted_chapter_resumes_from_its_checkpoints(tmp_path):
    res = dpfl.run(dpfl.TINY, seed=0, checkpoints=tmp_path / "ckpt")
    files = sorted((tmp_path / "ckpt").rglob("*.pt"))
    assert len(files) == len(res.tables["ablation"]["rows"])  # one checkpoint per training run
    stamps = [f.stat().st_mtime_ns for f in files]
    again = dpfl.run(dpfl.TINY, seed=0, checkpoints=tmp_path / "ckpt")
    assert [f.stat().st_mtime_ns for f in files] == stamps  # every run was read back, none re-trained
    assert again.tables["ablation"] == res.tables["ablation"] and again.series == res.series


def test_full_mode_plans_one_unit_per_training_run_and_assembles_without_them(tmp_path):
    units = Units("dpfl", "full", 0, folder=tmp_path, plan_only=True)
    res = dpfl.run(dpfl.FULL, mode="full", seed=0, units=units)
    plan = units.summary()
    runs = sum(len(dpfl.ldp_variants(dpfl.FULL, s)) + len(dpfl.lcdp_variants(dpfl.FULL, s))
               for s in dpfl.FULL.settings)
    assert plan["done"] == 0 and plan["total"] == plan["not_run"] == runs + 2 + 1 + 1 + 1  # + anatomy, sensitivity,
    assert "1000/proposed LDP-FL" in plan["missing"] and "dpsgd" in plan["missing"]  # DP-SGD, audit
    assert all(row["ours"] is None for row in res.tables["T3.1"]["rows"])
    training = [c for c in res.claims if c["id"] not in ("ldp_guarantee", "upload_saving", "cdp_accountant_binds")]
    assert all(c["outcome"] in ("not run", "quick mode only") for c in training)


def test_full_mode_keeps_one_file_per_unit_and_reads_them_back(tmp_path):
    units = Units("dpfl", "full", 0, folder=tmp_path / "units")
    res = dpfl.run(dpfl.TINY, mode="full", seed=0, units=units)
    files = sorted((tmp_path / "units").glob("*.json"))
    assert len(files) == units.summary()["computed"] == units.summary()["total"]
    assert not list((tmp_path / "checkpoints").rglob("*.pt"))  # a finished unit's checkpoint is removed
    again = Units("dpfl", "full", 0, folder=tmp_path / "units")
    res2 = dpfl.run(dpfl.TINY, mode="full", seed=0, units=again)
    assert set(again.state.values()) == {"done"}
    assert res2.tables == res.tables and res2.claims == res.claims
    # the differences of two runs' accuracies read both models' per-image results (the paired bound), except where
    # a run diverged (TINY's LCDP-FL with noise on the average): no per-image results of a model that blew up
    pairs = [m["sampling"] for m in res2.measured.values() if len(m.get("sampling", {}).get("accuracies", ())) == 2]
    paired = [p["disagreement"] for p in pairs if "disagreement" in p]
    assert len(paired) == len(pairs) - 1 >= 15 and all(0 < d < 1 for d in paired)


def test_a_defect_name_is_checked():
    with pytest.raises(ValueError, match="defect must be one of"):
        dpfl.run(dpfl.TINY, seed=0, defect="noise-of")


def test_a_chapter_without_checkpoint_support_says_so(tmp_path):
    with pytest.raises(ValueError, match="does not support checkpoints"):
        run_chapter("foundations", "quick", out=tmp_path, checkpoints=tmp_path)


def test_table_3_1s_own_comparison_reads_the_quoted_cdp_accuracy(tmp_path):
    """Table 3.1 compares LCDP-FL with the 78 % / 92 % Geyer et al. published; the committed full run reads that
    comparison too (beside the re-run CDP-FL): 0.6512 − 0.78 with 100 clients is not reproduced, 0.9233 − 0.92 with
    1,000 is within the one-point margin."""
    from helpers import assemble_committed_full

    claims = {c["key"]: c for c in assemble_committed_full("dpfl", tmp_path).claims}
    small, large = claims["lcdp_beats_cdp_quoted/100 clients"], claims["lcdp_beats_cdp_quoted/1,000 clients"]
    assert small["value"] == pytest.approx(0.6512 - 0.78) and small["outcome"] == "not reproduced"
    assert large["value"] == pytest.approx(0.9233 - 0.92) and large["outcome"] == "inconclusive"
    rerun = claims["cdp_quoted_value/100 clients"]
    assert rerun["outcome"] == "not reproduced" and "(quoted)" in rerun["detail"]
    # both quoted readings share the quoted number: their difference is the re-run comparison (LCDP-FL − CDP-FL)
    for n, rerun_key in (("100 clients", "lcdp_beats_cdp/noise std σS/m before Global-MGD (ours)"),
                         ("1,000 clients", "lcdp_beats_cdp_1000")):
        assert claims[f"lcdp_beats_cdp_quoted/{n}"]["value"] - claims[f"cdp_quoted_value/{n}"]["value"] == (
            pytest.approx(claims[rerun_key]["value"]))
    assert all(c.modes == ("full",) for c in dpfl.LEDGER if c.id in ("lcdp_beats_cdp_quoted", "cdp_quoted_value"))


def test_the_communication_saving_is_read_with_and_without_the_indices_and_the_broadcast(tmp_path):
    """§3.2.2.2's "reduce 90 % of the total communication costs" (LCDP-FL top-10 %, 100 clients): 90 % of the values
    are not uploaded, but a sparse upload sends an index with each value (80 % saved, exactly the '≈' rule's 2·margin:
    not reproduced), and the server's broadcast stays dense (40 % of a round's words saved)."""
    from helpers import assemble_committed_full

    claims = {c["key"]: c for c in assemble_committed_full("dpfl", tmp_path).claims}
    assert "19,921 of d = 199,210" in claims["upload_saving"]["detail"]
    assert [claims[k]["value"] for k in ("upload_saving", "upload_saving_with_indices", "round_trip_saving")] == [
        0.0, -0.1, -0.5]
    assert [claims[k]["outcome"] for k in ("upload_saving", "upload_saving_with_indices", "round_trip_saving")] == [
        "reproduced", "not reproduced", "not reproduced"]


def test_table_3_1s_dp_sgd_row_and_fig_3_5s_top_10_at_1000_clients_are_read(tmp_path):
    """Two results the ledger missed: Table 3.1's DP-SGD at 97 % (the re-run on the chapter's MLP: 0.923, not
    reproduced) and Fig. 3.5's 'LCDP-FL with 1,000 clients also reaches the highest accuracy' (top-10 % 0.9233
    against top-100 % 0.9229: a tie, inconclusive), both full mode only."""
    from helpers import assemble_committed_full

    claims = {c["key"]: c for c in assemble_committed_full("dpfl", tmp_path).claims}
    assert claims["dpsgd_value"]["value"] == pytest.approx(0.923 - 0.97)
    assert claims["dpsgd_value"]["outcome"] == "not reproduced" and "70,000 steps" in claims["dpsgd_value"]["detail"]
    tie = claims["lcdp_top10_best_1000"]
    assert tie["value"] == pytest.approx(0.9233 - 0.9229) and tie["outcome"] == "inconclusive"
    # §3.2.2.1's "reaches 96.31 %" is a final accuracy (Table 3.1's 96.3 % the maximum): 0.9552 after 52 rounds
    final = claims["proposed_final_value"]
    assert final["value"] == pytest.approx(0.9552 - 0.9631) and final["outcome"] == "inconclusive"


def test_the_cdp_accountant_binds_in_the_thesis_accounting_and_the_ldp_one_as_run(tmp_path):
    """§3.2.2.2: 'the FL always stops when the CDP accountant exceeds the privacy budget' (ε = 8 for both tracks).
    In the thesis's convention the LDP track has spent ε = 0.718 (100 clients, 11 rounds) and 0.488 (1,000 clients,
    54 rounds) when the CDP budget stops: reproduced. As run (one client's clipped uploads, noise σC/n_i) the LDP
    track's ε is above 4.9e5 after its first uploads: the LDP accountant would stop first, not reproduced."""
    from helpers import assemble_committed_full

    claims = {c["key"]: c for c in assemble_committed_full("dpfl", tmp_path).claims}
    key = "cdp_accountant_binds/{} clients, {}"
    for n, eps in (("100", 0.718), ("1,000", 0.488)):
        thesis, as_run = claims[key.format(n, "the thesis's convention")], claims[key.format(n, "as run")]
        assert thesis["value"] == pytest.approx(1 - eps / 8, abs=1e-3) and thesis["outcome"] == "reproduced"
        assert as_run["value"] < -4.9e5 / 8 and as_run["outcome"] == "not reproduced"
        assert "most frequent participant" in as_run["detail"] and "q = 1/M" in thesis["detail"]


def test_global_mgd_speeding_up_training_is_read_in_rounds(tmp_path):
    """§3.2.1's aim of Global-MGD, 'speed up the training process under the added noise', in rounds to plain LDP-FL's
    best accuracy. At σ = 8 (100 clients) + Global-MGD peaks at 0.9628, below plain's 0.9641 (round 52, the last
    the LDP budget allows): never under the budget, but within the target's sampling bound it gets there in round 39
    (+25 %): inconclusive; likewise with 1,000 clients. At our σ = 96 it reaches plain's peak (0.2753, round 4) in
    round 2, before both runs diverge: +50 %, reproduced."""
    from helpers import assemble_committed_full

    from fedlib.experiments.dpfl import FULL, SETTING_100, SETTING_1000, ldp_budget_rounds

    assert (ldp_budget_rounds(FULL, SETTING_100), ldp_budget_rounds(FULL, SETTING_1000)) == (52, 65)
    claims = {c["key"]: c for c in assemble_committed_full("dpfl", tmp_path).claims}
    for setting in ("σ = 8", "1,000 clients"):
        entry = claims[f"mgd_speeds_up/{setting}"]
        assert entry["value"] == -1.0 and entry["outcome"] == "inconclusive"
        assert "never under the budget" in entry["detail"]
    ours = claims["mgd_speeds_up/σ = 96 (ours)"]
    assert ours["value"] == pytest.approx(0.5) and ours["outcome"] == "reproduced"
    assert "reaches 0.2753 at round 4; the variant at round 2" in ours["detail"]


def test_the_theses_own_tables_measured_on_the_claims():
    from fedlib.ledger import paper_verdicts, unacknowledged

    own = dpfl.paper_values()
    # Table 3.1: the proposed LDP-FL 96.3 % against LDPFL's 95.36 % (100 clients); with 1,000 clients LDP-FL 97 %,
    # LCDP-FL 94.3 % and CDP-FL (quoted) 92 %
    assert own["beats_sun_ldpfl"] == pytest.approx(0.963 - 0.9536)
    assert own["lcdp_below_ldp_1000"] == pytest.approx(0.97 - 0.943)
    assert own["lcdp_beats_cdp_quoted/1,000 clients"] == pytest.approx(0.943 - 0.92)
    assert paper_verdicts(dpfl.LEDGER, own)["beats_sun_ldpfl"][1] == "inconclusive"  # 0.94 pp < the 1-pp margin
    assert not any("(ours)" in k for k in own)
    assert unacknowledged(dpfl.LEDGER, own) == []
