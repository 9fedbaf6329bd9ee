"""The book's explorers: they build, draw their static figures, and react to their controls."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

import dataclasses

from fedlib.experiments.sifu import Setup, SIFUConfig, UnlearningLab
from fedlib.explorers import (
    dp_calculator,
    epsilon_figure,
    forgotten_class_figure,
    leakage_explorer,
    leakage_figure,
    unlearning_explorer,
)
from fedlib.privacy.accountant import epsilon_curve
from fedlib.results import Results

matplotlib.use("Agg")
PNG = '<img src="data:image/png;base64,'  # how the explorers draw a figure into their HTML widget


def test_dp_calculator_computes_and_calibrates():
    box = dp_calculator(sigma=1.0, sample_rate=0.01, rounds=100, delta=1e-5)
    s, q = box.children[0].children
    t, d = box.children[1].children
    target, solve = box.children[2].children
    text, image = box.children[3:]
    before = image.value
    assert before.startswith(PNG) and "after 100 rounds" in text.value
    target.value = 2.0
    solve.click()  # σ for ε = 2 after 100 rounds at q = 0.01
    eps = epsilon_curve(noise_multiplier=s.value, sample_rate=q.value, steps=t.value, delta=d.value)[-1]
    assert eps <= 2.0 and eps > 1.9
    assert f"ε = {eps:.4g}" in text.value and image.value != before  # one redraw, replacing the old figure
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
    text, image = box.children[1:]
    before = image.value
    s.value = "0.1"
    assert image.value.startswith(PNG) and image.value != before and text.value == ""
    c.value = "median"  # no attack stored at (median, 0.1): says so, keeps the last figure
    assert "no stored attack" in text.value and image.value
    with pytest.raises(ValueError, match="no stored reconstructions"):
        leakage_explorer(Results("privacy_eval", "quick", 0, {}))


def test_leakage_figure_defaults_to_the_first_stored_attack():
    fig = leakage_figure(fake_attacks())
    assert "C = 1.0, σ = 0.01" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="no stored attack"):
        leakage_figure(fake_attacks(), "7", "0.5")


#: a small SIFU federation on real MNIST (20 clients × 20 samples) so that the lab trains in about a second
TINY = SIFUConfig(setups=(Setup("mnist", "logreg", num_clients=20, samples=20, batch_size=20, local_steps=2,
                                target=0.6),), min_rounds=3, max_rounds=30)


def tiny_sifu_results() -> Results:
    res = Results("sifu", "quick", 0, dataclasses.asdict(TINY))
    res.add_table("F6_mnist", "t", [{"class": k, "scheme": s, "paper": "", "ours": 10 + k, "acc_forgotten": 0.1 * k}
                              for k in (0, 1) for s in ("SCRATCH", "SIFU", "FINE-TUNING")])
    return res


def test_unlearning_lab_serves_one_request_with_every_scheme(mnist):
    lab = UnlearningLab.from_results(tiny_sifu_results())
    assert lab.training.rounds >= 3
    rows = {r["scheme"]: r for r in lab.forget([3, 13])}  # both clients of class 3
    assert list(rows) == [*UnlearningLab.SCHEMES, "control: remembers", "control: forgot"]
    assert rows["SCRATCH"]["relative_kl"] == 0 and rows["SCRATCH"]["restart_round"] == 0
    assert rows["control: forgot"]["relative_kl"] == 1 and rows["control: forgot"]["rounds"] is None
    # the model trained with class 3 knows it; the retraining at another seed never saw it
    assert rows["control: remembers"]["acc_forgotten"] > 0.5 and rows["control: forgot"]["acc_forgotten"] < 0.05
    assert rows["SCRATCH"]["acc_forgotten"] < 0.05  # a linear model never trained on class 3 never predicts it
    assert rows["FINE-TUNING"]["restart_round"] == lab.training.rounds
    assert all(0 <= rows[s]["acc_remaining"] <= 1 and rows[s]["rounds"] >= 1 for s in UnlearningLab.SCHEMES)
    again = lab.forget([3, 13], ("SIFU",))
    assert again == [rows["SIFU"], rows["control: remembers"], rows["control: forgot"]]  # deterministic
    with pytest.raises(ValueError, match="schemes must be"):
        lab.forget([3], ("RETRAIN",))
    with pytest.raises(ValueError, match="not \\(or no longer\\) trained on"):
        lab.forget([99])
    with pytest.raises(ValueError, match="sifu chapter"):
        UnlearningLab.from_results(fake_attacks())


def test_unlearning_explorer_serves_the_chosen_request(mnist):
    fig = forgotten_class_figure(tiny_sifu_results())
    assert len(fig.axes) == 2 and [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0", "1"]
    # bars scheme by scheme, class 0 then 1: rounds (F6's "ours") left, accuracy on the forgotten clients right
    assert [p.get_height() for p in fig.axes[0].patches] == [10, 11] * 3
    assert [p.get_height() for p in fig.axes[1].patches] == pytest.approx([0.0, 0.1] * 3)
    box = unlearning_explorer(tiny_sifu_results(), progress=False)
    forget, schemes = box.children[0].children
    go, image, table = box.children[1:]
    assert forget.value == (0, 10) and len(forget.options) == 10 + 20
    assert "the 2 clients of class 0" in table.value and "FEDERASER" in table.value
    forget.value = (5,)
    schemes.value = ("SCRATCH", "SIFU")
    go.click()
    assert "client 5 alone" in table.value and "SIFU" in table.value and "FEDERASER" not in table.value
    assert image.value.startswith(PNG)
    schemes.value = ()
    go.click()  # nothing selected: the reason replaces the table, the button works again
    assert "Cannot serve this request" in table.value and "schemes must be" in table.value and not go.disabled


def test_headless_builds_skip_the_live_widgets(monkeypatch, capsys):
    monkeypatch.setenv("FEDLIB_HEADLESS", "1")
    assert dp_calculator() is None and leakage_explorer(fake_attacks()) is None
    assert unlearning_explorer(tiny_sifu_results()) is None
    assert "JupyterLab or Colab" in capsys.readouterr().out
