"""The results file of a chapter run: ``results/<mode>/<chapter>.json``.

Schema::

    {"chapter", "mode", "seed", "config", "elapsed_s", "environment",
     "tables": {"T3.1": {"title": str, "rows": [{column: value, ...}]}},
     "claims": [{"id", "setting", "key", "paper", "evidence", "metric", "direction", "unit", "margin", "kind",
                 "central", "note", "value", "detail", "outcome"}],
     "series": {"name": {"x": [...], "y": [...], "label": str}},
     "units": {"done", "computed", "not_run", "blocked", "total", "seconds", "devices", "stopped_early",
               "missing"}}

Rows carry the paper's number beside ours (columns ``paper`` and ``ours``; None where a unit has not run yet);
``claims`` are the chapter's ledger (:mod:`fedlib.ledger`) evaluated on this run's measured values, one entry per
claim and setting with this run's outcome (reproduced / not reproduced / inconclusive / not run); ``series`` hold
the curves the chapter plots; ``units`` says which pieces of a full-mode run are finished (:mod:`fedlib.units`).
The notebook, the reproduction report and the tests all read this one file.
"""

from __future__ import annotations

import html
import json
import math
import os
import platform
import statistics
from dataclasses import asdict, dataclass, field
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedlib.ledger import Claim, combination_halfwidth, evaluate, sampling_halfwidth

CHAPTERS = ("foundations", "dpfl", "fednore", "privacy_eval", "adpdfl", "sifu", "deniability", "flz", "audit")
#: chapters whose run resumes from per-training-run checkpoints (``--checkpoints``)
RESUMABLE = ("dpfl", "fednore", "adpdfl", "deniability")
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


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what :func:`platform.processor` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict[str, str]:
    """Where a run ran: Python, torch, machine, processor, CPU model and the vector instructions torch's CPU kernels
    use (AVX2, AVX512, ...: CPUs that differ here round differently, so trained numbers differ between them while
    one machine repeats its own to the bit), torch threads, CPU count, GPU, and the device the chapters compute on
    (``$FEDLIB_DEVICE`` resolved)."""
    import torch

    from fedlib.experiments.common import device

    return {"python": platform.python_version(), "torch": torch.__version__, "machine": platform.machine(),
            "processor": platform.processor() or platform.machine(), "cpu_model": cpu_model(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "threads": str(torch.get_num_threads()),
            "cpus": str(os.cpu_count()), "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
            "device": device()}


def clean(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become None, tuples become lists, numpy/torch scalars become floats."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` so that a crash or a full disk mid-write leaves the previous file intact: write a
    temporary file in the same folder, flush it to disk, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _values_of_mean(key: str, name: str, values: Sequence[float], value: float, *, rel_tol: float,
                    abs_tol: float) -> list[float]:
    """``values`` as floats, checked to be at least 2 finite numbers whose mean is ``value`` (claim ``key``'s
    ``name`` argument)."""
    values = [float(v) for v in values]
    if len(values) < 2 or not all(math.isfinite(v) for v in values):
        raise ValueError(f"claim {key!r}: {name} must be at least 2 finite values, got {values}")
    if not math.isclose(statistics.fmean(values), value, rel_tol=rel_tol, abs_tol=abs_tol):
        raise ValueError(f"claim {key!r}: value {value!r} is not the mean of its {name} ({statistics.fmean(values)!r})")
    return values


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
    environment: dict[str, str] = field(default_factory=environment)
    units: dict[str, Any] = field(default_factory=dict)
    #: claim key -> {"value", "detail"}: what this run measured for the ledger (see :meth:`measure`)
    measured: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: uint8 image batches (N, H, W, C) by name; saved beside the JSON as ``<chapter>.images.npz``
    images: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.chapter not in CHAPTERS:
            raise ValueError(f"chapter must be one of {CHAPTERS}, got {self.chapter!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")

    def add_table(self, table_id: str, title: str, rows: list[dict[str, Any]]) -> None:
        """Add a table; each row should hold the paper's value (``paper``) beside ours (``ours``)."""
        self.tables[table_id] = {"title": title, "rows": clean(rows)}

    def measure(self, claim: Claim, value: float | None, detail: str = "", *, setting: str = "",
                samples: Sequence[float] | None = None, at_most: bool = False, test_images: int | None = None,
                accuracies: Sequence[float] | None = None, disagreement: float | None = None,
                weights: Sequence[float] | None = None, mean_square: float | None = None,
                independent: bool = False, per_item: Sequence[float] | None = None, auc: bool = False,
                interval: Sequence[float] | None = None, untested: str | None = None) -> None:
        """Record this run's value of ``claim`` in ``setting`` (None: not run yet) and what it was computed from.

        ``samples``: where ``value`` is a mean over seeds, the per-seed values (at least 2, their mean ``value``);
        the verdict then accounts for their spread (:func:`fedlib.ledger.clears`). ``at_most``: ``value`` is only an
        upper bound (some runs it reads are missing); it is recorded where it decides the verdict
        (:func:`fedlib.ledger.decided_by_bound`), else the claim stays not run. ``test_images`` with ``accuracies``:
        ``value`` was read off one model's accuracy p on these N test images (``(p,)``: p minus a fixed number) or
        off two models' (``(p1, p2)``: p1 − p2, see :meth:`measure_difference`), and ``disagreement`` the share of
        those images exactly one of the two models gets right where the run kept their per-image results; a
        full-mode verdict must then clear the margin by the test set's sampling bound too
        (:func:`fedlib.ledger.sampling_halfwidth`). ``weights``: ``value`` is the combination Σ wₖ·pₖ of the
        ``accuracies`` of as many models (e.g. a mean of differences), ``mean_square`` the mean over the images of
        (Σ wₖ·cₖ)² where the runs kept their per-image results cₖ (:func:`fedlib.fl.engine.mean_square`; bound:
        :func:`fedlib.ledger.combination_halfwidth`). ``independent``: the two ``accuracies`` were measured on two
        separately drawn test sets of ``test_images`` each (e.g. two seeds'), so their errors are independent.
        ``per_item``: ``value`` is the mean over a sample of items of these per-item values (e.g. the PSNR of two
        attacks on the same images, image by image, subtracted); a full-mode verdict must then clear the margin by
        their one-sided 99 % confidence bound too (:func:`fedlib.ledger.confidence_halfwidth`). ``auc``: the
        ``accuracies`` are ROC AUCs (e.g. of a membership attack) over at least ``test_images`` positives and as many
        negatives (:func:`fedlib.ledger.auc_halfwidth`). ``interval``: (low, high), the value read at the two ends
        of the test set's sampling bound where it is not a linear function of accuracies (e.g. the round at which
        one run first reaches another's best accuracy, that target moved by its bound); a full-mode verdict must
        then hold at both ends too. ``untested``: why this run cannot test the claim whatever its value (e.g. the
        two models compared both diverged in their first round: neither was trained); a full-mode verdict is then
        inconclusive, with the reason in its detail."""
        key = claim.key(setting)
        if key in self.measured:
            raise ValueError(f"claim {key!r} was measured twice")
        if at_most and samples is not None:
            raise ValueError(f"claim {key!r}: a bound (at_most) has no per-seed samples")
        entry = {"value": None if value is None else float(value), "detail": detail}
        if at_most and value is not None:
            entry["at_most"] = True
        if disagreement is not None and accuracies is None:
            raise ValueError(f"claim {key!r}: a disagreement needs the two accuracies it is between")
        if mean_square is not None and weights is None:
            raise ValueError(f"claim {key!r}: a mean_square needs the weights of the combination it is of")
        if weights is not None and (accuracies is None or disagreement is not None):
            raise ValueError(f"claim {key!r}: weights need the accuracies they combine (one weight each), and "
                             "a combination's per-image results come as mean_square, not disagreement")
        if auc and (accuracies is None or len(accuracies) not in (1, 2) or disagreement is not None
                    or weights is not None or independent):
            raise ValueError(f"claim {key!r}: auc needs one or two AUCs as accuracies, without disagreement, weights "
                             f"or independent, got accuracies={accuracies!r}")
        if independent and (accuracies is None or len(accuracies) != 2 or disagreement is not None
                            or weights is not None):
            raise ValueError(f"claim {key!r}: independent needs exactly two accuracies (on two test sets) and no "
                             f"disagreement or weights, got accuracies={accuracies!r}")
        if per_item is not None and value is not None:
            if test_images is not None or accuracies is not None:
                raise ValueError(f"claim {key!r}: per_item values give the sample themselves, without test_images "
                                 "or accuracies")
            # per-item values are stored to seven significant digits and the value is often a difference of two
            # float32 means (e.g. of PSNRs near 20 dB): their mean matches it to about 1e-5 of the operands
            per_item = _values_of_mean(key, "per_item", per_item, value, rel_tol=1e-5, abs_tol=1e-4)
            entry["sampling"] = {"test_images": len(per_item), "per_item": per_item}
        if (test_images is None) != (accuracies is None):
            raise ValueError(f"claim {key!r}: test_images and accuracies go together (the test set's size and the "
                             f"accuracies the value was read off), got test_images={test_images!r}, "
                             f"accuracies={accuracies!r}")
        if test_images is not None and value is not None:
            accuracies = [float(p) for p in accuracies]
            if weights is None:
                sampling_halfwidth(test_images, accuracies, disagreement)  # a clear error now, not at evaluation
                read = accuracies[0] - accuracies[1] if len(accuracies) == 2 else None
                extra = ({"independent": True} if independent else {"auc": True} if auc else
                         {} if disagreement is None else {"disagreement": float(disagreement)})
            else:
                weights = [float(w) for w in weights]
                combination_halfwidth(test_images, accuracies, weights, mean_square)
                read = sum(w * p for w, p in zip(weights, accuracies))
                extra = {"weights": weights, **({} if mean_square is None else {"mean_square": float(mean_square)})}
            if read is not None and not math.isclose(read, value, rel_tol=1e-9, abs_tol=1e-12):
                raise ValueError(f"claim {key!r}: value {value!r} is not the "
                                 f"{'difference' if weights is None else 'weighted sum'} of its accuracies "
                                 f"{accuracies} ({read!r})")
            entry["sampling"] = {"test_images": test_images, "accuracies": accuracies, **extra}
        if interval is not None and value is not None:
            low, high = (float(x) for x in interval)
            if not low <= value <= high:
                raise ValueError(f"claim {key!r}: interval must be (low, high) around the value {value!r}, got "
                                 f"{list(interval)!r}")
            entry["interval"] = [low, high]
        if samples is not None and value is not None:
            entry["samples"] = _values_of_mean(key, "samples", samples, value, rel_tol=1e-9, abs_tol=1e-12)
        if untested is not None and value is not None:
            if not untested.strip():
                raise ValueError(f"claim {key!r}: untested must say why the run cannot test the claim, got "
                                 f"{untested!r}")
            entry["untested"] = untested
        self.measured[key] = entry

    def measure_difference(self, claim: Claim, a: float | None, b: float | None, detail: str = "", *,
                           setting: str = "", test_images: int | None, disagreement: float | None = None,
                           untested: str | None = None) -> None:
        """Record a − b for two models' accuracies a, b on the same ``test_images`` test images (None where either
        has not run), with the test set's sampling bound of that difference (:meth:`measure`; ``test_images`` None:
        the test set is not known, and the value is recorded without it; ``disagreement``: the share of images
        exactly one model gets right, where the runs kept their per-image results; ``untested``: see
        :meth:`measure`)."""
        if a is None or b is None or test_images is None:
            self.measure(claim, None if a is None or b is None else a - b, detail, setting=setting,
                         untested=untested)
        else:
            self.measure(claim, a - b, detail, setting=setting, test_images=test_images, accuracies=(a, b),
                         disagreement=disagreement, untested=untested)

    def evaluate(self, ledger: Sequence[Claim]) -> None:
        """Evaluate the chapter's ledger on the measured values (every claim and setting gets an entry)."""
        self.claims = clean(evaluate(ledger, self.measured, self.mode))

    def add_series(self, name: str, x: list[float], y: list[float], label: str | None = None) -> None:
        """Add a curve (e.g. accuracy over rounds)."""
        self.series[name] = {"x": clean(list(x)), "y": clean(list(y)), "label": label or name}

    def add_images(self, name: str, images: Any) -> None:
        """Add a batch of images (N, C, H, W) with values in [0, 1] (e.g. reconstructions), stored as uint8."""
        import numpy as np

        arr = np.asarray(images, dtype=np.float32)
        if arr.ndim != 4:
            raise ValueError(f"images must have shape (N, C, H, W), got {arr.shape}")
        self.images[name] = np.round(np.clip(arr, 0, 1) * 255).astype(np.uint8).transpose(0, 2, 3, 1)

    def claim(self, key: str) -> dict[str, Any]:
        """The entry of claim ``key`` (``id`` or ``id/setting``)."""
        for c in self.claims:
            if c["key"] == key:
                return c
        raise KeyError(f"no claim {key!r}; claims are {[c['key'] for c in self.claims]}")

    def path(self, root: str | Path | None = None) -> Path:
        return Path(root or results_dir()) / self.mode / f"{self.chapter}.json"

    def save(self, root: str | Path | None = None) -> Path:
        """Write ``<root>/<mode>/<chapter>.json`` (and the images beside it) atomically; return the JSON's path.

        The images go first and the JSON last, each through a temporary file renamed over the old one, so a crash
        or a full disk leaves either the previous pair or the new one, never a torn file.
        """
        import io

        path = self.path(root)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = asdict(self)
        images = data.pop("images")
        text = json.dumps(clean(data), indent=1, allow_nan=False) + "\n"
        npz = path.with_suffix(".images.npz")
        if images:
            import numpy as np

            buffer = io.BytesIO()
            np.savez_compressed(buffer, **images)
            write_atomic(npz, buffer.getvalue())
        elif npz.exists():
            npz.unlink()
        write_atomic(path, text.encode())
        return path


class ResultsFileError(ValueError):
    """A results file is unreadable or does not belong where it lies."""


def load_results(chapter: str, mode: str = "quick", root: str | Path | None = None) -> Results:
    """Read ``<root>/<mode>/<chapter>.json`` and check that it is that chapter's results in that mode.

    Raises:
        FileNotFoundError: no such file (the message says how to produce it).
        ResultsFileError: the file is not valid JSON of a results file, or its chapter/mode disagree with its path.
    """
    path = Path(root or results_dir()) / mode / f"{chapter}.json"
    if not path.exists():
        raise FileNotFoundError(f"no results at {path}; run `python -m fedlib run {chapter} --mode {mode}` first")
    try:
        data = json.loads(path.read_text())
        results = Results(**data)
    except (OSError, ValueError, TypeError) as err:
        raise ResultsFileError(f"{path}: {type(err).__name__}: {str(err)[:300]}") from None
    if (results.chapter, results.mode) != (chapter, mode):
        raise ResultsFileError(f"{path} holds the {results.mode} results of {results.chapter!r}, not the {mode} "
                               f"results of {chapter!r}")
    if path.with_suffix(".images.npz").exists():
        import numpy as np

        with np.load(path.with_suffix(".images.npz")) as npz:
            results.images = {k: npz[k] for k in npz.files}
    return results


def format_number(value: float) -> str:
    """A float as a table shows it: three significant digits (0.848, 12.7, 5.98e-05), whole numbers from 1,000 on
    (1,362; 199,210), an exponent below 0.001 and from 10⁷ on. Presentation only: results files keep every digit."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    size = abs(value)
    if 1e3 <= size < 1e7:
        return f"{value:,.0f}"
    text = f"{value:.3g}"
    if "e" in text and 1e-3 <= size < 1e3:  # 999.7 -> "1e+03", 0.00099996 -> "0.001"
        return f"{value:,.0f}" if size >= 1 else f"{value:.3f}"
    return text


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "✓" if value else "✗"
    if isinstance(value, float):
        return format_number(value)
    return str(value)


def table_markdown(results: Results, table_id: str) -> str:
    """A results table as a Markdown table (for notebooks and book pages)."""
    table = results.tables[table_id]
    rows = table["rows"]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    lines = [f"**{table_id}: {table['title']}**", "", "| " + " | ".join(header_label(c) for c in columns) + " |",
             "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


#: Column headers a reader can read, for results keys that are not already words or a seed's symbol.
HEADERS = {
    "Delta": "Δ", "accuracy_forgotten": "accuracy (forgotten)", "accuracy_remaining": "accuracy (remaining)",
    "audit_exceeds_claim": "audit exceeds claim", "audit_exceeds_thesis_claim": "audit exceeds thesis's claim",
    "audited_eps_lb": "audited ε (lower bound)", "claimed_eps": "claimed ε", "csr": "client sampling rate",
    "d_l": "d_l", "default_mode": "default mode", "dp": "DP", "epsilon": "ε", "epsilon_accountant": "ε (accountant)",
    "epsilon_as_run": "ε (as run)", "epsilon_claimed": "ε (claimed)", "epsilon_given_clusters": "ε (given clusters)",
    "epsilon_no_anonymity": "ε (no anonymity)", "epsilon_ours": "ε (ours)", "epsilon_per_client": "ε per client",
    "epsilon_thesis": "ε (thesis)", "eq15_at_printed_sigma": "eq. 15 at the printed σ",
    "exact_images_accuracy": "accuracy (exact test images)", "fedAvg": "fedAvg", "fedAvg_retrain_MB": "fedAvg_retrain (MB)",
    "fedEraser_MB": "fedEraser (MB)", "fpr": "FPR", "global_accounting_best": "best (global accounting)",
    "k-IPfedAvg_MB": "k-IPfedAvg (MB)", "kl_to_retrained": "KL to retrained", "l1": "ℓ1", "l3": "ℓ3",
    "lambda": "λ", "lambda1": "λ1", "lambda2": "λ2", "lambda_paper": "λ (paper)", "ldp_delta_ours": "LDP δ (ours)",
    "loss_auc": "loss-attack AUC", "lr": "learning rate", "m_e": "m_e", "m_star": "m*", "m_tcs": "m_tcs",
    "max_abs_difference": "max |difference|", "max_certifiable_eps": "largest certifiable ε",
    "mia_auc": "MIA AUC", "mia_tpr_at_01pct": "MIA TPR at 0.1 % FPR", "mia_tpr_at_1pct": "MIA TPR at 1 % FPR",
    "n_i": "n_i", "nonconvex_bound_T52": "non-convex bound (T = 52)", "nore1": "Fed-nore-1", "nore2": "Fed-nore-2",
    "nore1_gain": "Fed-nore-1 gain", "nore2_gain": "Fed-nore-2 gain", "noise_over_update": "noise / update",
    "noise_over_update_mean_of_m": "noise / update (mean of m)", "noise_std_on_mean": "noise std on the mean",
    "ours_mean_of_m": "ours (mean of m)", "ours_rowwise_l2": "ours (row-wise L2)", "p_any": "P(any retrain)",
    "paper_std": "paper (std)", "q": "q", "q1": "q1", "rounds_ours": "rounds (ours)", "rounds_paper": "rounds (paper)",
    "rounds_to_plain_best": "rounds to plain's best", "rounds_to_plain_ours": "rounds to plain's best (ours)",
    "rounds_to_plain_paper": "rounds to plain's best (paper)", "run_epsilon_as_run": "ε of the run (as run)",
    "run_epsilon_thesis": "ε of the run (thesis)", "saving_incl_indices": "saving incl. indices",
    "sensitivity_claim": "sensitivity (claimed)", "sigma": "σ", "sigma2_if_m_is_m_tcs": "σ² if m = m_tcs",
    "sigma_thesis": "σ (thesis)", "spec_corrected": "corrected", "std_over_x": "std / x",
    "std_rowwise_l2": "std (row-wise L2)", "thesis_claimed_eps": "thesis's claimed ε", "top_rate": "top-k rate",
    "tpr": "TPR", "zeta2": "ζ²",
}


def header_label(key: str) -> str:
    """A results key as a column header: :data:`HEADERS`, else its words (``noise_std`` -> "noise std")."""
    return HEADERS.get(key, key.replace("_", " "))


def _html_table(caption: str, columns: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(header_label(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in rows)
    # the box scrolls a table wider than the text column (inline style: the same in JupyterLab and Colab);
    # the book's fedlib.css/fedlib.js add a visible cue when it does
    return (f'<div class="fedlib-table" style="overflow-x: auto; max-width: 100%;"><table class="table">'
            f"<caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def rows_html(caption: str, rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as an HTML table, one column per key (in order of first appearance)."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return _html_table(caption, columns, [[_fmt(r.get(c)) for c in columns] for r in rows])


#: results tables longer than this many rows are folded (a chapter plots them; the rows are there for who wants them)
FOLD_ROWS = 20


def table_html(results: Results, table_id: str, fold_after: int = FOLD_ROWS) -> str:
    """A results table as HTML (renders the same in the book, JupyterLab and Colab); one of more than
    ``fold_after`` rows comes folded in a ``<details>`` element whose summary names it and its row count."""
    table = results.tables[table_id]
    caption = f"{table_id}: {table['title']}"
    out = rows_html(caption, table["rows"])
    if len(table["rows"]) <= fold_after:
        return out
    return (f'<details class="fedlib-fold"><summary>{html.escape(caption)} ({len(table["rows"])} rows: click to '
            f"show)</summary>{out}</details>")

