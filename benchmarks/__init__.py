"""Speed measured side by side and printed as ratios; never asserted in tests. Run: ``python -m benchmarks``."""
