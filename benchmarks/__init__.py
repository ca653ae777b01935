"""Benchmarks, run as scripts (``python benchmarks/dispatch.py``). A package only so that the
import-architecture check (import-linter, pyproject.toml) can hold them to the public API."""


def cpu_description() -> str:
    """The host as a benchmark's header names it: the CPU's name with its family and model (an
    "AMD EPYC" is a Zen 4, family 25, or a Zen 5, 26), its cores, and numpy's BLAS with the
    kernels it runs (an ``OPENBLAS_CORETYPE`` set in the environment is named: it decides them)."""
    import os

    import framework as fw

    p = fw.get_device_properties("cpu")
    e = p.extra
    fam = f" (family {e['cpu_family']} model {e.get('cpu_model', '?')})" if "cpu_family" in e else ""
    blas = f"; numpy's BLAS: {e['numpy_blas']}" if "numpy_blas" in e else ""
    return f"{p.name}{fam}, {os.cpu_count()} cores{blas}"
