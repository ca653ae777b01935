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


def side_by_side(
    script: str, argv: list[str], here: str, other: str, rounds: int, number: int, cpu_clock: bool, what: str
) -> dict:
    """Run ``benchmarks/<script> --worker <argv>`` once per tree (``PYTHONPATH`` = the tree, one
    thread), then ``rounds`` rounds taking turns (each round starts with the other tree); each
    worker prints one JSON line first (with ``root``: where it imported framework from), then
    one JSON line (microseconds by case) per line it reads. Prints the medians side by side with
    the ratio this / against (``what`` heads the first column); returns the first lines by
    "this" and "against"."""
    import json
    import os
    import statistics
    import subprocess
    import sys

    env = dict(os.environ, OARLOCK_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    procs, first = {}, {}
    for name, tree in (("this", here), ("against", other)):
        procs[name] = p = subprocess.Popen(
            [sys.executable, os.path.join(here, "benchmarks", script), "--worker", *argv],
            cwd=tree,
            env=dict(env, PYTHONPATH=tree),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        first[name] = json.loads(p.stdout.readline())  # type: ignore[union-attr]
        if first[name]["root"] != tree:
            sys.exit(
                f"[benchmarks] the {name!r} interpreter imported framework from {first[name]['root']}, not {tree}"
            )
    got: dict[str, list[dict]] = {"this": [], "against": []}
    order = ["this", "against"]
    for r in range(rounds):
        for name in order[r % 2 :] + order[: r % 2]:
            procs[name].stdin.write("go\n")  # type: ignore[union-attr]
            procs[name].stdin.flush()  # type: ignore[union-attr]
            got[name].append(json.loads(procs[name].stdout.readline()))  # type: ignore[union-attr]
    for p in procs.values():
        p.stdin.close()  # type: ignore[union-attr]
        p.wait()
    clock = "process CPU time" if cpu_clock else "wall time"
    print(
        f"{cpu_description()}; 1 thread; {clock}; medians of {rounds} rounds x {number} calls, taking turns"
    )
    print(f"this: {here}\nagainst: {other}")
    print(f"{what:16s} {'this us':>9s} {'against us':>11s} {'ratio':>7s}")
    for case in got["this"][0]:
        a, b = (statistics.median(x[case] for x in got[n]) for n in order)
        print(f"{case:16s} {a:9.2f} {b:11.2f} {a / b:6.2f}x")
    return first
