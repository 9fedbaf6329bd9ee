import subprocess
import sys

import pytest

from fedlib.__main__ import main


def test_epsilon_reference_value(capsys):
    assert main(["privacy", "epsilon", "--sigma", "1.5", "--q", "0.04", "--steps", "2250", "--delta", "1e-5"]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(7.329, abs=1e-3)


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


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "fedlib", "privacy", "epsilon", "--sigma", "1.5", "--q", "0.04",
                          "--steps", "2250", "--delta", "1e-5"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "7.329111"
