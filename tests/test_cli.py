import subprocess
import sys

import pytest

from fedlib.__main__ import main


def test_epsilon_reference_value(capsys):
    assert main(["privacy", "epsilon", "--sigma", "1.5", "--q", "0.04", "--steps", "2250", "--delta", "1e-5"]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(7.329, abs=1e-3)


def test_epsilon_at_the_edge_of_the_orders_says_it_is_only_an_upper_bound(capsys):
    """σ = 10⁶: the RDP optimum lies beyond the largest order (63), so ε = 0.1029 is a valid bound far above the
    true ε; the calculator must say so instead of printing it as if it were tight."""
    assert main(["privacy", "epsilon", "--sigma", "1e6", "--q", "0.04", "--steps", "10", "--delta", "1e-5"]) == 0
    out = capsys.readouterr()
    assert float(out.out) == pytest.approx(0.1029, abs=1e-4)
    assert "order 63, the largest of the accountant's orders: ε is a valid upper bound" in out.err
    main(["privacy", "epsilon", "--sigma", "1.5", "--q", "0.04", "--steps", "2250", "--delta", "1e-5"])
    assert "accountant's orders" not in capsys.readouterr().err


def test_sigma_reference_value(capsys):
    assert main(["privacy", "sigma", "--epsilon", "8", "--q", "0.04", "--steps", "2250", "--delta", "1e-5"]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(1.416, abs=1e-3)


def test_adpdfl_noise_calculator_gives_theorem8_values(capsys):
    base = ["privacy", "adpdfl", "--epsilon", "8", "--delta", "1e-5", "--m-tcs", "70"]
    assert main([*base, "--rounds", "20"]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(0.0033256, abs=1e-6)
    assert main([*base, "--rounds", "50", "--m-e", "30"]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(0.249419, abs=1e-5)
    assert main([*base, "--rounds", "50", "--m-e", "70"]) == 2
    assert "gossip needs m_e in [1, m_tcs - 1 = 69]" in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["privacy", "epsilon", "--sigma", "-1", "--q", "0.1", "--steps", "10", "--delta", "1e-5"], "--sigma: must be > 0"),
    (["privacy", "epsilon", "--sigma", "1", "--q", "2", "--steps", "10", "--delta", "1e-5"], "--q: must be in (0, 1]"),
    (["privacy", "sigma", "--epsilon", "1", "--q", "0.1", "--steps", "ten", "--delta", "1e-5"], "--steps"),
    (["privacy", "sigma", "--epsilon", "1", "--q", "0.1", "--steps", "10", "--delta", "1"], "--delta"),
    (["run", "chapter9"], "invalid choice"),
    (["run", "foundations", "--mode", "medium"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["privacy", "epsilon", "--sigma", "inf", "--q", "0.1", "--steps", "10", "--delta", "1e-5"],
     "--sigma: must be a finite number, got inf"),
    (["privacy", "epsilon", "--sigma", "nan", "--q", "0.1", "--steps", "10", "--delta", "1e-5"], "finite"),
    (["privacy", "sigma", "--epsilon", "inf", "--q", "0.1", "--steps", "10", "--delta", "1e-5"],
     "--epsilon: must be a finite number, got inf"),
    (["run", "foundations", "--units", "-1"], "--units: must be >= 0"),
    (["run", "foundations", "--seed", "x"], "--seed: expected an integer"),
])
def test_non_finite_and_out_of_range_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("argv,message", [
    (["privacy", "epsilon", "--sigma", "1e-300", "--q", "0.04", "--steps", "2250", "--delta", "1e-5"],
     "--sigma 1e-300: the noise is negligible, ε is unbounded"),
    (["privacy", "sigma", "--epsilon", "1e-9", "--q", "0.04", "--steps", "2250", "--delta", "1e-5"],
     "target_epsilon=1e-09 is too small to reach"),
    (["run", "foundations", "--checkpoints", "ckpt"], "chapter 'foundations' does not support checkpoints"),
    (["run", "foundations", "--units", "3"], "--units/--budget/--only: only full mode is split into units"),
    (["run", "foundations", "--only", "x"], "--units/--budget/--only: only full mode is split into units"),
])
def test_unanswerable_requests_exit_2_with_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_extreme_but_valid_noise_gives_a_finite_answer(capsys):
    assert main(["privacy", "epsilon", "--sigma", "1e300", "--q", "0.04", "--steps", "2250", "--delta", "1e-5"]) == 0
    assert 0 <= float(capsys.readouterr().out) < 1  # σ → ∞: ε → the conversion's floor, no overflow
    assert main(["privacy", "epsilon", "--sigma", "2", "--q", "0.9999999", "--steps", "1000000000000",
                 "--delta", "1e-5"]) == 0
    assert float(capsys.readouterr().out) > 1e9  # q → 1, huge step counts: large, finite


@pytest.mark.parametrize("env,message", [
    ({"FEDLIB_NUM_THREADS": "abc"}, "FEDLIB_NUM_THREADS must be an integer >= 1 (torch threads per process), got 'abc'"),
    ({"FEDLIB_NUM_THREADS": "0"}, "FEDLIB_NUM_THREADS must be an integer >= 1"),
])
def test_bad_environment_is_one_line(env, message, monkeypatch, capsys):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(["run", "foundations", "--out", "x"]) == 2
    assert message in capsys.readouterr().err


def test_an_unwritable_out_folder_stops_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["run", "foundations", "--out", str(blocker / "sub")]) == 2
    assert f"--out: {blocker / 'sub'} is not a writable folder" in capsys.readouterr().err


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "fedlib", "privacy", "epsilon", "--sigma", "1.5", "--q", "0.04",
                          "--steps", "2250", "--delta", "1e-5"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "7.329111"


def test_status_names_a_chapter_it_cannot_plan_and_goes_on(monkeypatch, capsys):
    import fedlib.experiments as experiments
    from fedlib.data import DatasetNotFoundError

    real = experiments.run_chapter

    def run_chapter(chapter, mode, **kwargs):
        if chapter == "dpfl":
            raise DatasetNotFoundError("Dataset 'mnist' was not found under /nowhere and could not be downloaded.\nmore")
        planned = real(chapter, mode, **kwargs)
        if chapter == "audit":  # a blocked group whose reason spans lines, as a download error does
            planned.units["blocked"] = {"y/*": "Dataset 'y' was not found under /nowhere and could not be downloaded",
                                        "x/*": "needs the full X (found 3)\nTried https://..."}
        return planned

    monkeypatch.setattr(experiments, "run_chapter", run_chapter)
    monkeypatch.setattr(experiments, "CHAPTER_MODULES", {k: experiments.CHAPTER_MODULES[k]
                                                         for k in ("foundations", "dpfl", "audit")})
    assert main(["status"]) == 1
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[1:4]}
    assert "Dataset 'mnist' was not found under /nowhere" in lines["dpfl"] and "more" not in lines["dpfl"]
    assert " / " in lines["foundations"] and " / " in lines["audit"]  # the chapters that could be planned
    assert lines["audit"].endswith("x/*: needs the full X (found 3)") and "Tried" not in out
    assert "1 chapter(s) could not be planned" in out
    assert " +2 groups blocked " in lines["audit"] and "blocked" not in lines["foundations"]
    assert "1 chapter(s) have unit groups blocked by a dataset the data root lacks" in out  # y, not x's subset


def test_the_help_names_exactly_the_chapters_that_resume():
    """`run --help` lists RESUMABLE; it must be the chapters whose run takes checkpoints (it once left out
    deniability, which resumes)."""
    from fedlib.experiments import supports
    from fedlib.results import CHAPTERS, RESUMABLE

    assert RESUMABLE == tuple(c for c in CHAPTERS if supports(c, "checkpoints"))
