"""Every page of the built book opened in headless Chromium (Playwright driving the system's browser): a title,
no traceback anywhere, every image loaded, every internal link pointing at a file that exists, math typeset from
the build's own MathJax (no CDN), no tqdm widget views saved into a page, no absolute paths of the machine that
built it, no table wider than the text column without a visible scroll cue, no figure shown smaller than it was
drawn, no display equation cut off or failing to typeset, text legible in light and dark mode (WCAG contrast ≥ 4.5:1),
one search box, and no JavaScript error. A screenshot per page lands in
``_build/screenshots/`` (CI artifact).

:func:`page_problems` holds the checks of one page, so they can also be run on a build made with
``scripts/build_book.py --no-execute`` (``python tests/test_browser.py``)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: how ipywidgets (and so tqdm.notebook) save a widget into a notebook output
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: an absolute path of the building machine in text a reader sees (``/path/to/data`` placeholders are fine)
ABSOLUTE_PATH = re.compile(r"(?<![\w.~$])/(?:tmp|work|home|root|Users|private/var)/\S*")
#: TeX delimiters MathJax should have replaced
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$")

#: the page's text as a reader sees it: everything in the article except code inputs (which may show
#: regular expressions or shell lines), scripts and typeset math
VISIBLE_TEXT_JS = """() => {
  const root = document.querySelector("article") || document.querySelector("main") || document.body;
  const skip = "script, style, noscript, mjx-container, mjx-assistive-mml, .cell_input, .highlight, pre, code, textarea";
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const parts = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement && !node.parentElement.closest(skip)) parts.push(node.textContent);
  }
  return parts.join(" ");
}"""

#: every table wider than the text column, and whether a box around it scrolls it with a visible cue
WIDE_TABLES_JS = """() => {
  const article = document.querySelector("article.bd-article") || document.querySelector("article")
                  || document.querySelector("main");
  const column = article.getBoundingClientRect().width;
  const out = [];
  for (const table of article.querySelectorAll("table")) {
    if (table.scrollWidth <= column + 1) continue;
    let box = table.parentElement, scrolls = null;
    while (box && box !== article) {
      const overflow = getComputedStyle(box).overflowX;
      if ((overflow === "auto" || overflow === "scroll") && box.getBoundingClientRect().width <= column + 1) {
        scrolls = box;
        break;
      }
      box = box.parentElement;
    }
    const caption = table.querySelector("caption");
    const cueText = caption ? getComputedStyle(caption, "::after").content : "none";
    const style = scrolls ? getComputedStyle(scrolls) : null;
    const fade = style ? (style.maskImage || style.webkitMaskImage || "none") : "none";
    out.push({
      name: (caption ? caption.textContent : (table.querySelector("th") || table).textContent).slice(0, 60),
      width: Math.round(table.scrollWidth), column: Math.round(column),
      scrolls: scrolls !== null,
      cue: scrolls !== null && scrolls.classList.contains("is-overflowing") && fade.includes("gradient")
           && (caption === null || cueText.includes("scroll")),
    });
  }
  return out;
}"""


def chromium() -> str | None:
    """``$FEDLIB_CHROMIUM``, else the first Chromium on PATH."""
    return os.environ.get("FEDLIB_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def book_pages(html: Path) -> list[Path]:
    """The chapters' and the guides' pages of a built book."""
    return sorted((html / "notebooks").glob("*.html")) + sorted((html / "book").glob("*.html"))


#: figures in cell outputs that the page shows smaller than they were drawn (their text shrinks with them)
SHRUNK_FIGURES_JS = """() => Array.from(document.querySelectorAll(".cell_output img")).map(i => ({
  src: (i.getAttribute("src") || "").slice(0, 60),
  drawn: parseFloat(i.style.width) || Number(i.getAttribute("width")) || i.naturalWidth,
  shown: i.getBoundingClientRect().width,
})).filter(f => f.shown > 0 && f.shown < 0.95 * f.drawn)"""


#: text in the article whose contrast with the background behind it is below WCAG AA (4.5:1)
LOW_CONTRAST_JS = r"""() => {
  const parse = c => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null;
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = rgb => rgb.reduce((sum, v, i) => { v /= 255;
    return sum + [0.2126, 0.7152, 0.0722][i] * (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4); }, 0);
  const background = el => { for (let e = el; e; e = e.parentElement) {
    const c = parse(getComputedStyle(e).backgroundColor); if (c && c[3] > 0.5) return c; } return [255, 255, 255, 1]; };
  const root = document.querySelector("article.bd-article") || document.querySelector("article") || document.body;
  const out = [];
  for (const el of root.querySelectorAll("p, li, caption, figcaption, td, th, dt, dd, h1, h2, h3, summary, span")) {
    const own = Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join("").trim();
    if (!own || el.closest("mjx-container, pre, .highlight")) continue;
    const rect = el.getBoundingClientRect(), style = getComputedStyle(el), fg = parse(style.color);
    if (!fg || rect.width === 0 || rect.height === 0 || style.visibility === "hidden") continue;
    const bg = background(el), shown = fg.slice(0, 3).map((v, i) => fg[3] * v + (1 - fg[3]) * bg[i]);
    const [a, b] = [lum(shown), lum(bg.slice(0, 3))], ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) out.push({text: own.slice(0, 50), ratio: ratio});
  }
  return out;
}"""


def page_problems(page, path: Path) -> list[str]:
    """Open ``path`` in the Playwright ``page`` and list what a reader would find wrong with it."""
    name = f"{path.parent.name}/{path.stem}"
    problems = []
    source = path.read_text(encoding="utf-8")
    if WIDGET_VIEW in source:
        problems.append(f"{name}: {source.count(WIDGET_VIEW)} widget views saved in the page (tqdm bars?)")
    errors: list[str] = []

    def on_error(err) -> None:
        errors.append(str(err))

    page.on("pageerror", on_error)
    page.goto(path.as_uri(), wait_until="load")
    # MathJax typesets after the load event; wait for it where the page loads it
    page.evaluate("async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise) "
                  "await MathJax.startup.promise; }")
    if not page.title().strip() or page.locator("h1").count() == 0:
        problems.append(f"{name}: no title or no heading")
    outputs = " ".join(page.locator(".cell_output").all_inner_texts())
    text = page.evaluate(VISIBLE_TEXT_JS)
    if ("Traceback" in outputs or "Traceback (most recent call last)" in text
            or page.locator(".cell_output .traceback").count()):
        problems.append(f"{name}: a traceback is shown")
    for where, shown in (("text", text), ("an output", outputs)):
        paths = sorted(set(ABSOLUTE_PATH.findall(shown)))
        if paths:
            problems.append(f"{name}: absolute paths in {where}: {paths[:3]}")
    mathjax = page.evaluate("Array.from(document.scripts).map(s => s.src).filter(s => /mathjax/i.test(s))")
    remote = [src for src in mathjax if not src.startswith("file:")]
    if remote:
        problems.append(f"{name}: MathJax loaded from outside the build: {remote}")
    formulas = page.locator(".math").count()  # Sphinx's spans and divs of \(…\) and \[…\]
    if formulas and page.locator("mjx-container").count() == 0:
        problems.append(f"{name}: {formulas} formulas, none typeset")
    raw = RAW_TEX.findall(text)
    if raw:
        problems.append(f"{name}: {len(raw)} untypeset TeX delimiters (e.g. {raw[0]!r}) in the text")
    for table in page.evaluate(WIDE_TABLES_JS):
        if not table["cue"]:
            problems.append(f"{name}: table {table['name']!r} is {table['width']} px in a {table['column']} px "
                            "column " + ("without a visible scroll cue" if table["scrolls"] else "and overflows the page"))
    broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                           ".map(i => i.getAttribute('src'))")
    problems += [f"{name}: image not loaded: {src}" for src in broken]
    for href in set(page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")):
        url = urlparse(href)
        if url.scheme == "file" and not Path(unquote(url.path)).exists():
            problems.append(f"{name}: broken link {href}")
    for fig in page.evaluate(SHRUNK_FIGURES_JS):
        problems.append(f"{name}: figure {fig['src']!r} drawn {fig['drawn']} px wide, shown at {fig['shown']:.0f} px "
                        f"({fig['shown'] / fig['drawn']:.0%}: its text shrinks too)")
    wide_math = page.evaluate("Array.from(document.querySelectorAll('div.math')).filter("
                              "d => d.scrollWidth > d.clientWidth + 1).map(d => d.textContent.slice(0, 40))")
    problems += [f"{name}: display equation wider than the column (cut off): {m!r}" for m in wide_math]
    math_errors = page.evaluate("Array.from(document.querySelectorAll('mjx-merror'))"
                                ".map(e => e.getAttribute('data-mjx-error'))")
    problems += [f"{name}: MathJax could not typeset a formula: {e}" for e in math_errors]
    searches = page.locator(".search-button-field:visible, input[type=search]:visible").count()
    if searches > 1:
        problems.append(f"{name}: {searches} search boxes")
    for theme in ("dark", "light"):  # the theme's attribute, as its toggle sets it; light last, for the screenshot
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        faint = page.evaluate(LOW_CONTRAST_JS)
        if faint:
            worst = min(faint, key=lambda f: f["ratio"])
            problems.append(f"{name}: {len(faint)} text elements below 4.5:1 contrast in {theme} mode (worst "
                            f"{worst['ratio']:.1f}:1, {worst['text']!r})")
    page.remove_listener("pageerror", on_error)
    problems += [f"{name}: JavaScript error: {err}" for err in errors]
    return problems


def check_book(html: Path, browser_path: str, shots: Path | None = None) -> tuple[list[Path], list[str]]:
    """Run :func:`page_problems` on every page of the book built in ``html``; screenshots into ``shots``."""
    from playwright.sync_api import sync_playwright

    pages = book_pages(html)
    problems = []
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        for path in pages:
            problems += page_problems(page, path)
            if shots is not None:
                page.screenshot(path=str(shots / f"{path.parent.name}-{path.stem}.png"))
        glossary = html / "book" / "glossary.html"
        page.goto(glossary.as_uri(), wait_until="load")
        page.evaluate("async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise) "
                      "await MathJax.startup.promise; }")
        if page.locator("mjx-container").count() < 20:
            problems.append("book/glossary: fewer than 20 typeset formulas (is MathJax served from _static?)")
        browser.close()
    return pages, problems


@pytest.mark.notebook
@pytest.mark.timeout(1800)  # may be the test that builds the shared executed book (about 13 minutes on 2 cores)
def test_every_page_renders_in_a_real_browser(executed_book):
    assert executed_book["build"] is not None and executed_book["build"].returncode == 0, "the book did not build"
    browser_path = chromium()
    if browser_path is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium, or set FEDLIB_CHROMIUM)")
    pytest.importorskip("playwright.sync_api")
    pages, problems = check_book(ROOT / "_build" / "html", browser_path, ROOT / "_build" / "screenshots")
    assert len(pages) >= 10, f"expected every chapter and guide page, found {len(pages)}"
    assert not problems, "\n".join(problems)


BAD_PAGE = """<!DOCTYPE html><html><head><title>Bad page</title>
<style>article { width: 784px; } .wide { overflow-x: auto; }
html[data-theme="dark"] .dim { color: #9ca4af; background: #ced6dd; }</style></head><body><main><article class="bd-article">
<h1>Bad page</h1><p class="dim">grey on grey in dark mode</p><p>Results written to /tmp/pytest-of-root/results/quick/x.json; the rate is \\(\\sigma\\).</p>
<script type="application/vnd.jupyter.widget-view+json">{"model_id": "0"}</script>
<div class="cell_output"><pre>Traceback (most recent call last):</pre></div>
<table><caption>overflows the page</caption><tr><td style="min-width: 1500px">x</td></tr></table>
<div class="wide"><table><caption>scrolls without a cue</caption><tr><td style="min-width: 1500px">x</td></tr></table>
</div><table><caption>fits</caption><tr><td>x</td></tr></table>
<div class="cell_output"><img style="max-width: 100%" width="1500" src="data:image/png;base64,\
iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="></div>
<div class="math" style="overflow-x: auto; width: 300px"><span style="display: inline-block; width: 900px">
a wide equation</span></div>
<button class="search-button-field">Search</button><button class="search-button-field">Search</button>
<script>const THEBE_JS_URL = 1;</script><script>const THEBE_JS_URL = 2;</script>
</article></main></body></html>"""


def test_the_page_checks_catch_what_they_look_for(tmp_path):
    """Each check of :func:`page_problems` fires on a page made to fail it, and only the fitting table passes."""
    browser_path = chromium()
    if browser_path is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium, or set FEDLIB_CHROMIUM)")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    path = tmp_path / "notebooks" / "bad.html"
    path.parent.mkdir()
    path.write_text(BAD_PAGE)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
        problems = "\n".join(page_problems(browser.new_page(viewport={"width": 1280, "height": 900}), path))
        browser.close()
    for expected in ("widget views", "traceback", "absolute paths in text: ['/tmp/", "untypeset TeX",
                     "'overflows the page'", "'scrolls without a cue'", "drawn 1500 px wide, shown at 784 px",
                     "2 search boxes", "JavaScript error: ", "already been declared",
                     "display equation wider than the column", "below 4.5:1 contrast in dark mode"):
        assert expected in problems, f"{expected!r} not reported:\n{problems}"
    assert "contrast in light mode" not in problems and "'fits'" not in problems and "without a visible scroll cue" in problems and "overflows the page" in problems


if __name__ == "__main__":  # the same checks on whatever is in _build/html now (e.g. a --no-execute build)
    import sys

    found, listed = check_book(ROOT / "_build" / "html", chromium() or sys.exit("no Chromium"))
    print(f"{len(found)} pages, {len(listed)} problems", *listed, sep="\n")
    sys.exit(1 if listed else 0)
