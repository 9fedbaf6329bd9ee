"""The DPFL chapter's experiment: resuming from checkpoints, bad input."""

import dataclasses

import pytest

from fedlib.algorithms.dpsgd import DPSGDConfig
from fedlib.experiments import dpfl, run_chapter

TINY = dataclasses.replace(dpfl.QUICK, ldp_max_rounds=1, lcdp_max_rounds=1, betas=(0.5,), sigma_sweep=(),
                           top_rates=(0.01, 0.1), curve_rounds=3,
                           dpsgd=DPSGDConfig(epochs=1, batch_size=6000, lr=0.1, clip=4.0, noise_multiplier=1.1))


def test_an_interrupted_chapter_resumes_from_its_checkpoints(tmp_path):
    res = dpfl.run(TINY, seed=0, checkpoints=tmp_path / "ckpt")
    files = sorted((tmp_path / "ckpt").rglob("*.pt"))
    assert len(files) == len(res.tables["ablation"]["rows"])  # one checkpoint per training run
    stamps = [f.stat().st_mtime_ns for f in files]
    again = dpfl.run(TINY, seed=0, checkpoints=tmp_path / "ckpt")
    assert [f.stat().st_mtime_ns for f in files] == stamps  # every run was read back, none re-trained
    assert again.tables["ablation"] == res.tables["ablation"] and again.series == res.series


def test_a_chapter_without_checkpoint_support_says_so(tmp_path):
    with pytest.raises(ValueError, match="does not support checkpoints"):
        run_chapter("foundations", "quick", out=tmp_path, checkpoints=tmp_path)

