"""Interactive explorers for the book (ipywidgets), each beside a static figure so that the rendered HTML, where
widgets have no kernel, is never blank.

* :func:`dp_calculator`: σ, sampling rate q, rounds and δ → ε (fedlib's RDP accountant, equal to Opacus's), and
  back: a target ε → the smallest σ.
* :func:`leakage_explorer`: pick a clipping bound C and noise σ among a privacy-evaluation run's attacks and see
  the reconstructions beside the real images, with its PSNR.
* :func:`unlearning_explorer`: pick clients to forget from the SIFU chapter's trained federation and compare
  SCRATCH, SIFU, FINE-TUNING, LAST and FedEraser on rounds, accuracy and the distance of their outputs to SCRATCH's,
  beside a model that remembers the clients and one retrained without them at another seed.

Headless builds (``FEDLIB_HEADLESS=1``, set by ``scripts/build_book.py``) skip the live widgets and keep the static
figures: executing widget cells under nbclient can block at random (jupyter/nbclient#312).
"""

from __future__ import annotations

import base64
import functools
import html
import io
import math
import os
import threading
from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from fedlib.plotting import COLUMN_IN, grouped_bars, image_grid, panels
from fedlib.privacy.accountant import calibrate_noise_multiplier, epsilon_curve
from fedlib.results import Results, rows_html


#: ipykernel 7 may run widget callbacks concurrently; pyplot is not thread-safe, and two redraws at once (a slider
#: snapping the value a button had just set) rendered a nearly blank figure in JupyterLab
_REDRAW = threading.Lock()


def _serialised(callback: Callable[..., None]) -> Callable[..., None]:
    """The callback, run under :data:`_REDRAW`."""
    @functools.wraps(callback)
    def run(*args: Any) -> None:
        with _REDRAW:
            callback(*args)
    return run


def _img(fig: plt.Figure) -> str:
    """The figure as an HTML ``<img>`` (inline PNG) for an ``ipywidgets.HTML`` (closed afterwards). Widgets redraw
    by replacing that value: printing into an ``Output`` widget stacked several figures in JupyterLab when
    redraws came fast (a slider snapping its value), and an ``ipywidgets.Image`` was rescaled and cropped."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    plt.close(fig)
    return f'<img src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}" style="max-width: 100%">'


def _headless() -> bool:
    """True in headless builds, where the live widget is replaced by a note."""
    if os.environ.get("FEDLIB_HEADLESS") == "1":
        print("(interactive explorer: open this chapter in JupyterLab or Colab to use it)")
        return True
    return False


def epsilon_figure(sigmas: tuple[float, ...] = (0.7, 1.0, 2.0, 4.0), *, sample_rate: float = 0.01,
                   rounds: int = 1000, delta: float = 1e-5) -> plt.Figure:
    """The calculator's static view: ε over rounds of the sampled Gaussian mechanism for several σ."""
    fig, ax = plt.subplots(figsize=(COLUMN_IN, 3.6))
    for sigma in sigmas:
        eps = epsilon_curve(noise_multiplier=sigma, sample_rate=sample_rate, steps=rounds, delta=delta)
        ax.plot(np.arange(1, rounds + 1), eps, label=f"σ = {sigma:g}")
    ax.set_xlabel("rounds (one sampled Gaussian mechanism each)")
    ax.set_ylabel(f"ε at δ = {delta:g}")
    ax.set_yscale("log")
    ax.set_title(f"Privacy loss over rounds, q = {sample_rate:g}")
    ax.legend()
    return fig


def dp_calculator(*, sigma: float = 1.0, sample_rate: float = 0.01, rounds: int = 1000, delta: float = 1e-5) -> Any:
    """A widget: sliders for σ, q, rounds and δ print ε (and draw ε over rounds); a target ε gives σ (None in
    headless builds)."""
    if _headless():
        return None
    import ipywidgets as w
    from IPython.display import display

    s = w.FloatLogSlider(value=sigma, base=10, min=-0.7, max=1.5, step=0.001, description="σ")
    q = w.FloatLogSlider(value=sample_rate, base=10, min=-4, max=0, step=0.05, description="q")
    t = w.IntSlider(value=rounds, min=1, max=10_000, step=1, description="rounds")
    d = w.FloatLogSlider(value=delta, base=10, min=-9, max=-3, step=1, description="δ")
    target = w.BoundedFloatText(value=8.0, min=0.01, max=1000.0, description="target ε")
    solve = w.Button(description="σ for target ε")
    text, image = w.HTML(), w.HTML()

    @_serialised
    def show(*_):
        eps = epsilon_curve(noise_multiplier=s.value, sample_rate=q.value, steps=t.value, delta=d.value)
        text.value = (f"<b>ε = {eps[-1]:.4g}</b> after {t.value} rounds (σ = {s.value:.3g}, q = {q.value:.3g}, "
                      f"δ = {d.value:.0e})")
        fig, ax = plt.subplots(figsize=(COLUMN_IN, 3.0))
        ax.plot(np.arange(1, t.value + 1), eps)
        ax.set_xlabel("rounds")
        ax.set_ylabel("ε")
        image.value = _img(fig)

    def calibrate(_):
        sigma = calibrate_noise_multiplier(target_epsilon=target.value, delta=d.value, sample_rate=q.value,
                                           steps=t.value)
        # up to the slider's grid: the browser snaps σ to it, and snapping down would overshoot the target ε
        s.value = s.base ** (s.min + math.ceil((math.log(sigma, s.base) - s.min) / s.step - 1e-9) * s.step)

    for widget in (s, q, t, d):
        widget.observe(show, names="value")
    solve.on_click(calibrate)
    box = w.VBox([w.HBox([s, q]), w.HBox([t, d]), w.HBox([target, solve]), text, image])
    display(box)
    show()
    return box


def _attacks(results: Results) -> dict[tuple[str, str], str]:
    """(C, σ) → image name of the one-round, round-1 cosine attacks stored in a privacy-evaluation run."""
    out = {}
    for name in results.images:
        if name.startswith("cosine, one-round, round 1, "):
            c_part, s_part = name.split(", ")[3:5]
            out[(c_part.removeprefix("C = "), s_part.removeprefix("σ = "))] = name
    if not out:
        raise ValueError("these results hold no stored reconstructions (run the privacy_eval chapter first)")
    return out


def _same(value: Any, text: str) -> bool:
    try:
        return float(value) == float(text)
    except (TypeError, ValueError):
        return str(value) == text


def _order(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)  # "median" after the numbers


def leakage_figure(results: Results, bound: str | None = None, sigma: str | None = None, *, columns: int = 8
                   ) -> plt.Figure:
    """Real images above the reconstructions of one stored attack (default: the smallest C and σ stored), with
    its PSNR from Table 4.1 in the title."""
    attacks = _attacks(results)
    if bound is None or sigma is None:
        bound, sigma = min(attacks, key=lambda k: (_order(k[0]), _order(k[1])))
    if (bound, sigma) not in attacks:
        raise ValueError(f"no stored attack at C = {bound}, σ = {sigma}; stored: {sorted(attacks)}")
    metrics = next((r for r in results.tables.get("T4.1", {}).get("rows", [])
                    if _same(r.get("C"), bound) and _same(r.get("sigma"), sigma)), None)
    extra = f", PSNR {metrics['ours']:.2f} dB" if metrics and metrics.get("ours") is not None else ""
    return image_grid(results, ["truth", attacks[(bound, sigma)]], labels=["real images", "reconstruction"],
                      columns=columns, title=f"Reconstruction at C = {bound}, σ = {sigma}{extra}")


def leakage_explorer(results: Results) -> Any:
    """A widget: choose C and σ among the run's stored attacks; shows :func:`leakage_figure` (None in headless
    builds)."""
    attacks = _attacks(results)
    if _headless():
        return None
    import ipywidgets as w
    from IPython.display import display

    bounds = sorted({c for c, _ in attacks}, key=_order)
    sigmas = sorted({s for _, s in attacks}, key=_order)
    c = w.Dropdown(options=bounds, value=bounds[0], description="C")
    s = w.Dropdown(options=sigmas, value=sigmas[0], description="σ")
    text, image = w.HTML(), w.HTML()

    @_serialised
    def show(*_):
        if (c.value, s.value) not in attacks:
            text.value = f"no stored attack at C = {c.value}, σ = {s.value}; stored: {sorted(attacks)}"
            return
        text.value = ""
        image.value = _img(leakage_figure(results, c.value, s.value))

    c.observe(show, names="value")
    s.observe(show, names="value")
    box = w.VBox([w.HBox([c, s]), text, image])
    display(box)
    show()
    return box


#: the unlearning figure's panels: column -> axis label
UNLEARNING_PANELS = {"rounds": "rounds after the request", "acc_forgotten": "accuracy on the forgotten clients",
                     "acc_remaining": "accuracy on the remaining clients",
                     "relative_kl": "KL to SCRATCH / another retraining's"}


def unlearning_figure(rows: list[dict], *, group: str, title: str) -> plt.Figure:
    """One panel per :data:`UNLEARNING_PANELS` column present in ``rows``: a bar per scheme and ``group``."""
    shown = [(k, v) for k, v in UNLEARNING_PANELS.items() if any(r.get(k) is not None for r in rows)]
    fig, axes = panels(1, len(shown), squeeze=False)
    for ax, (key, label) in zip(axes[0], shown):
        grouped_bars(rows, group, "scheme", key, ax=ax, ylabel=label)
        ax.get_legend().remove()
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 3))
    fig.suptitle(title)
    return fig


def forgotten_class_figure(results: Results) -> plt.Figure:
    """The unlearning explorer's static view: the SIFU chapter's Fig. 6 on its first dataset (one request, the
    clients of class k)."""
    dataset = results.config["setups"][0]["dataset"]
    rows = [{"class": r["class"], "scheme": r["scheme"], "rounds": r["ours"], "acc_forgotten": r["acc_forgotten"]}
            for r in results.tables[f"F6_{dataset}"]["rows"]]
    return unlearning_figure(rows, group="class", title=f"Forgetting the clients of one class ({dataset}, Fig. 6)")


def _request_options(num_clients: int) -> list[tuple[str, tuple[int, ...]]]:
    """The explorer's choices: every class's clients {10i + k} (the chapter's requests), then single clients."""
    groups = [(f"the {num_clients // 10} clients of class {k}", tuple(range(k, num_clients, 10))) for k in range(10)]
    return groups + [(f"client {i} alone (class {i % 10})", (i,)) for i in range(num_clients)]


def unlearning_explorer(results: Results, *, progress: bool = True) -> Any:
    """A widget: pick the clients to forget and the schemes, press the button, and the SIFU chapter's federation
    (same configuration and seed, trained once when the explorer opens, with a progress bar if ``progress``)
    serves that request with each scheme and the two controls; shows :func:`unlearning_figure` and the rows (None
    in headless builds)."""
    if results.chapter != "sifu":
        raise ValueError(f"results must come from the sifu chapter, got {results.chapter!r}")
    if _headless():
        return None
    import ipywidgets as w
    from IPython.display import display

    from fedlib.experiments.sifu import UnlearningLab

    print("training the chapter's federation once (seconds to a minute) ...")
    lab = UnlearningLab.from_results(results, progress=progress)
    options = _request_options(lab.setup.num_clients)
    forget = w.Dropdown(options=options, value=options[0][1], description="forget")
    schemes = w.SelectMultiple(options=UnlearningLab.SCHEMES, value=UnlearningLab.SCHEMES, description="schemes")
    go = w.Button(description="unlearn")
    image, table = w.HTML(), w.HTML()

    @_serialised
    def serve(_=None):
        label = next(k for k, v in options if v == forget.value)
        go.description, go.disabled = "serving the request ...", True
        try:
            rows = lab.forget(list(forget.value), tuple(schemes.value))
        except ValueError as err:  # e.g. no scheme selected: say so where the table goes
            table.value = f"<p><b>Cannot serve this request:</b> {html.escape(str(err))}</p>"
            return
        finally:
            go.description, go.disabled = "unlearn", False
        for r in rows:
            r["request"] = label
        table.value = rows_html(f"Forgetting {label}", rows)
        image.value = _img(unlearning_figure(rows, group="request", title=f"{lab.setup.dataset}: forgetting {label}"))

    go.on_click(serve)
    box = w.VBox([w.HBox([forget, schemes]), go, image, table])
    display(box)
    serve()
    return box
