"""Every chapter notebook executed by papermill in quick mode; its claims hold; the book builds with -W."""

import json
import re
from pathlib import Path

import pytest

from fedlib.report import TITLES
from fedlib.results import load_results

from helpers import check_verdicts

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CHAPTER_NOTEBOOKS = [nb for nb in NOTEBOOKS if nb.stem != "report"]  # the report reads the chapters' results


@pytest.mark.notebook
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("nb", CHAPTER_NOTEBOOKS, ids=[p.stem for p in CHAPTER_NOTEBOOKS])
def test_chapter_runs_and_its_claims_hold(nb, executed_book):
    assert executed_book["errors"][nb.stem] is None, executed_book["errors"][nb.stem]
    results = load_results(nb.stem, "quick", executed_book["results"])
    assert results.claims, "a chapter must check at least one of the paper's claims"
    check_verdicts(results)
    for name, table in results.tables.items():
        assert table["rows"], f"table {name} is empty"
        if name.startswith("T"):  # a paper table (T3.1, ...): the paper's number beside ours
            assert all("paper" in row and "ours" in row for row in table["rows"]), name


def test_committed_notebooks_are_clean_and_parametrised():
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text())["cells"]
        assert not any(c.get("outputs") for c in cells if c["cell_type"] == "code"), f"{nb.name} has outputs"
        assert any("parameters" in c.get("metadata", {}).get("tags", []) for c in cells), nb.name


def test_every_chapter_opens_in_colab_from_its_own_file():
    repo = re.search(r"url: https://github.com/(\S+)", (ROOT / "_config.yml").read_text()).group(1)
    for nb in CHAPTER_NOTEBOOKS:
        title = "".join(json.loads(nb.read_text())["cells"][0]["source"])
        badge = re.search(r"\[!\[Open in Colab\]\((.+?)\)\]\((.+?)\)", title)
        assert badge, f"{nb.name}: no Colab badge in the first cell"
        assert (nb.parent / badge.group(1)).resolve().is_file(), f"{nb.name}: badge image {badge.group(1)} missing"
        assert badge.group(2) == f"https://colab.research.google.com/github/{repo}/blob/main/notebooks/{nb.name}", nb.name


@pytest.mark.notebook
@pytest.mark.timeout(1800)
def test_book_builds_without_warnings(executed_book):
    build = executed_book["build"]
    assert build is not None, "a chapter failed to execute, so the book was not built"
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    html = ROOT / "_build" / "html"
    for nb in NOTEBOOKS:
        page = (html / "notebooks" / f"{nb.stem}.html").read_text()
        assert "Traceback" not in page and "PapermillExecutionError" not in page, nb.stem
        assert page.count("<table") >= 5, f"{nb.stem}: the results tables should render as HTML tables"
        assert "tag_injected-parameters" not in page, f"{nb.stem}: papermill's parameters cell is shown twice"
    assert list((html / "_images").glob("*.png")), "the executed chapters' figures are missing"
    assert executed_book["errors"]["report"] is None, executed_book["errors"]["report"]
    report = (html / "notebooks" / "report.html").read_text()
    for nb in CHAPTER_NOTEBOOKS:  # every chapter has landed in the report under its own heading
        assert f"{TITLES[nb.stem]}<a class=\"headerlink\"" in report, nb.stem
    assert "disagree with the registered verdict" not in report and "Traceback" not in report
    for full in sorted((ROOT / "results" / "full").glob("*.json")):  # committed full runs reach the report
        row = re.search(f"<tr><td>{re.escape(TITLES[full.stem])}</td>(.*?)</tr>", report)
        assert row and "not run" not in row.group(1).split("</td><td>")[-1], f"{full.stem}: full run not in the report"
