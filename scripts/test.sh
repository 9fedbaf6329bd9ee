#!/usr/bin/env bash
# Run the test suite: unit tests, every chapter notebook executed by papermill in quick mode, and the book build.
# Extra arguments go to pytest (e.g. -m "not notebook" for the unit tests only).
source "$(dirname "$0")/setup.sh"
python -m pytest "$@"
