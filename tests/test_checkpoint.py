"""Checkpoints are reused only for the run that wrote them, and never run code (issue: nothing silently wrong)."""

import dataclasses
import pickle

import pytest
import torch

from fedlib.algorithms.decentralized import DecentralizedConfig, run_decentralized
from fedlib.checkpoint import CheckpointMismatch, CheckpointUnreadable, identity, load, save
from fedlib.fingerprint import describe, difference, fingerprint
from fedlib.fl import (
    Algorithm,
    CentralGaussian,
    ClipUpdate,
    GaussianNoise,
    LocalSGD,
    ServerOptimizer,
    TopK,
    run_federated,
)

from helpers import cfg, mlp


def dp(sigma=0.5, clip=1.0, rate=0.5, aggregator=None):
    return Algorithm(transforms=[ClipUpdate(clip), TopK(rate), GaussianNoise(sigma)],
                     aggregator=aggregator or CentralGaussian(0.0, bound=1e6), server=ServerOptimizer(momentum=0.5))


def test_a_checkpoint_of_a_finished_run_is_reused_for_the_same_run(small_fed, tmp_path):
    train, clients, test = small_fed
    ckpt = tmp_path / "run.pt"
    first = run_federated(mlp(), train, clients, test, cfg(), dp(), checkpoint=ckpt)
    again = run_federated(mlp(), train, clients, test, cfg(), dp(), checkpoint=ckpt)
    assert torch.equal(first.params, again.params) and first.metrics == again.metrics
    assert again.elapsed_s < first.elapsed_s  # read back, not re-trained


@pytest.mark.parametrize("change,what", [
    (dict(algorithm=dp(sigma=50.0)), r"noise_multiplier: 0.5 != 50.0"),
    (dict(algorithm=dp(clip=2.0)), "bound"),
    (dict(algorithm=dp(rate=0.1)), "rate"),
    (dict(algorithm=dp(aggregator=CentralGaussian(0.0, bound=1e5))), "aggregator"),
    (dict(model=mlp(seed=1)), "init"),
    (dict(clients="other"), "clients"),
    (dict(config=cfg(local=LocalSGD(1, 8))), "config.local"),
])
def test_every_ingredient_of_a_run_is_in_its_fingerprint(small_fed, tmp_path, change, what):
    """Reusing a checkpoint folder after changing σ, the clipping bound, top-k, the aggregator, W^0, the partition or
    the local training stops with a message naming what changed, instead of returning the old run's numbers."""
    train, clients, test = small_fed
    ckpt = tmp_path / "run.pt"
    run_federated(mlp(), train, clients, test, cfg(), dp(), checkpoint=ckpt)
    args = dict(model=mlp(), clients=clients, config=cfg(), algorithm=dp())
    args.update(change)
    if args["clients"] == "other":
        args["clients"] = [clients[(i + 1) % len(clients)] for i in range(len(clients))]
    with pytest.raises(CheckpointMismatch, match=what):
        run_federated(args["model"], train, args["clients"], test, args["config"], args["algorithm"], checkpoint=ckpt)


def test_other_data_is_another_run(small_fed, tmp_path):
    train, clients, test = small_fed
    ckpt = tmp_path / "run.pt"
    run_federated(mlp(), train, clients, test, cfg(), checkpoint=ckpt)
    scaled = dataclasses.replace(train, x=train.x * 2)
    with pytest.raises(CheckpointMismatch, match="train.x_sample"):
        run_federated(mlp(), scaled, clients, test, cfg(), checkpoint=ckpt)


def test_decentralized_checkpoints_check_sigma_too(small_fed, tmp_path):
    train, clients, test = small_fed
    base = DecentralizedConfig(protocol="pseudo_central", training_clients=4, rounds=2, local=LocalSGD(1, 16),
                               lr=0.1, bound=1.0, sigma=0.5, seed=0)
    ckpt = tmp_path / "dc.pt"
    run_decentralized(mlp(), train, clients, test, base, checkpoint=ckpt)
    with pytest.raises(CheckpointMismatch, match="config.sigma: 0.5 != 50.0"):
        run_decentralized(mlp(), train, clients, test, dataclasses.replace(base, sigma=50.0), checkpoint=ckpt)


class _Exploit:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('x')",))


def test_a_crafted_pickle_in_a_checkpoint_folder_is_refused(small_fed, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train, clients, test = small_fed
    ckpt = tmp_path / "run.pt"
    ckpt.write_bytes(pickle.dumps({"identity": _Exploit(), "state": {}}, protocol=2))
    with pytest.raises(CheckpointUnreadable, match="never unpickles code"):
        run_federated(mlp(), train, clients, test, cfg(), checkpoint=ckpt)
    assert not (tmp_path / "PWNED").exists()
    torch.save({"identity": _Exploit(), "state": {}}, ckpt)  # the same through torch.save's zip format
    with pytest.raises(CheckpointUnreadable):
        load(ckpt, identity(x=1))
    assert not (tmp_path / "PWNED").exists()


def test_save_is_atomic_and_load_checks_identity(tmp_path):
    path = tmp_path / "c.pt"
    save(path, identity(a=1), {"x": torch.ones(2)})
    assert torch.equal(load(path, identity(a=1))["x"], torch.ones(2))
    assert not list(tmp_path.glob("*.tmp"))
    with pytest.raises(CheckpointMismatch, match="a: 1 != 2"):
        load(path, identity(a=2))
    assert load(tmp_path / "none.pt", identity(a=1)) is None


def test_fingerprints_separate_what_differs_and_only_that():
    assert fingerprint(dp()) == fingerprint(dp())
    assert fingerprint(dp()) != fingerprint(dp(sigma=0.6))
    assert fingerprint(torch.zeros(3)) != fingerprint(torch.zeros(4)) != fingerprint(torch.ones(3))
    assert fingerprint(lambda x: x + 1) == fingerprint(lambda x: x + 1)  # same code location and captures
    sigma = 2.0
    assert "2.0" in str(describe(lambda: sigma))  # captured values count
    assert difference(describe({"a": [1, 2]}), describe({"a": [1, 3]})) == "a[1]: 2 != 3"
    assert difference(describe(dp()), describe(dp())) is None


def test_a_resumed_unit_records_the_time_of_every_call_not_only_the_last(small_fed, tmp_path):
    """A unit resumed from a checkpoint took its earlier calls' time too: the checkpoint keeps the seconds spent up
    to it (``elapsed_s``) and the unit file records them in its ``elapsed_s`` (and as ``resumed_s``), while the
    run's own ``elapsed_s`` stays this call's."""
    from fedlib.units import Units, load_unit, unit_filename

    train, clients, test = small_fed
    ckpt = tmp_path / "run.pt"

    def stop(completed, row):
        if completed == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_federated(mlp(), train, clients, test, cfg(), dp(), checkpoint=ckpt, callback=stop)
    saved = torch.load(ckpt, weights_only=True)
    assert saved["state"]["round"] == 2 and saved["state"]["elapsed_s"] > 0
    saved["state"]["elapsed_s"] = 1000.0  # as if the first call had taken 1,000 s
    save(ckpt, saved["identity"], saved["state"])
    units = Units("fednore", "full", 0, folder=tmp_path / "units")
    result = units.run("u", {"x": 1}, lambda: {
        "elapsed_s": run_federated(mlp(), train, clients, test, cfg(), dp(), checkpoint=ckpt).elapsed_s})
    unit = load_unit(tmp_path / "units" / unit_filename("u"))
    assert result["elapsed_s"] < 1000 and unit["resumed_s"] == 1000.0
    assert unit["elapsed_s"] == pytest.approx(1000.0 + result["elapsed_s"], abs=1.0)
    fresh = Units("fednore", "full", 0, folder=tmp_path / "units").run("v", {"x": 2}, lambda: {"y": 0})
    assert fresh == {"y": 0} and "resumed_s" not in load_unit(tmp_path / "units" / unit_filename("v"))
