import json
import math

import pytest

from fedlib.ledger import Claim
from fedlib.results import Results, cpu_model, environment, load_results, table_markdown


def test_roundtrip_and_schema(tmp_path):
    res = Results("foundations", "quick", 3, {"rounds": 2})
    res.add_table("T1", "a table", [{"setting": "a", "paper": 0.97, "ours": 0.95}, {"setting": "b", "ours": math.nan}])
    claim = Claim("c1", "it works", "T1", "acc(b) - acc(a)", ">")
    res.measure(claim, 0.05)
    res.evaluate([claim])
    res.add_series("acc", [1, 2], [0.5, 0.7])
    path = res.save(tmp_path)
    assert path == tmp_path / "quick" / "foundations.json"
    raw = json.loads(path.read_text())
    assert set(raw) >= {"chapter", "mode", "seed", "config", "elapsed_s", "tables", "claims"}
    assert raw["tables"]["T1"]["rows"][1]["ours"] is None  # NaN is stored as null, valid JSON
    back = load_results("foundations", "quick", tmp_path)
    assert back.claim("c1")["outcome"] == "reproduced" and back.series["acc"]["y"] == [0.5, 0.7]
    assert "| a | 0.97 | 0.95 |" in table_markdown(back, "T1")


def test_the_environment_names_the_cpu_and_its_kernels():
    """Trained numbers differ between CPUs whose kernels round differently, so a results file says which CPU."""
    import torch

    env = environment()
    assert env["cpu_model"] == cpu_model() and env["cpu_model"].strip()
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability() != ""


def test_bad_chapter_mode_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="chapter"):
        Results("chapter9", "quick", 0, {})
    with pytest.raises(ValueError, match="mode"):
        Results("foundations", "medium", 0, {})
    with pytest.raises(FileNotFoundError, match="python -m fedlib run foundations"):
        load_results("foundations", "full", tmp_path)


def test_html_tables_escape():
    from fedlib.results import table_html

    res = Results("foundations", "quick", 0, {})
    res.add_table("T", "a < b", [{"setting": "<x>", "paper": 1.0, "ours": None}])
    out = table_html(res, "T")
    assert "&lt;x&gt;" in out and "<td>–</td>" in out and "a &lt; b" in out
    assert "<details" not in out


def test_long_html_tables_come_folded_with_their_name_and_row_count():
    from fedlib.results import table_html

    res = Results("sifu", "quick", 0, {})
    res.add_table("F2", "rounds", [{"request": r} for r in range(25)])
    folded = table_html(res, "F2")
    assert folded.startswith('<details class="fedlib-fold"><summary>F2: rounds (25 rows')
    assert folded.count("<tr>") == 26 and folded.endswith("</details>")
    assert "<details" not in table_html(res, "F2", fold_after=25)


def test_plot_table_plots_sorted_columns_of_matching_rows():
    import matplotlib

    matplotlib.use("Agg")
    from fedlib.plotting import plot_table

    res = Results("fednore", "quick", 0, {})
    res.add_table("s", "sweep", [{"t": "a", "x": 2, "y": 0.5, "z": None}, {"t": "a", "x": 1, "y": 0.7, "z": 0.1},
                                 {"t": "b", "x": 3, "y": 0.9, "z": 0.2}])
    ax = plot_table(res, "s", "x", {"y": "Y", "z": "Z"}, where={"t": "a"})
    (y_line, z_line) = ax.get_lines()
    assert list(y_line.get_xdata()) == [1, 2] and list(y_line.get_ydata()) == [0.7, 0.5]
    assert list(z_line.get_xdata()) == [1] and [t.get_text() for t in ax.get_legend().get_texts()] == ["Y", "Z"]


def test_images_are_stored_beside_the_json_as_uint8(tmp_path):
    import numpy as np

    res = Results("privacy_eval", "quick", 0, {})
    img = np.zeros((2, 3, 4, 4), dtype=np.float32)
    img[1] = 1.0
    img[0, 0, 0, 0] = 2.0  # clipped to 1
    res.add_images("recon", img)
    res.save(tmp_path)
    assert "images" not in json.loads((tmp_path / "quick" / "privacy_eval.json").read_text())
    back = load_results("privacy_eval", "quick", tmp_path)
    assert back.images["recon"].shape == (2, 4, 4, 3) and back.images["recon"].dtype == np.uint8
    assert back.images["recon"][0, 0, 0, 0] == 255 and back.images["recon"][1].min() == 255
    with pytest.raises(ValueError, match="N, C, H, W"):
        res.add_images("bad", np.zeros((3, 4, 4)))


def test_image_grid_has_one_row_per_batch():
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    from fedlib.plotting import image_grid

    res = Results("privacy_eval", "quick", 0, {})
    res.add_images("a", np.random.rand(5, 3, 8, 8))
    res.add_images("b", np.random.rand(5, 3, 8, 8))
    fig = image_grid(res, ["a", "b"], labels=["truth", "σ = 1"], columns=4)
    assert len(fig.axes) == 8 and fig.axes[4].get_ylabel() == "σ = 1"
    with pytest.raises(ValueError, match="labels"):
        image_grid(res, ["a", "b"], labels=["x"])


def test_html_tables_show_booleans_as_marks_and_three_significant_digits():
    from fedlib.results import format_number, rows_html

    out = rows_html("T", [{"ok": True, "bad": False, "acc": 0.8475, "eps": 5.981e-05, "s": 1362.2, "n": 3}])
    assert "<td>✓</td><td>✗</td><td>0.848</td><td>5.98e-05</td><td>1,362</td><td>3</td>" in out
    assert [format_number(v) for v in (0.847, 999.7, 12.71, 0.0, float("nan"), 1e8)] == \
        ["0.847", "1,000", "12.7", "0", "nan", "1e+08"]


def test_column_headers_are_words_or_the_sources_symbols():
    from fedlib.results import rows_html

    out = rows_html("T", [{"sigma": 1.0, "noise_over_update_mean_of_m": 2.0, "m_tcs": 3, "rounds_paper": 52}])
    assert "<th>σ</th><th>noise / update (mean of m)</th><th>m_tcs</th><th>rounds (paper)</th>" in out


def test_panels_fit_the_column_and_keep_the_axes_shape_of_subplots():
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    from fedlib.plotting import COLUMN_IN, image_grid, panels

    fig, axes = panels(1, 3, sharey=True)  # wrapped over two rows, returned as plt.subplots(1, 3) would
    assert axes.shape == (3,) and len(fig.axes) == 3
    assert fig.get_figwidth() == COLUMN_IN and fig.get_figheight() > 3.6
    fig, axes = panels(1, 3, squeeze=False)
    assert axes.shape == (1, 3) and len({id(a) for a in axes[0]}) == 3
    fig, ax = panels()
    assert fig.get_size_inches().tolist() == [COLUMN_IN, 3.6] and hasattr(ax, "plot")
    with pytest.raises(ValueError, match="row_height instead of figsize"):
        panels(1, 2, figsize=(12, 4))
    res = Results("privacy_eval", "quick", 0, {})
    res.add_images("a", np.random.rand(10, 3, 8, 8))
    assert image_grid(res, ["a"], columns=10).get_figwidth() <= COLUMN_IN + 1e-9  # 10 images still fit the column


@pytest.mark.parametrize("chapter", ["foundations", "dpfl", "fednore", "privacy_eval", "adpdfl", "sifu",
                                     "deniability", "flz", "audit"])
def test_committed_full_verdicts_are_the_current_rules_applied_to_their_measured_values(chapter):
    """A committed full run's verdicts must be what today's ledger gives its own measured values: a unit process
    that loaded older code (on 2026-12-01 one without the test-set sampling bound) rewrites the chapter's file with
    the old rules, and only re-assembling (`python -m fedlib run CHAPTER --mode full --units 0`) mends it."""
    from pathlib import Path

    from fedlib.experiments import chapter_module
    from fedlib.ledger import evaluate

    path = Path(__file__).resolve().parents[1] / "results" / "full" / f"{chapter}.json"
    if not path.exists():
        pytest.skip(f"no committed full run of {chapter}")
    committed = json.loads(path.read_text())
    fresh = evaluate(chapter_module(chapter).LEDGER, committed["measured"], "full")
    stale = [(c["key"], c["outcome"], f["outcome"]) for c, f in zip(committed["claims"], fresh)
             if (c["key"], c["outcome"]) != (f["key"], f["outcome"])]
    assert not stale, f"{chapter}: re-assemble it; committed vs current rules: {stale[:5]}"


@pytest.mark.parametrize("chapter", ["foundations", "dpfl", "fednore", "privacy_eval", "adpdfl", "sifu",
                                     "deniability", "flz", "audit"])
def test_every_decisive_full_accuracy_verdict_carries_its_sampling_bound(chapter):
    """A full-mode accuracy is read off a finite test set (or a few seeds): a 'reproduced' or 'not reproduced' on
    it is only a verdict once it clears the margin by that sampling too. Every decisive accuracy claim of a committed
    full run must record what its bound is computed from (the accuracies and test set, the per-seed samples, or the
    value at the ends of the bound); until 2026-12-06 thirteen (ADPDFL's and FLZ's distances to the paper's tables,
    Foundations' local against central DP) and deniability's sudden drops recorded none."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "results" / "full" / f"{chapter}.json"
    if not path.exists():
        pytest.skip(f"no committed full run of {chapter}")
    committed = json.loads(path.read_text())
    bare = [c["key"] for c in committed["claims"] if c["unit"] == "accuracy" and c["outcome"] in
            ("reproduced", "not reproduced") and not {"sampling", "samples", "interval"} &
            set(committed["measured"].get(c["key"], {}))]
    assert not bare, f"{chapter}: decisive accuracy verdicts without a sampling bound: {bare}"
