"""Full-mode units: computed once, read back by identity, within a budget; planning computes nothing."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from fedlib.units import (Budget, Estimate, UnitFileError, Units, default_folder, estimate_left, load_unit,
                          unit_filename)


def test_a_unit_is_computed_once_and_read_back(tmp_path):
    calls = []
    compute = lambda: calls.append(1) or {"acc": 0.5}  # noqa: E731
    first = Units("dpfl", "full", 0, folder=tmp_path)
    assert first.run("a/b", {"sigma": 8}, compute) == {"acc": 0.5}
    again = Units("dpfl", "full", 0, folder=tmp_path)
    assert again.run("a/b", {"sigma": 8}, compute) == {"acc": 0.5}
    assert len(calls) == 1 and again.state == {"a/b": "done"}
    other = Units("dpfl", "full", 0, folder=tmp_path)  # another spec: the old file is not reused
    assert other.run("a/b", {"sigma": 9}, lambda: {"acc": 0.1}) == {"acc": 0.1}
    assert load_unit(tmp_path / unit_filename("a/b"))["result"] == {"acc": 0.1}
    assert other.run("a/b", {"sigma": 9}, compute) == {"acc": 0.1} and len(calls) == 1  # same spec: same result
    with pytest.raises(ValueError, match="twice with different specs"):
        other.run("a/b", {"sigma": 10}, compute)


def test_a_unit_that_diverged_is_listed_as_stopped_early_computed_or_read_back(tmp_path):
    for _ in range(2):
        units = Units("fednore", "full", 0, folder=tmp_path)
        units.run("cnn/LR 1", {"lr": 1}, lambda: {"diverged": True, "rounds_completed": 1})
        units.run("cnn/LR 0.1", {"lr": 0.1}, lambda: {"diverged": False, "rounds_completed": 52})
        assert units.summary()["stopped_early"] == ["cnn/LR 1"]


def test_budget_and_plan_compute_nothing_beyond_their_limit(tmp_path):
    units = Units("sifu", "full", 0, folder=tmp_path, budget=Budget(units=1))
    assert units.run("u1", 1, lambda: {"x": 1}) == {"x": 1}
    assert units.run("u2", 2, lambda: {"x": 2}) is None  # budget spent: not run, no file
    assert not (tmp_path / "u2.json").exists()
    plan = Units("sifu", "full", 0, folder=tmp_path, plan_only=True)
    assert plan.run("u1", 1, lambda: 1 / 0) == {"x": 1} and plan.run("u2", 2, lambda: 1 / 0) is None
    plan.block("cifar10/*", "needs the full CIFAR-100")
    s = plan.summary()
    assert (s["done"], s["not_run"], s["total"], s["missing"]) == (1, 1, 3, ["u2"])
    assert s["blocked"] == {"cifar10/*": "needs the full CIFAR-100"}
    assert estimate_left(s) == Estimate(0.0, 0, 1)  # "u2" shares no leading word with "u1": not guessed
    assert not Budget(seconds=0).allows()
    with pytest.raises(ValueError, match="units"):
        Budget(units=-1)


def test_the_estimate_prices_a_missing_unit_by_the_finished_units_most_like_it():
    seconds = {"mnist/seed0/F2": 100.0, "mnist/seed1/F2": 300.0, "mnist/seed0/F3": 3000.0, "cifar-x": float("nan")}
    summary = {"seconds": seconds, "missing": ["mnist/seed7/F3", "mnist/seed7/F2", "mnist/seed7/F9", "cifar10/seed0/F2"]}
    est = estimate_left(summary)
    # F3 at its own kind (seeds do not count), F2 at the mean of the F2 seeds, F9 at every mnist unit's mean;
    # no finished unit starts like cifar10 (the NaN one is unmeasured), so it is not guessed
    assert est == Estimate(3000 + 200 + 3400 / 3, 3, 1)
    assert est.text() == f"{est.seconds / 3600:.1f} h + 1 unit of unmeasured kinds"
    assert estimate_left({"seconds": {}, "missing": ["a"]}).text() == "? (1 unit of unmeasured kinds)"
    assert estimate_left({"seconds": seconds, "missing": []}).text() == "–"
    # the method, not the setting named before it, decides the cost: Fed-nore-1 at σ = 12 costs what it cost at
    # σ = 10, not what Fed-nore-2 at σ = 12 cost when it diverged in round 1 (a common prefix alone said 8 s)
    fednore = {"mlp/σ = 10: Fed-nore-1, λ1 = 1": 3593.0, "mlp/σ = 12: Fed-nore-2 margin, λ2 = 200": 8.0,
               "mlp/σ = 12: plain DPFL": 342.0}
    assert estimate_left({"seconds": fednore, "missing": ["mlp/σ = 12: Fed-nore-1, λ1 = 1"]}) == Estimate(3593.0, 1, 0)
    # a unit that diverged and stopped early prices nothing while a unit that ran its course shares the first token
    cnn = {"cnn/LR 1: plain DPFL": 225.0, "cnn/plain DPFL": 4707.0, "gpu/x": 1.0}
    stopped = {"seconds": cnn, "stopped_early": ["cnn/LR 1: plain DPFL", "gpu/x"],
               "missing": ["cnn/LR 0.01: plain DPFL", "gpu/y"]}
    assert estimate_left(stopped) == Estimate(4707.0 + 1.0, 2, 0)  # gpu/y: only a stopped unit is like it
    assert estimate_left({**stopped, "stopped_early": []}) == Estimate(225.0 + 1.0, 2, 0)
    # equal shares: the longer common prefix decides (round 10's attack costs what round 10 cost)
    attack = {"attack/cosine/all-round/round10/part1": 75.0, "attack/cosine/all-round/round5/part2": 45.0}
    assert estimate_left({"seconds": attack, "missing": ["attack/cosine/all-round/round10/part2"]}) == \
        Estimate(75.0, 1, 0)


def test_the_estimate_prices_from_units_computed_on_the_device_asked_for(tmp_path):
    seconds = {"attack/round1/part1": 1300.0, "attack/round1/part2": 30.0}
    summary = {"seconds": seconds, "devices": {"attack/round1/part2": "cuda"}, "missing": ["attack/round1/part3"]}
    assert estimate_left(summary) == Estimate(1300.0, 1, 0)  # a unit file without a device ran on the CPU
    assert estimate_left(summary, "cuda") == Estimate(30.0, 1, 0)
    assert estimate_left({**summary, "devices": {u: "cuda" for u in seconds}}) == Estimate(0.0, 0, 1)
    # a kind only the GPU ran is priced on the CPU by the GPU's ratio to the CPU's nearest kind (3 x 1,300 s)
    gpu = {"attack/one-round/round5": 30.0, "attack/all-round/round15/part1": 80.0,
           "attack/all-round/round15/part2": 100.0}
    scaled = {"seconds": {"attack/one-round/round1": 1300.0, **gpu}, "devices": {u: "cuda" for u in gpu},
              "missing": ["attack/all-round/round15/part3", "attack/one-round/round1/part2"]}
    assert estimate_left(scaled) == Estimate(1300.0 * 3 + 1300.0, 2, 0)  # the CPU's own kind is not scaled
    assert estimate_left(scaled, "cuda") == Estimate(90.0 + 30.0, 2, 0)
    units = Units("sifu", "full", 0, folder=tmp_path)
    units.run("u1", 1, lambda: {"x": 1})
    stored = load_unit(tmp_path / "u1.json")
    assert stored["environment"]["device"] in ("cpu", "cuda")
    assert Units("sifu", "full", 0, folder=tmp_path).summary()["devices"] == {}
    again = Units("sifu", "full", 0, folder=tmp_path)
    again.run("u1", 1, lambda: 1 / 0)
    assert again.summary()["devices"] == {"u1": stored["environment"]["device"]}


def test_only_computes_the_selected_units(tmp_path):
    units = Units("privacy_eval", "full", 0, folder=tmp_path, budget=Budget(only=("attack/*/one-round/*", "mechanism")))
    assert units.run("attack/cosine/one-round/round1", 1, lambda: {"x": 1}) == {"x": 1}
    assert units.run("mechanism", 2, lambda: {"x": 2}) == {"x": 2}
    assert units.run("attack/cosine/all-round/round5", 3, lambda: 1 / 0) is None  # not selected: not run, no file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attack_cosine_one-round_round1.json", "mechanism.json"]
    assert units.summary()["missing"] == ["attack/cosine/all-round/round5"]
    for bad in ("mechanism", (), ("",)):
        with pytest.raises(ValueError, match="only must be"):
            Budget(only=bad)


def test_a_run_assembles_the_units_another_run_finished_meanwhile(tmp_path, monkeypatch):
    import fedlib.experiments as experiments
    from fedlib.results import Results, load_results

    folder = default_folder("sifu", "full", tmp_path)

    def compute_a():  # meanwhile a second process on the same results root finishes "b", and "c" for another spec
        other = Units("sifu", "full", 0, folder=folder)
        other.run("b", 2, lambda: {"x": 2})
        other.run("c", 99, lambda: {"x": 99})
        return {"x": 1}

    def run(config, *, mode, seed, progress, units):
        b = units.run("b", 2, lambda: 1 / 0)  # not selected: "not run" when asked
        c = units.run("c", 3, lambda: 1 / 0)
        a = units.run("a", 1, compute_a)
        res = Results("sifu", mode, seed, {})
        res.add_table("t", "the units", [{"a": a, "b": b, "c": c}])
        return res

    monkeypatch.setattr(experiments, "chapter_module", lambda chapter: SimpleNamespace(QUICK=0, FULL=1, run=run))
    results = experiments.run_chapter("sifu", "full", out=tmp_path, budget=Budget(only=("a",)))
    assert results.tables["t"]["rows"] == [{"a": {"x": 1}, "b": {"x": 2}, "c": None}]  # c's file: another spec
    assert (results.units["done"], results.units["computed"], results.units["missing"]) == (2, 1, ["c"])
    assert load_results("sifu", "full", tmp_path).tables == results.tables


def test_unit_files_are_checked(tmp_path):
    Units("flz", "full", 0, folder=tmp_path).run("x", 0, lambda: {"v": 1})
    path = tmp_path / "x.json"
    data = json.loads(path.read_text())
    (tmp_path / "y.json").write_text(json.dumps(data))  # a unit file under another unit's name
    with pytest.raises(UnitFileError, match="holds unit 'x'"):
        load_unit(tmp_path / "y.json")
    path.write_text("{ not json")
    with pytest.raises(UnitFileError, match="unreadable"):
        load_unit(path)


COMMITTED = sorted(p.parent.name for p in (Path(__file__).resolve().parents[1] / "results" / "full")
                   .glob("*/units"))


@pytest.mark.parametrize("chapter", COMMITTED)
def test_every_committed_unit_file_loads_matches_the_code_and_is_used(chapter):
    """A committed full-mode unit is only worth its file if today's code would read it back: planning the full run
    (nothing computed) finds every unit file done, and no unit file is left over."""
    from fedlib.experiments import run_chapter
    from fedlib.units import default_folder

    root = Path(__file__).resolve().parents[1] / "results"
    files = sorted(default_folder(chapter, "full", root).glob("*.json"))
    units = {load_unit(f)["unit"]: f for f in files}
    assert len(units) == len(files)
    plan = run_chapter(chapter, "full", out=root, plan_only=True).units
    assert plan["done"] == len(files), f"{len(files) - plan['done']} unit file(s) no longer match the code: " \
                                       f"{[u for u in plan['missing'] if unit_filename(u) in {f.name for f in files}]}"
    assert all(unit_filename(u) in {f.name for f in files} for u in units)


def test_full_mode_blocks_the_units_of_a_missing_dataset_and_quick_mode_stops(tmp_path, monkeypatch):
    """A data root without CIFAR-10 (offline): full mode lists CIFAR-10's units as blocked, with the reason, and
    plans the MNIST ones; quick mode, one piece, stops with the loader's error."""
    from torchvision import datasets as tv

    from fedlib.data import DatasetNotFoundError, data_root
    from fedlib.experiments import adpdfl, privacy_eval

    def no_network(self, *args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(tv.CIFAR10, "download", no_network)
    (tmp_path / "MNIST").symlink_to(data_root() / "MNIST")
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path))
    units = Units("adpdfl", "full", 0, plan_only=True)
    adpdfl.run(adpdfl.FULL, mode="full", units=units)
    assert "network is unreachable" in units.blocked["cifar10/*"]
    assert units.state["cifar10/*"].startswith("blocked: ")
    assert any(u.startswith("mnist-") and s in ("done", "not run") for u, s in units.state.items())
    assert not any(u.startswith("cifar10-") for u in units.state)
    assert privacy_eval._check_f47_data("full").startswith("Fig. 4.7: ")
    with pytest.raises(DatasetNotFoundError, match="network is unreachable"):
        privacy_eval._check_f47_data("quick")


def test_compare_units_reports_the_largest_difference_per_entry_and_refuses_two_units(tmp_path):
    from scripts.compare_units import compare

    units = Units("privacy_eval", "full", 0, folder=tmp_path)
    units.run("attack/a", 1, lambda: {"s1": {"psnr": 20.0, "images": "xx"}, "s2": {"psnr": 10.0, "ok": True}})
    units.run("attack/b", 2, lambda: {"s1": {"psnr": 20.0}})
    a = load_unit(tmp_path / "attack_a.json")
    b = json.loads(json.dumps(a))
    b["result"]["s2"]["psnr"] = 10.25
    b["result"]["s1"]["extra"] = 1.0
    out = compare(a, b)
    assert out["max_abs_diff_by_entry"] == {"s1": 0.0, "s2": 0.25} and out["max_abs_diff_by_name"] == {"psnr": 0.25}
    assert (out["values"], out["only_in_one"]) == (2, 1)  # strings and bools are not compared
    with pytest.raises(SystemExit, match="different units"):
        compare(a, load_unit(tmp_path / "attack_b.json"))


def test_a_full_run_blocked_by_missing_data_leaves_a_fuller_results_file_as_it_is(tmp_path, monkeypatch):
    """FEDLIB_DATA unset or wrong: a full run blocks every setting at once; written over the committed results file
    it would show the finished units as "not run yet". It stops with a message naming the blocked data and both
    counts, and the file stays as it was."""
    from torchvision import datasets as tv

    from fedlib.experiments import run_chapter

    monkeypatch.setattr(tv.MNIST, "download", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    monkeypatch.setenv("FEDLIB_DATA", str(tmp_path / "empty"))
    path = tmp_path / "full" / "fednore.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"chapter": "fednore", "mode": "full", "units": {"done": 42}}))
    with pytest.raises(ValueError, match=r"assembles 0 finished unit\(s\) where .* has 42; that file was left"):
        run_chapter("fednore", "full", out=tmp_path, budget=Budget(units=0))
    assert json.loads(path.read_text())["units"] == {"done": 42}
