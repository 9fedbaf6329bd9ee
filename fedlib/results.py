"""The results file of a chapter run: ``results/<mode>/<chapter>.json``.

Schema::

    {"chapter", "mode", "seed", "config", "elapsed_s", "environment",
     "tables": {"T3.1": {"title": str, "rows": [{column: value, ...}]}},
     "claims": [{"id", "text", "holds", "expected", "evidence"}],
     "series": {"name": {"x": [...], "y": [...], "label": str}}}

Rows carry the paper's number beside ours (columns ``paper`` and ``ours``); ``claims`` are the
paper's qualitative statements checked on our numbers (``expected`` is False for a claim that our
runs do not reproduce and the chapter says so; quick mode asserts ``holds == expected``); ``series``
hold the curves the chapter plots.
The notebook, the reproduction report and the tests all read this one file.
"""

from __future__ import annotations

import html
import json
import math
import os
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CHAPTERS = ("foundations", "dpfl", "fednore", "privacy_eval", "adpdfl", "sifu", "deniability", "flz", "audit")
MODES = ("quick", "full")


def results_dir() -> Path:
    """``$FEDLIB_RESULTS`` if set; else ``results/`` of the fedlib checkout (when fedlib is installed
    from one, as with ``pip install -e .``); else ``./results``."""
    if os.environ.get("FEDLIB_RESULTS"):
        return Path(os.environ["FEDLIB_RESULTS"])
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "_toc.yml").exists():
        return checkout / "results"
    return Path("results")


def _environment() -> dict[str, str]:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "machine": platform.machine(),
            "processor": platform.processor() or platform.machine(), "threads": str(torch.get_num_threads()),
            "cpus": str(os.cpu_count()), "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"}


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become None, tuples become lists, numpy/torch scalars become floats."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass
class Results:
    """What one chapter run produced."""

    chapter: str
    mode: str
    seed: int
    config: dict[str, Any]
    elapsed_s: float = 0.0
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    claims: list[dict[str, Any]] = field(default_factory=list)
    series: dict[str, dict[str, Any]] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=_environment)
    #: uint8 image batches (N, H, W, C) by name; saved beside the JSON as ``<chapter>.images.npz``
    images: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.chapter not in CHAPTERS:
            raise ValueError(f"chapter must be one of {CHAPTERS}, got {self.chapter!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")

    def add_table(self, table_id: str, title: str, rows: list[dict[str, Any]]) -> None:
        """Add a table; each row should hold the paper's value (``paper``) beside ours (``ours``)."""
        self.tables[table_id] = {"title": title, "rows": _clean(rows)}

    def add_claim(self, claim_id: str, text: str, holds: bool, evidence: str, *, expected: bool = True) -> None:
        """Record whether one of the paper's qualitative claims holds on our numbers.

        ``expected=False`` marks a claim that the chapter documents as not reproduced.
        """
        self.claims.append({"id": claim_id, "text": text, "holds": bool(holds), "expected": bool(expected),
                            "evidence": evidence})

    def surprises(self) -> list[dict[str, Any]]:
        """Claims whose verdict differs from the expected one (a failed claim, or an unexpected reproduction)."""
        return [c for c in self.claims if c["holds"] != c.get("expected", True)]

    def add_series(self, name: str, x: list[float], y: list[float], label: str | None = None) -> None:
        """Add a curve (e.g. accuracy over rounds)."""
        self.series[name] = {"x": _clean(list(x)), "y": _clean(list(y)), "label": label or name}

    def add_images(self, name: str, images: Any) -> None:
        """Add a batch of images (N, C, H, W) with values in [0, 1] (e.g. reconstructions), stored as uint8."""
        import numpy as np

        arr = np.asarray(images, dtype=np.float32)
        if arr.ndim != 4:
            raise ValueError(f"images must have shape (N, C, H, W), got {arr.shape}")
        self.images[name] = np.round(np.clip(arr, 0, 1) * 255).astype(np.uint8).transpose(0, 2, 3, 1)

    def claim(self, claim_id: str) -> dict[str, Any]:
        for c in self.claims:
            if c["id"] == claim_id:
                return c
        raise KeyError(f"no claim {claim_id!r}; claims are {[c['id'] for c in self.claims]}")

    def path(self, root: str | Path | None = None) -> Path:
        return Path(root or results_dir()) / self.mode / f"{self.chapter}.json"

    def save(self, root: str | Path | None = None) -> Path:
        """Write ``<root>/<mode>/<chapter>.json`` and return its path."""
        path = self.path(root)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = asdict(self)
        images = data.pop("images")
        path.write_text(json.dumps(_clean(data), indent=1) + "\n")
        if images:
            import numpy as np

            np.savez_compressed(path.with_suffix(".images.npz"), **images)
        return path


def load_results(chapter: str, mode: str = "quick", root: str | Path | None = None) -> Results:
    """Read ``<root>/<mode>/<chapter>.json``."""
    path = Path(root or results_dir()) / mode / f"{chapter}.json"
    if not path.exists():
        raise FileNotFoundError(f"no results at {path}; run `python -m fedlib run {chapter} --mode {mode}` first")
    results = Results(**json.loads(path.read_text()))
    if path.with_suffix(".images.npz").exists():
        import numpy as np

        with np.load(path.with_suffix(".images.npz")) as npz:
            results.images = {k: npz[k] for k in npz.files}
    return results


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table_markdown(results: Results, table_id: str) -> str:
    """A results table as a Markdown table (for notebooks and book pages)."""
    table = results.tables[table_id]
    rows = table["rows"]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    lines = [f"**{table_id}: {table['title']}**", "", "| " + " | ".join(columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def verdict(claim: dict[str, Any]) -> str:
    """'holds', 'does not hold', 'not reproduced (documented)' or 'holds, unexpectedly'."""
    if claim.get("expected", True):
        return "holds" if claim["holds"] else "does not hold"
    return "holds, unexpectedly" if claim["holds"] else "not reproduced (documented)"


def claims_markdown(results: Results) -> str:
    """The claims as a Markdown table with their verdicts."""
    lines = ["| claim | verdict | evidence |", "|---|---|---|"]
    for c in results.claims:
        lines.append(f"| {c['text']} | {verdict(c)} | {c['evidence']} |")
    return "\n".join(lines)


def _html_table(caption: str, columns: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in rows)
    return (f'<table class="table"><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def rows_html(caption: str, rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as an HTML table, one column per key (in order of first appearance)."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return _html_table(caption, columns, [[_fmt(r.get(c)) for c in columns] for r in rows])


def table_html(results: Results, table_id: str) -> str:
    """A results table as HTML (renders the same in the book, JupyterLab and Colab)."""
    table = results.tables[table_id]
    return rows_html(f"{table_id}: {table['title']}", table["rows"])


def claims_html(results: Results) -> str:
    """The claims with their verdicts as an HTML table."""
    return _html_table("The paper's claims checked on this run", ["claim", "verdict", "evidence"],
                       [[c["text"], verdict(c), c["evidence"]]
                        for c in results.claims])
