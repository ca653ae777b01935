"""Benchmarks, run as scripts (``python benchmarks/dispatch.py``). A package only so that the
import-architecture check (import-linter, pyproject.toml) can hold them to the public API."""
