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
