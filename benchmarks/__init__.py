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
    script: str,
    argv: list[str],
    here: str,
    other: str,
    rounds: int,
    number: int,
    cpu_clock: bool,
    what: str,
    threads: tuple[int, ...] = (1,),
) -> dict:
    """Run ``benchmarks/<script> --worker <argv>`` once per tree and thread count in ``threads``
    (``PYTHONPATH`` = the tree), then ``rounds`` rounds taking turns (each round starts with the
    next worker); each worker prints one JSON line first (with ``root``: where it imported
    framework from, and optionally ``path``: which code path it runs), then one JSON line
    (microseconds by case) per line it reads. Prints the medians side by side with the ratio
    this / against (``what`` heads the first column); returns the first lines by "this" and
    "against" (of the first thread count)."""
    import json
    import os
    import statistics
    import subprocess
    import sys

    procs, first = {}, {}
    for nt in threads:
        env = dict(
            os.environ, OARLOCK_NUM_THREADS=str(nt), OMP_NUM_THREADS=str(nt), OPENBLAS_NUM_THREADS=str(nt)
        )
        for name, tree in (("this", here), ("against", other)):
            procs[name, nt] = p = subprocess.Popen(
                [sys.executable, os.path.join(here, "benchmarks", script), "--worker", *argv],
                cwd=tree,
                env=dict(env, PYTHONPATH=tree),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            line = json.loads(p.stdout.readline())  # type: ignore[union-attr]
            if line["root"] != tree:
                sys.exit(
                    f"[benchmarks] the {name!r} interpreter imported framework from {line['root']}, not {tree}"
                )
            first.setdefault(name, line)
    got: dict[tuple[str, int], list[dict]] = {k: [] for k in procs}
    order = list(procs)
    for r in range(rounds):
        k = r % len(order)
        for key in order[k:] + order[:k]:
            procs[key].stdin.write("go\n")  # type: ignore[union-attr]
            procs[key].stdin.flush()  # type: ignore[union-attr]
            got[key].append(json.loads(procs[key].stdout.readline()))  # type: ignore[union-attr]
    for p in procs.values():
        p.stdin.close()  # type: ignore[union-attr]
        p.wait()
    clock = "process CPU time" if cpu_clock else "wall time"
    print(f"{cpu_description()}; {clock}; medians of {rounds} rounds x {number} calls, taking turns")
    paths = {n: f" ({first[n]['path']})" if "path" in first[n] else "" for n in first}
    print(f"this: {here}{paths['this']}\nagainst: {other}{paths['against']}")
    print(f"{what:16s} {'threads':>7s} {'this us':>9s} {'against us':>11s} {'ratio':>7s}")
    for nt in threads:
        for case in got["this", nt][0]:
            a, b = (statistics.median(x[case] for x in got[n, nt]) for n in ("this", "against"))
            print(f"{case:16s} {nt:7d} {a:9.2f} {b:11.2f} {a / b:6.2f}x")
    return first
