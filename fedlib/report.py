"""The reproduction report: per chapter and in total, how many of the sources' result statements our runs reproduce,
do not reproduce, or leave inconclusive at their scale — in quick mode (the registered verdicts of a seed sweep,
:mod:`fedlib.ledger`) and in full mode (the one full run, where it exists) — then each chapter's paper tables with
the paper's numbers, ours in quick mode and ours in full mode, and its ledger. Everything is read from the results
files (``results/<mode>/<chapter>.json``), the registered verdicts and the chapters' ledgers.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from fedlib.ledger import (MODE_ONLY, NOT_RUN, VERDICTS, Claim, counts, format_value, paper_verdicts,
                           registered_verdicts)
from fedlib.results import CHAPTERS, MODES, Results, load_results, results_dir

#: chapter id -> title as the book's table of contents shows it
TITLES = {"foundations": "Foundations", "dpfl": "DPFL: LDP-FL and LCDP-FL", "fednore": "Fed-nore",
          "privacy_eval": "Privacy evaluation", "adpdfl": "ADPDFL", "sifu": "SIFU",
          "deniability": "Plausible deniability", "flz": "Contribution model (FLZ)", "audit": "Auditing our claims"}


def ledger_of(chapter: str) -> list[Claim]:
    """The chapter's ledger (``LEDGER`` of its experiments module)."""
    from fedlib.experiments import CHAPTER_MODULES

    if chapter not in CHAPTER_MODULES:
        raise ValueError(f"chapter must be one of {CHAPTERS}, got {chapter!r}")
    return list(getattr(importlib.import_module(CHAPTER_MODULES[chapter]), "LEDGER", []))


def paper_values_of(chapter: str) -> dict[str, float]:
    """The chapter's claims measured on the paper's own numbers (its ``paper_values()``; empty where it has none)."""
    from fedlib.experiments import chapter_module

    values = getattr(chapter_module(chapter), "paper_values", None)
    return {} if values is None else values()


def _load(chapter: str, mode: str, root: str | Path | None) -> Results | str | None:
    """The results, None if the file does not exist, or a one-line reason if it is unreadable."""
    try:
        return load_results(chapter, mode, root)
    except FileNotFoundError:
        return None
    except ValueError as err:
        return f"unreadable: {err}"


def _machine(env: dict[str, str]) -> str:
    """Where a run ran, from its results file: threads, cores, CPU model and kernels (files written since
    2026-12-07 record them), torch and GPU."""
    gpu = env.get("cuda", "none")
    cpu = " ".join(env[k] for k in ("cpu_model", "cpu_capability") if env.get(k))
    return (f"{env.get('threads', '?')} thread(s) of {env.get('cpus', '?')} CPU(s)" + (f" ({cpu})" if cpu else "")
            + f", torch {env.get('torch', '?')}" + ("" if gpu == "none" else f", {gpu}"))


def ledger_rows(chapter: str, root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per claim and setting: the paper's words and evidence, the quick verdict registered by the seed sweep
    (with the spread of the measured values), this quick run's value, and the full run's value and verdict."""
    ledger = ledger_of(chapter)
    registered = registered_verdicts(chapter, ledger)
    own = paper_verdicts(ledger, paper_values_of(chapter))
    runs = {mode: _load(chapter, mode, root) for mode in MODES}
    entries = {mode: {c["key"]: c for c in r.claims} if isinstance(r, Results) else {} for mode, r in runs.items()}
    rows = []
    for claim in ledger:
        for setting in claim.settings:
            key = claim.key(setting)
            reg = registered.get(key)
            quick, full = entries["quick"].get(key), entries["full"].get(key)
            spread = reg.spread if reg is not None else None
            rows.append({
                "key": key, "claim": claim.id, "setting": setting, "kind": claim.kind, "paper": claim.paper,
                "evidence": claim.evidence, "metric": claim.metric, "note": claim.note,
                "test": f"{claim.direction} {format_value(claim.threshold, claim.unit).lstrip('+')}",
                "paper's numbers": "–" if key not in own else
                f"{format_value(own[key][0], claim.unit)}: {own[key][1]}",
                "quick": reg.verdict if reg is not None else claim.mode_only("quick", setting) or "no sweep yet",
                "quick spread": "–" if spread is None else " … ".join(format_value(v, claim.unit) for v in
                                                                     (spread[0], spread[2])),
                "quick runs": "" if reg is None else ", ".join(f"{n} {v}" for v, n in reg.counts.items()),
                "this run": "not run" if quick is None else format_value(quick["value"], claim.unit),
                "this run agrees": None if quick is None or reg is None or reg.verdict not in VERDICTS[:2]
                else quick["outcome"] == reg.verdict,
                "full": claim.mode_only("full", setting) or ("not run" if full is None else full["outcome"]),
                "full value": "–" if full is None else ("≤ " if full.get("at_most") else "")
                + format_value(full["value"], claim.unit),
                "values": {"quick": None if spread is None else spread[1], "full": None if full is None else
                           full["value"]},  # the sweep's median and the full run's value, as numbers
            })
    return rows


def chapter_counts(chapter: str, root: str | Path | None = None) -> dict[str, Any]:
    """Reproduced / not reproduced / inconclusive among the chapter's claims (facts excluded), for quick mode (the
    registered verdicts) and full mode (the full run's outcomes, "not run" for units not finished); the number of
    facts; and how many claims this quick run contradicts (a decisive registered verdict it does not give)."""
    rows = [r for r in ledger_rows(chapter, root) if r["kind"] == "claim"]
    quick = counts(r["quick"] if r["quick"] in VERDICTS else NOT_RUN for r in rows if r["quick"] not in MODE_ONLY)
    full = counts(r["full"] if r["full"] in VERDICTS else NOT_RUN for r in rows if r["full"] not in MODE_ONLY)
    return {"quick": quick, "full": full, "claims": len(rows),
            "facts": sum(r["kind"] == "fact" for r in ledger_rows(chapter, root)),
            "contradicted": sum(r["this run agrees"] is False for r in rows)}


def _count_text(c: dict[str, int]) -> str:
    text = " / ".join(str(c.get(v, 0)) for v in VERDICTS)
    return text + (f" ({c[NOT_RUN]} not run)" if c.get(NOT_RUN) else "")


def _compute_text(units: dict[str, Any]) -> str:
    """The units' compute time, split by device when some ran on a GPU: "155 s of compute" or
    "16,001 s of compute: 22 units 15,234 s on cpu, 11 units 467 s on cuda"."""
    seconds, devices = units.get("seconds", {}), units.get("devices", {})
    by: dict[str, list[float]] = {}
    for unit, took in seconds.items():
        by.setdefault(devices.get(unit, "cpu"), []).append(took)
    text = f"{sum(seconds.values()):,.0f} s of compute"
    if set(by) - {"cpu"}:
        text += ": " + ", ".join(f"{len(t)} unit{'s' * (len(t) != 1)} {sum(t):,.0f} s on {d}"
                                 for d, t in sorted(by.items()))
    return text


def chapter_status(chapter: str, root: str | Path | None = None) -> dict[str, Any]:
    """One row of the status table: counts per mode, the runs behind them, and the full run's units."""
    if chapter not in CHAPTERS:
        raise ValueError(f"chapter must be one of {CHAPTERS}, got {chapter!r}")
    c = chapter_counts(chapter, root)
    row: dict[str, Any] = {"chapter": TITLES[chapter], "claims": c["claims"],
                           "quick: reproduced / not / inconclusive": _count_text(c["quick"]),
                           "full: reproduced / not / inconclusive": _count_text(c["full"])}
    for mode in MODES:
        res = _load(chapter, mode, root)
        if res is None:
            row[f"{mode} run"] = "not run"
        elif isinstance(res, str):
            row[f"{mode} run"] = res
        else:
            units = res.units
            blocked = f", {len(units['blocked'])} blocked by data" if units.get("blocked") else ""
            if mode == "full" and units.get("total"):  # the units' compute: the assembling run may have computed none
                row[f"{mode} run"] = (f"seed {res.seed}; units {units['done']}/{units['total']} "
                                      f"({_compute_text(units)}){blocked}; assembled on {_machine(res.environment)}")
            else:
                row[f"{mode} run"] = f"seed {res.seed}, {res.elapsed_s:.0f} s on {_machine(res.environment)}"
    if c["contradicted"]:
        row["quick run"] += f"; {c['contradicted']} claim(s) disagree with the registered verdict"
    return row


def status_table(root: str | Path | None = None) -> list[dict[str, Any]]:
    """:func:`chapter_status` for every chapter."""
    return [chapter_status(c, root) for c in CHAPTERS]


def heldout_rows(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per chapter and held-out seed (``python -m fedlib heldout``, :func:`fedlib.sweep.heldout`): how many
    decisive registered verdicts a run at a seed no sweep has seen tested, and which it contradicted. A record that
    keeps the run's values is tested against today's registry, on the claims it has values for (a claim added since
    was not tested by it); an older one shows what it found against the registry of its day (``tested against``)."""
    from fedlib.sweep import contradicted, decisive

    rows = []
    for path in sorted((Path(root or results_dir()) / "heldout").glob("seed*.json")):
        record = json.loads(path.read_text())
        for chapter, entry in record["chapters"].items():
            current = "values" in entry
            disagree = contradicted(chapter, entry["values"], recorded_only=True) if current else entry["disagree"]
            rows.append({"chapter": TITLES[chapter], "seed": record["seed"],
                         "decisive verdicts": decisive(chapter, entry["values"]) if current else entry["decisive"],
                         "contradicted": len(disagree), "which": "; ".join(disagree) or "–",
                         "tested against": "today's registry" if current else "the registry when it ran",
                         "run": f"{entry['elapsed_s']:.0f} s, {_machine(entry['environment'])}"})
    return sorted(rows, key=lambda r: (list(TITLES.values()).index(r["chapter"]), r["seed"]))


def decisive_in_both(root: str | Path | None = None) -> list[dict[str, Any]]:
    """Every claim whose registered quick verdict and full verdict are both decisive, with ``agree``: where they
    differ, the paper's configuration reverses what the quick scale says, and only the full verdict speaks for the
    paper."""
    rows = []
    for chapter in CHAPTERS:
        for r in ledger_rows(chapter, root):
            if r["kind"] == "claim" and r["quick"] in VERDICTS[:2] and r["full"] in VERDICTS[:2]:
                rows.append({"chapter": TITLES[chapter],
                             "claim": r["claim"] + ("" if r["setting"] in (None, "") else f" ({r['setting']})"),
                             "quick verdict": r["quick"], "quick spread": r["quick spread"],
                             "full value": r["full value"], "full verdict": r["full"],
                             "agree": r["quick"] == r["full"]})
    return rows


#: the paper tables whose ``paper`` and ``ours`` columns are both test accuracies (fractions), per chapter
ACCURACY_TABLES: dict[str, tuple[str, ...]] = {
    "foundations": ("T3.3",), "dpfl": ("T3.1",), "fednore": ("T3.3", "T3.2"),
    "adpdfl": ("T5.1", "T5.2", "T5.3", "T5.4"), "deniability": ("T2", "T3"), "flz": ("T4.2", "T4.5", "T4.6")}
#: how close a full-mode accuracy must be to the paper's to count as matching it: two percentage points
AGREEMENT = 0.02


def paper_agreement(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per accuracy table of the papers (:data:`ACCURACY_TABLES`) that the committed full runs hold: how
    many cells hold both numbers, how many of ours lie within :data:`AGREEMENT` of the paper's, the mean gap and the
    largest one (signed, ours − paper, with the row it is in). Numbers only, no verdict: a table's ledger claim
    (e.g. ``t53_values``) gives the verdict with its margin."""
    rows = []
    for chapter, tids in ACCURACY_TABLES.items():
        full = _load(chapter, "full", root)
        if not isinstance(full, Results):
            continue
        for tid in tids:
            if tid not in full.tables:
                continue
            table = full.tables[tid]["rows"]
            cells = [(row, row["ours"] - row["paper"]) for row in table
                     if all(isinstance(row.get(k), (int, float)) and not isinstance(row.get(k), bool)
                            for k in ("paper", "ours"))]
            within = sum(abs(gap) <= AGREEMENT + 1e-12 for _, gap in cells)
            entry = {"chapter": TITLES[chapter], "table": tid, "cells with both": f"{len(cells)} of {len(table)}",
                     f"within {AGREEMENT * 100:.0f} pp": within,
                     f"more than {AGREEMENT * 100:.0f} pp off": len(cells) - within}
            entry["mean |ours − paper| (pp)"] = (round(100 * sum(abs(g) for _, g in cells) / len(cells), 2)
                                                 if cells else None)
            if cells:
                row, gap = max(cells, key=lambda c: abs(c[1]))
                label = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
                                  if "ours" not in k and "paper" not in k and isinstance(v, (str, int, float))
                                  and not isinstance(v, bool))
                entry["largest gap"] = f"{100 * gap:+.1f} pp ({label})"
            else:
                entry["largest gap"] = "–"
            rows.append(entry)
    return rows


def paper_self_check(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per chapter whose claims can be measured on the paper's own reported numbers: how many such claim
    settings read reproduced, inconclusive and not reproduced on our own tests, which do not read reproduced (a
    reading stricter than the paper, or a paper whose numbers contradict its words: each claim's note says which),
    and how many of our *not reproduced* verdicts (quick / full) the paper's own numbers do not pass either, on the
    same side (for a two-sided claim, ours far above and the paper's far below are not the same failure), and how
    many of our *reproduced* verdicts the paper's own numbers fail (our runs meet the words where its tables do
    not)."""
    rows = []
    for chapter in CHAPTERS:
        own = paper_verdicts(ledger_of(chapter), paper_values_of(chapter))
        if not own:
            continue
        verdicts = [v for _, v in own.values()]
        failing = Counter(key.split("/")[0] for key, (_, v) in own.items() if v == "not reproduced")
        rows_own = [r for r in ledger_rows(chapter, root) if r["key"] in own]
        shared = {mode: sum(r[mode] == "not reproduced" and own[r["key"]][1] != "reproduced"
                            and (r["values"][mode] or 0.0) * own[r["key"]][0] > 0 for r in rows_own)
                  for mode in MODES}
        beyond = {mode: sum(r[mode] == "reproduced" and own[r["key"]][1] == "not reproduced" for r in rows_own)
                  for mode in MODES}
        rows.append({"chapter": TITLES[chapter], "claim settings with the paper's numbers": len(own),
                     **{v: verdicts.count(v) for v in VERDICTS},
                     "not reproduced on the paper's own numbers (claim: settings)": "; ".join(
                         f"{cid}: {n}" for cid, n in failing.items()) or "–",
                     "our 'not reproduced' the paper's own numbers fail too, on the same side (quick / full)":
                     " / ".join(str(shared[mode]) for mode in MODES),
                     "our 'reproduced' the paper's own numbers fail (quick / full)":
                     " / ".join(str(beyond[mode]) for mode in MODES)})
    return rows


def totals(root: str | Path | None = None) -> dict[str, dict[str, int]]:
    """The counts of every chapter added up, per mode."""
    out: dict[str, dict[str, int]] = {mode: {} for mode in MODES}
    for chapter in CHAPTERS:
        c = chapter_counts(chapter, root)
        for mode in MODES:
            for verdict, n in c[mode].items():
                out[mode][verdict] = out[mode].get(verdict, 0) + n
    return out


def paper_tables(chapter: str, root: str | Path | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    """Every paper table (id ``T…``) of a chapter's quick run as (caption, rows), with ``ours`` renamed
    ``ours (quick)``, the full run's ``ours`` beside it as ``ours (full)`` and ``Δ (full − paper)`` (quick mode's
    scale differs from the paper's, so only the full run is compared in numbers).

    Rows are matched by what names them (:func:`_same_row`), not by position: a full run holds rows that quick
    mode does not run (e.g. DPFL's 1,000 clients) and may lack some; those rows appear with the other mode's cells
    empty, in the full run's order, then quick mode's own."""
    quick = load_results(chapter, "quick", root)
    full = _load(chapter, "full", root)
    full = full if isinstance(full, Results) else None
    out = []
    for tid, table in quick.tables.items():
        if not tid.startswith("T"):
            continue
        quick_rows = table["rows"]
        full_rows = full.tables.get(tid, {}).get("rows", []) if full is not None else []
        unused = list(range(len(quick_rows)))
        pairs: list[tuple[dict | None, dict | None]] = []
        for frow in full_rows:
            k = next((i for i in unused if _same_row(quick_rows[i], frow)), None)
            if k is not None:
                unused.remove(k)
            pairs.append((None if k is None else quick_rows[k], frow))
        pairs += [(quick_rows[i], None) for i in unused]
        rows = []
        for qrow, frow in pairs:
            # a row only the full run holds shows the paper's setting from the full run (e.g. its client count)
            new = {key: value for key, value in qrow.items() if key != "ours"} if qrow is not None else \
                {key: value for key, value in frow.items() if "ours" not in key}
            new["ours (quick)"] = None if qrow is None else qrow.get("ours")
            new["ours (full)"] = None if frow is None else frow.get("ours")
            paper, ours = new.get("paper"), new["ours (full)"]
            numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (paper, ours))
            new["Δ (full − paper)"] = ours - paper if numeric else None
            rows.append(new)
        note = " (ours (full): the paper's configuration, from the committed full run)" if full_rows else ""
        out.append((table["title"] + note, rows))
    return out


def _identity_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The columns that name a paper-table row in either mode: its text labels and the paper's numbers; never ours
    (their scale, and our derived settings such as a noise std, change with the mode)."""
    return {k: v for k, v in row.items() if "ours" not in k and ("paper" in k or isinstance(v, str))}


def _same_row(quick: dict[str, Any], full: dict[str, Any]) -> bool:
    """Whether two rows name the same setting: the same labels and paper numbers; a row the paper does not have
    (no label, no paper number: one of ours) only when every column that is not ours agrees too."""
    identity = _identity_fields(quick)
    if identity != _identity_fields(full):
        return False
    if any(v is not None for v in identity.values()):
        return True
    return {k: v for k, v in quick.items() if "ours" not in k} == {k: v for k, v in full.items() if "ours" not in k}


def _root(results: Results) -> Path:
    """The results root a chapter's run was written under (the default root if it was not written)."""
    from fedlib.results import results_dir

    return results.path().parents[1] if results.path().exists() else Path(results_dir())


def full_text(results: Results, key: str) -> str:
    """The committed full run's value and verdict of claim ``key`` (e.g. "-86.9 pp, not reproduced"), or
    "not run yet": for a chapter's prose next to the quick run's glued numbers."""
    row = next((r for r in ledger_rows(results.chapter, _root(results)) if r["key"] == key), None)
    if row is None:
        raise KeyError(f"{results.chapter} has no claim {key!r}")
    return f"{row['full value']}, {row['full']}" if row["full"] in VERDICTS else "not run yet"


def quick_vs_full_html(results: Results) -> str:
    """What changed between quick and full mode: every claim the committed full run has measured, with the quick
    verdict (registered), this quick run's value, and the full run's value and verdict; or a line saying how far the
    full run has got."""
    from fedlib.results import rows_html

    root = _root(results)
    full = _load(results.chapter, "full", root)
    rows = [{"claim": r["claim"] + ("" if r["setting"] in (None, "") else f" ({r['setting']})"),
             "quick verdict": r["quick"], "quick (this run)": r["this run"], "full": r["full value"],
             "full verdict": r["full"]}
            for r in ledger_rows(results.chapter, root) if r["full"] in VERDICTS]
    if not isinstance(full, Results) or not rows:
        units = full.units if isinstance(full, Results) else {}
        done = f" ({units.get('done', 0)} of {units['total']} units finished)" if units.get("total") else ""
        return (f"<p><em>Full mode (the source's own configuration) has not measured any of this chapter's claims "
                f"yet{done}; see the Running guide to run its units.</em></p>")
    u = full.units
    caption = ("Quick and full mode side by side: the claims the committed full run has measured"
               + (f" ({u['done']} of {u['total']} units finished)" if u.get("total") else ""))
    return rows_html(caption, rows)


def ledger_html(results: Results) -> str:
    """A chapter's ledger as an HTML table for its page: the paper's statement and evidence, our test, the verdict
    registered by the quick-mode seed sweep with its spread, this run's value, and the full run's verdict."""
    from fedlib.ledger import load_registry
    from fedlib.results import rows_html

    root = _root(results)
    registry = load_registry(results.chapter)
    swept = "no sweep registered" if registry is None else (
        f"seeds {', '.join(map(str, registry['seeds']))}; {' and '.join(map(str, registry['threads']))} thread(s)")
    rows = [{"statement (source)": f"{r['paper']} ({r['evidence']})" + (" [fact]" if r["kind"] == "fact" else ""),
             "setting": r["setting"] or "–",
             "measured (our reading)": r["metric"] + (f" — {r['note']}" if r["note"] else ""), "test": r["test"],
             "the paper's own numbers on this test": r["paper's numbers"],
             f"quick verdict ({swept})": r["quick"], "quick spread": r["quick spread"],
             "this run": r["this run"], "full": r["full"], "full value": r["full value"]}
            for r in ledger_rows(results.chapter, root)]
    return rows_html("The source's statements checked on our runs; 'the paper's own numbers on this test' applies "
                     "each test to the paper's own tables where they report what it reads (where they do not pass "
                     "it, the reading is stricter than the paper or the paper contradicts its words: the note after "
                     "what we measure says which)", rows)
