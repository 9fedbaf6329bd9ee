"""The sources' algorithms, each a composition of fedlib.fl parts (or, for sample-level DP-SGD, its own loop)."""
