"""A plugin whose import fails."""

raise ImportError("libvendor.so.3: cannot open shared object file")
