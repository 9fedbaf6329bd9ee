"""Sphinx extension: each inline script once per page.

Under Jupyter Book 1, sphinx-thebe's and sphinx-togglebutton's inline configuration scripts reach every page's
``<head>`` twice (added under two priorities, the second time while the page is rendered), so the browser reported
"Identifier 'THEBE_JS_URL' has already been declared" on every page. After the build, this keeps the first of
identical one-line inline ``<script>`` elements in each page's head.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_INLINE = re.compile(r"^\s*<script>.*</script>\s*$")


def dedupe_head(page: str) -> str:
    """``page`` with repeated identical one-line inline scripts in its ``<head>`` removed (the first is kept)."""
    head_end = page.find("</head>")
    if head_end < 0:
        return page
    seen: set[str] = set()
    kept = []
    for line in page[:head_end].splitlines(keepends=True):
        if _INLINE.match(line):
            if line.strip() in seen:
                continue
            seen.add(line.strip())
        kept.append(line)
    return "".join(kept) + page[head_end:]


def _build_finished(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        page = path.read_text(encoding="utf-8")
        new = dedupe_head(page)
        if new != page:
            path.write_text(new, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
