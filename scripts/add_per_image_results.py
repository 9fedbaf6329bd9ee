"""Add the per-image results of re-run units to the committed units they repeat, so that the ledger's comparisons of
two runs get the exact paired bound (units finished before 2026-12-02 kept accuracies only).

Re-run the units into a scratch results root first, e.g.

    mkdir -p /tmp/rerun/full/adpdfl && cp -r results/full/adpdfl/units /tmp/rerun/full/adpdfl/
    rm /tmp/rerun/full/adpdfl/units/<unit>.json
    python -m fedlib run adpdfl --mode full --out /tmp/rerun --checkpoints /tmp/rerun-ckpt --only '<unit id>'
    python scripts/add_per_image_results.py adpdfl /tmp/rerun

(a fresh checkpoint folder: a finished checkpoint would be read back without per-image results). A re-run is taken
only if it is the same unit (identity), every round it evaluated has the committed unit's accuracy (to 1e-12; means
over many models to 1e-5, a few images of float rounding), its other extra numbers agree, and its per-image results
average to the committed final (and best) accuracy; the committed metrics stay as they are.

Privacy evaluation's attack units (one entry of metrics per attack setting) get each setting's ``per_image`` values
the same way: a re-run is taken where it is the same unit, every mean metric (PSNR, cosine similarity, Euclidean
distance, SSIM, P(pl), MSE) agrees (to 1e-12, or TOL with ``--replace``) and its per-image values average to its
own means.

``--replace TOL`` replaces the committed unit by its re-run instead, where every evaluated number agrees to TOL
(e.g. 0.001, ten images of 10,000): for units finished before the channels-last CNN of 2026-12-01, whose re-runs
agree to float32 rounding only. Replace both units of every pair a claim compares, so the pair stays consistent.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fedlib.fl.engine import CORRECT, CORRECT_BEST, unpack_correct
from fedlib.units import default_folder, unit_filename


def check(unit: str, new: dict[str, Any], old: dict[str, Any], tolerance: float | None = None) -> None:
    """Raise SystemExit naming what differs, unless ``new`` is a faithful re-run of ``old`` (every evaluated number
    within ``tolerance``; None: to 1e-12, means over many models to 1e-5) whose per-image results average to its
    own final (and best) accuracy."""
    def fail(what: str) -> None:
        raise SystemExit(f"{unit}: the re-run is not the committed unit ({what}); left as it was, stopping")

    if new["identity"] != old["identity"]:
        fail("another identity")
    a, b = new["result"]["metrics"], old["result"]["metrics"]
    if len(a) != len(b):
        fail(f"{len(a)} rounds against {len(b)}")
    for x, y in zip(a, b):
        for k, v in x.items():
            tol = tolerance if tolerance is not None else 1e-5 if k.startswith("mean_") else 1e-12
            if k not in y or abs(v - y[k]) > tol:
                fail(f"round {x.get('round')}: {k} {v!r} against {y.get(k)!r}")
    extra, kept = new["result"]["extra"], old["result"]["extra"]
    for k, v in extra.items():
        if k not in (CORRECT, CORRECT_BEST) and (k not in kept or
                                                 abs(float(v) - float(kept[k])) > (tolerance or 1e-12)):
            fail(f"extra {k} {v!r} against {kept.get(k)!r}")
    accuracies = [m["accuracy"] for m in a if "accuracy" in m]
    for key, accuracy in ((CORRECT, accuracies[-1]), (CORRECT_BEST, max(accuracies))):
        if key in extra and abs(float(unpack_correct(extra[key]).double().mean()) - accuracy) > 1e-12:
            fail(f"{key} averages to another accuracy than {accuracy}")


#: the mean metrics of an attack setting, and the per-image values that average to some of them
ATTACK_METRICS = ("psnr", "cos_sim", "euc_dis", "ssim", "prob_leak", "mse")
PER_IMAGE_MEANS = {"psnr": "psnr", "cos_sim": "cos_sim", "mse": "mse", "leaks": "prob_leak"}


def check_attack(unit: str, new: dict[str, Any], old: dict[str, Any], tolerance: float | None = None) -> None:
    """Raise SystemExit naming what differs, unless ``new`` is a faithful re-run of the attack unit ``old`` (every
    setting's mean metrics within ``tolerance``, None: 1e-12) whose per-image values average to its own means."""
    def fail(what: str) -> None:
        raise SystemExit(f"{unit}: the re-run is not the committed unit ({what}); left as it was, stopping")

    if new["identity"] != old["identity"]:
        fail("another identity")
    if set(new["result"]) != set(old["result"]):
        fail("other settings")
    for name, m in new["result"].items():
        for k in ATTACK_METRICS:
            if abs(m[k] - old["result"][name][k]) > (tolerance or 1e-12):
                fail(f"{name}: {k} {m[k]!r} against {old['result'][name][k]!r}")
        for k, mean in PER_IMAGE_MEANS.items():
            values = m["per_image"][k]
            if abs(sum(values) / len(values) - m[mean]) > 1e-5 * max(1.0, abs(m[mean])):
                fail(f"{name}: its per-image {k} average to another value than {m[mean]!r}")


def add_attack(path: Path, target: Path, replace: float | None) -> None:
    """Give the committed attack unit at ``target`` its re-run's per-image values (or, with ``replace``, replace
    it by the re-run at ``path``)."""
    new, old = json.loads(path.read_text()), json.loads(target.read_text())
    if all("per_image" in m for m in old["result"].values()):
        return
    check_attack(new["unit"], new, old, replace)
    if replace is not None:
        target.write_text(path.read_text())
        moved = max(abs(m["psnr"] - old["result"][k]["psnr"]) for k, m in new["result"].items())
        print(f"{new['unit']}: replaced by its re-run (PSNR moved by at most {moved:.2g} dB)")
        return
    for name, m in new["result"].items():
        old["result"][name]["per_image"] = m["per_image"]
    target.write_text(json.dumps(old, indent=1) + "\n")
    print(f"{new['unit']}: per-image values added ({len(new['result'])} settings)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapter")
    parser.add_argument("scratch", type=Path, help="the results root the units were re-run into")
    parser.add_argument("--replace", type=float, metavar="TOL", default=None,
                        help="replace the committed units by their re-runs where every evaluated number agrees to TOL")
    args = parser.parse_args()
    committed = default_folder(args.chapter, "full")
    for path in sorted((args.scratch / "full" / args.chapter / "units").glob("*.json")):
        new = json.loads(path.read_text())
        result = new.get("result")
        target = committed / unit_filename(new["unit"])
        if (isinstance(result, dict) and result and target.exists()
                and all(isinstance(m, dict) and "per_image" in m for m in result.values())):
            add_attack(path, target, args.replace)
            continue
        if not isinstance(result, dict) or CORRECT not in result.get("extra", {}):
            continue
        old = json.loads(target.read_text())
        if CORRECT in old["result"].get("extra", {}):
            continue
        check(new["unit"], new, old, args.replace)
        if args.replace is not None:
            target.write_text(path.read_text())
            print(f"{new['unit']}: replaced by its re-run (final accuracy {old['result']['metrics'][-1]['accuracy']} "
                  f"→ {result['metrics'][-1]['accuracy']})")
            continue
        old["result"]["extra"].update({k: v for k, v in result["extra"].items() if k in (CORRECT, CORRECT_BEST)})
        target.write_text(json.dumps(old, indent=1) + "\n")
        print(f"{new['unit']}: per-image results added (final accuracy {old['result']['metrics'][-1]['accuracy']})")


if __name__ == "__main__":
    main()
