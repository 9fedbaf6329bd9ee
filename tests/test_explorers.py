"""The book's explorers: they build, draw their static figures, and react to their controls."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from fedlib.explorers import dp_calculator, epsilon_figure, leakage_explorer, leakage_figure
from fedlib.privacy.accountant import epsilon_curve
from fedlib.results import Results

matplotlib.use("Agg")


def test_dp_calculator_computes_and_calibrates():
    box = dp_calculator(sigma=1.0, sample_rate=0.01, rounds=100, delta=1e-5)
    s, q = box.children[0].children
    t, d = box.children[1].children
    target, solve = box.children[2].children
    target.value = 2.0
    solve.click()  # σ for ε = 2 after 100 rounds at q = 0.01
    eps = epsilon_curve(noise_multiplier=s.value, sample_rate=q.value, steps=t.value, delta=d.value)[-1]
    assert eps <= 2.0 and eps > 1.9
    assert epsilon_figure(rounds=50).axes[0].get_yscale() == "log"


def fake_attacks() -> Results:
    """Hand-made images (test data only)."""
    res = Results("privacy_eval", "quick", 0, {})
    rng = np.random.default_rng(0)
    res.add_images("truth", rng.random((3, 3, 4, 4)))
    for c, s in ((1.0, 0.01), (1.0, 0.1), ("median", 0.01)):
        res.add_images(f"cosine, one-round, round 1, C = {c}, σ = {s:g}", rng.random((3, 3, 4, 4)))
    res.add_table("T4.1", "t", [{"sigma": 0.01, "C": 1.0, "paper": 20.0, "ours": 18.5}])
    return res


def test_leakage_explorer_browses_stored_attacks():
    res = fake_attacks()
    fig = leakage_figure(res, "1.0", "0.01")
    assert "PSNR 18.50 dB" in fig._suptitle.get_text() and len(fig.axes) == 6
    box = leakage_explorer(res)
    c, s = box.children[0].children
    assert list(c.options) == ["1.0", "median"] and list(s.options) == ["0.01", "0.1"]
    s.value = "0.1"  # redraws without error
    with pytest.raises(ValueError, match="no stored reconstructions"):
        leakage_explorer(Results("privacy_eval", "quick", 0, {}))


def test_leakage_figure_defaults_to_the_first_stored_attack():
    fig = leakage_figure(fake_attacks())
    assert "C = 1.0, σ = 0.01" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="no stored attack"):
        leakage_figure(fake_attacks(), "7", "0.5")


def test_headless_builds_skip_the_live_widgets(monkeypatch, capsys):
    monkeypatch.setenv("FEDLIB_HEADLESS", "1")
    assert dp_calculator() is None and leakage_explorer(fake_attacks()) is None
    assert "JupyterLab or Colab" in capsys.readouterr().out
