"""scripts/add_per_image_results.py on privacy evaluation's attack units: a re-run is taken only where it repeats the
committed unit (identity, every mean metric) and its per-image values average to its own means."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "add_per_image_results.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("add_per_image_results", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unit(psnr: float, per_image: list[float] | None) -> dict:
    metrics = {"psnr": psnr, "cos_sim": 0.5, "euc_dis": 60.0, "ssim": 0.1, "prob_leak": 0.5, "mse": 0.1}
    if per_image is not None:
        metrics["per_image"] = {"psnr": per_image, "cos_sim": [0.4, 0.6], "mse": [0.05, 0.15], "leaks": [1.0, 0.0]}
    return {"unit": "attack/cosine/one-round/round1", "identity": {"attack": 1}, "result": {"C = 1, σ = 1": metrics}}


def test_an_attack_re_run_adds_its_per_image_values_only_where_it_repeats_the_unit(script, tmp_path):
    committed, rerun = tmp_path / "committed.json", tmp_path / "rerun.json"
    committed.write_text(json.dumps(_unit(10.0, None)))
    rerun.write_text(json.dumps(_unit(10.0, [9.0, 11.0])))
    script.add_attack(rerun, committed, None)
    kept = json.loads(committed.read_text())["result"]["C = 1, σ = 1"]
    assert kept["psnr"] == 10.0 and kept["per_image"]["psnr"] == [9.0, 11.0]
    committed.write_text(json.dumps(_unit(10.0, None)))
    for new, match in ((_unit(10.001, [9.001, 11.001]), "psnr"), (_unit(10.0, [9.0, 12.0]), "average to"),
                       ({**_unit(10.0, [9.0, 11.0]), "identity": {"attack": 2}}, "another identity")):
        rerun.write_text(json.dumps(new))
        with pytest.raises(SystemExit, match=match):
            script.add_attack(rerun, committed, None)
    assert "per_image" not in json.loads(committed.read_text())["result"]["C = 1, σ = 1"]  # left as it was
    rerun.write_text(json.dumps(_unit(10.001, [9.001, 11.001])))
    script.add_attack(rerun, committed, 0.01)  # --replace 0.01: the re-run replaces the unit
    assert json.loads(committed.read_text())["result"]["C = 1, σ = 1"]["psnr"] == 10.001
