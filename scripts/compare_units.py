"""Compare two files of the same unit (e.g. a CPU run and its GPU re-run): every numeric value at the same place in
both results, the largest |difference| per top-level entry, and the two machines and times.

    python scripts/compare_units.py CPU.json GPU.json [--out diff.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fedlib.units import UnitFileError


def numbers(value: Any, path: tuple = ()) -> dict[tuple, float]:
    """Every int/float leaf of ``value`` (bools and strings left out) by its path."""
    if isinstance(value, dict):
        return {p: v for k, item in value.items() for p, v in numbers(item, path + (k,)).items()}
    if isinstance(value, list):
        return {p: v for i, item in enumerate(value) for p, v in numbers(item, path + (i,)).items()}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {path: float(value)}
    return {}


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Largest |a − b| per top-level result entry and per leaf name, over the leaves both files hold."""
    if a["identity"]["hash"] != b["identity"]["hash"]:
        raise SystemExit(f"the files hold different units or configurations ({a['unit']!r} vs {b['unit']!r})")
    na, nb = numbers(a["result"]), numbers(b["result"])
    common = sorted(set(na) & set(nb), key=str)
    by_entry: dict[str, float] = {}
    by_leaf: dict[str, float] = {}
    for p in common:
        d = abs(na[p] - nb[p])
        by_entry[str(p[0])] = max(by_entry.get(str(p[0]), 0.0), d)
        by_leaf[str(p[-1])] = max(by_leaf.get(str(p[-1]), 0.0), d)
    return {"unit": a["unit"], "values": len(common), "only_in_one": len(set(na) ^ set(nb)),
            "max_abs_diff_by_entry": by_entry, "max_abs_diff_by_name": by_leaf,
            "a": {"elapsed_s": a["elapsed_s"], "environment": a.get("environment")},
            "b": {"elapsed_s": b["elapsed_s"], "environment": b.get("environment")}}


def read(path: Path) -> dict[str, Any]:
    """A unit file under any name (a copy brought back from another machine keeps no unit-id file name)."""
    data = json.loads(path.read_text())
    if not {"unit", "identity", "result", "elapsed_s"} <= set(data):
        raise UnitFileError(f"{path} is not a unit file")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    text = json.dumps(compare(read(args.a), read(args.b)), indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
