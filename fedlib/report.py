"""The reproduction report: one status line per chapter, then each chapter's paper tables with the paper's numbers,
ours in quick mode and, where a full run was produced, in full mode, and every claim's verdict — all read from the
results files the chapters write (``results/<mode>/<chapter>.json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedlib.results import CHAPTERS, MODES, Results, load_results


def _load(chapter: str, mode: str, root: str | Path | None) -> Results | None:
    try:
        return load_results(chapter, mode, root)
    except FileNotFoundError:
        return None


def _machine(env: dict[str, str]) -> str:
    """Where a run ran, from its results file: threads, cores, torch and GPU (older files lack the core count)."""
    gpu = env.get("cuda", "none")
    return (f"{env.get('threads', '?')} thread(s) of {env.get('cpus', '?')} CPU(s), torch {env.get('torch', '?')}"
            + ("" if gpu == "none" else f", {gpu}"))


def chapter_status(chapter: str, root: str | Path | None = None) -> dict[str, Any]:
    """One line: per mode, how many claims came out as expected (held, or documented as not reproduced), with
    the seed, the run time and the machine; and an overall status."""
    if chapter not in CHAPTERS:
        raise ValueError(f"chapter must be one of {CHAPTERS}, got {chapter!r}")
    row: dict[str, Any] = {"chapter": chapter}
    surprises = None
    for mode in MODES:
        res = _load(chapter, mode, root)
        if res is None:
            row[mode] = "not run"
            continue
        expected = sum(c["holds"] == c.get("expected", True) for c in res.claims)
        documented = sum(not c.get("expected", True) for c in res.claims)
        row[mode] = (f"{expected}/{len(res.claims)} claims as expected"
                     + (f" ({documented} documented as not reproduced)" if documented else "")
                     + f"; seed {res.seed}, {res.elapsed_s:.0f} s on {_machine(res.environment)}")
        surprises = (surprises or 0) + len(res.surprises())
    row["status"] = ("no results yet" if surprises is None else
                     "every claim as expected" if surprises == 0 else f"{surprises} claim(s) differ from expected")
    return row


def status_table(root: str | Path | None = None) -> list[dict[str, Any]]:
    """:func:`chapter_status` for every chapter."""
    return [chapter_status(c, root) for c in CHAPTERS]


def paper_tables(chapter: str, root: str | Path | None = None) -> list[tuple[str, list[dict[str, Any]]]]:
    """Every paper table (id ``T…``) of a chapter's quick run as (caption, rows), with ``ours`` renamed
    ``ours (quick)`` and, where the full run has the same table with as many rows, ``ours (full)`` beside it."""
    quick = load_results(chapter, "quick", root)
    full = _load(chapter, "full", root)
    out = []
    for tid, table in quick.tables.items():
        if not tid.startswith("T"):
            continue
        full_rows = full.tables.get(tid, {}).get("rows", []) if full is not None else []
        match = len(full_rows) == len(table["rows"])
        rows = []
        for k, row in enumerate(table["rows"]):
            new = {key: value for key, value in row.items() if key != "ours"}
            new["ours (quick)"] = row.get("ours")
            if match:
                new["ours (full)"] = full_rows[k].get("ours")
            rows.append(new)
        note = "" if full is None else "" if match else " (full run: see its results file; rows differ)"
        out.append((f"{chapter} {tid}: {table['title']}{note}", rows))
    return out
