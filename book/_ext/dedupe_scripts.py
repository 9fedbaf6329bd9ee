"""Sphinx extension: each script block once per page.

sphinx-thebe and sphinx-togglebutton register their inline configuration scripts twice under Jupyter Book 1
(once with priority 500 and once through the theme), so every page declared ``const THEBE_JS_URL`` twice and the
browser reported "Identifier 'THEBE_JS_URL' has already been declared". This keeps the first of scripts with the
same file name and attributes, whatever their priority.
"""

from __future__ import annotations

from typing import Any


def _key(script: Any) -> tuple:
    return script.filename, tuple(sorted(script.attributes.items()))


def _dedupe(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple] = set()
    kept = []
    for script in scripts:
        key = _key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
