"""Every page of the built book opened in headless Chromium (Playwright driving the system's browser): a title,
no traceback in any output, every image loaded, every internal link pointing at a file that exists. A screenshot
per page lands in ``_build/screenshots/`` (CI artifact)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]


def chromium() -> str | None:
    """``$FEDLIB_CHROMIUM``, else the first Chromium on PATH."""
    return os.environ.get("FEDLIB_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.mark.notebook
@pytest.mark.timeout(1800)  # may be the test that builds the shared executed book (about 13 minutes on 2 cores)
def test_every_page_renders_in_a_real_browser(executed_book):
    assert executed_book["build"] is not None and executed_book["build"].returncode == 0, "the book did not build"
    browser_path = chromium()
    if browser_path is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium, or set FEDLIB_CHROMIUM)")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    html = ROOT / "_build" / "html"
    pages = sorted((html / "notebooks").glob("*.html")) + sorted((html / "book").glob("*.html"))
    shots = ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        for path in pages:
            name = f"{path.parent.name}/{path.stem}"
            page.goto(path.as_uri(), wait_until="load")
            if not page.title().strip() or page.locator("h1").count() == 0:
                problems.append(f"{name}: no title or no heading")
            outputs = " ".join(page.locator(".cell_output").all_inner_texts())
            if "Traceback (most recent call last)" in outputs or page.locator(".cell_output .traceback").count():
                problems.append(f"{name}: an output cell holds a traceback")
            broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                                   ".map(i => i.getAttribute('src'))")
            problems += [f"{name}: image not loaded: {src}" for src in broken]
            for href in set(page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")):
                url = urlparse(href)
                if url.scheme == "file" and not Path(unquote(url.path)).exists():
                    problems.append(f"{name}: broken link {href}")
            page.screenshot(path=str(shots / f"{path.parent.name}-{path.stem}.png"))
        browser.close()
    assert len(pages) >= 10, f"expected every chapter and guide page, found {len(pages)}"
    assert not problems, "\n".join(problems)
