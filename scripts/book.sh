#!/usr/bin/env bash
# Build the book: execute every chapter notebook with papermill in quick mode, then `jupyter-book build -W`.
# Output: _build/html/index.html. Extra arguments go to scripts/build_book.py (e.g. --mode full).
source "$(dirname "$0")/setup.sh"
python scripts/build_book.py "$@"
