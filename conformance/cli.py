"""``oarlock conformance``: run the suite on one device and write reports.

    oarlock conformance --device opencl --html report.html --json report.json --junit junit.xml
    oarlock conformance --device cpu --tier primitives -k 'add,mul*' --list
    oarlock conformance --record-goldens        # re-record conformance/golden/ on the cpu reference
    oarlock conformance --device opencl --onnx model.onnx   # a user's ONNX model: device vs cpu

Exit status: 0 when every required tier passed, 1 when one failed (or the device could not be
opened), 2 on a usage error (unknown device, tier or plugin).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import shlex
import sys
import time
from collections import Counter
from typing import Any

from .cases import TIERS, collect, make_target
from .runner import DEFAULT_TIMEOUT, Runner


def _tiers(values: list[str] | None) -> tuple[str, ...]:
    if not values:
        return TIERS
    out: list[str] = []
    for v in values:
        for t in v.split(","):
            t = t.strip()
            if not t:
                continue
            if t not in TIERS:
                raise SystemExit(f"[conformance] unknown tier '{t}'; choose from {', '.join(TIERS)}")
            out.append(t)
    return tuple(out)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="oarlock conformance", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--device",
        default=os.environ.get("OARLOCK_DEVICE") or "cpu",
        help="device to test, e.g. simdev or opencl:1 (default: $OARLOCK_DEVICE, else cpu)",
    )
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        help="also load this plugin without installing it: an importable module name (oarlock_mydev), "
        "a .py file (path/mydev.py) or a package folder (path/oarlock_mydev); repeatable",
    )
    p.add_argument(
        "--tier", action="append", help=f"tiers to run, repeatable or comma-separated ({', '.join(TIERS)})"
    )
    p.add_argument(
        "-k", dest="pattern", help="only cases whose id contains this (comma = or; globs; 'not X')"
    )
    p.add_argument("--list", action="store_true", help="list the cases that would run, and exit")
    p.add_argument("--json", help="write the JSON report here")
    p.add_argument("--junit", help="write JUnit XML here")
    p.add_argument("--html", help="write the self-contained HTML report here")
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help="seconds per case before it is killed (default 120)",
    )
    p.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument(
        "--no-isolate",
        action="store_true",
        help="run cases in this process (debugging; a crash ends the run)",
    )
    p.add_argument(
        "--optional", default="", help="tiers whose failures do not fail the run (comma-separated)"
    )
    p.add_argument("--strict", action="store_true", help="count CPU fallbacks as failures")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress marks")
    p.add_argument(
        "--onnx",
        metavar="MODEL",
        help="instead of the suite: run this ONNX model on --device and on the cpu reference (seeded "
        "inputs, dynamic dims at --onnx-dim) and compare every output",
    )
    p.add_argument(
        "--onnx-dim", type=int, default=1, help="the size given to a model's dynamic dims (default 1)"
    )
    p.add_argument(
        "--record-goldens",
        action="store_true",
        help="re-record the model-regression goldens in conformance/golden/ (run on the cpu reference)",
    )
    return p


#: the core's variable for plugins loaded from their source (the plugin host reads it)
PLUGIN_PATHS = "OARLOCK_PLUGIN_PATHS"


def load_plugin(spec: str) -> Any:
    """Register a plugin given as a module name, a ``.py`` file or a package folder (a plugin
    under development, or a test plugin), as if it were installed with its entry point.

    The spec is added to ``OARLOCK_PLUGIN_PATHS`` too, so every process the run starts (the
    probe that lists the primitives the core generates for a plugin with compile access, the
    mpiexec ranks of the collectives tier) loads the same plugin: it behaves exactly as the
    installed plugin would."""
    import framework as fw

    if spec.endswith(".py") or os.sep in spec:
        spec = os.path.abspath(spec)  # the ranks of the collectives tier run in another folder
        if not os.path.exists(spec):
            raise FileNotFoundError(f"no Python module at {spec}")
    paths = [p for p in os.environ.get(PLUGIN_PATHS, "").split(os.pathsep) if p]
    if spec not in paths:
        os.environ[PLUGIN_PATHS] = os.pathsep.join([*paths, spec])
    return fw.register_plugin(spec)


def metadata_of(device: str) -> dict[str, Any]:
    """Plugin and device facts (runs in a worker: it opens the device)."""
    import framework as fw
    from framework import testing

    d = testing.parse_device(device)
    plugin = testing.plugin_of(d.type) or "?"
    rec = fw.plugins().get(plugin)
    p = fw.get_device_properties(d)
    props = {k: (list(v) if isinstance(v, tuple) else v) for k, v in p.__dict__.items()}
    return {
        "plugin": plugin,
        "plugin_module": rec.module if rec else "",
        "plugin_version": rec.version if rec else "",
        "contract": ".".join(map(str, rec.contract)) if rec and rec.contract else "?",
        "core_contract": ".".join(map(str, fw.CONTRACT_VERSION)),
        "kernel_count": sum(1 for k in testing.registry().kernels if k[1] == d.type),
        "device_count": fw.device_count(d.type),
        "properties": props,
        "oarlock_version": fw.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.record_goldens:
        from .regression import record_all

        record_all()
        return 0
    if args.onnx:
        return onnx_check(args.onnx, args.device, args.onnx_dim, args.json)
    try:
        tiers = _tiers(args.tier)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    import framework as fw

    loaded: dict[str, str] = {}  # plugin name -> the --plugin spec it came from
    for spec in args.plugin:
        try:
            loaded[load_plugin(spec).name] = spec
        except Exception as exc:  # noqa: BLE001
            print(f"[conformance] cannot load plugin {spec!r}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    try:
        target = make_target(args.device)
    except fw.OarlockError as exc:
        print(f"[conformance] cannot test '{args.device}':\n{exc}", file=sys.stderr)
        return 2
    cases = collect(target, tiers, args.pattern)
    unavailable = _unavailable(target, tiers)
    if args.list:
        for c in cases:
            note = f"  ({c.preset}: {c.reason})" if c.preset else ""
            print(f"{c.id}{note}")
        for t, why in unavailable.items():
            print(f"{t}/*  (not run: {why})")
        print(f"{len(cases)} cases")
        return 0
    runner = Runner(cases, timeout=args.timeout, jobs=args.jobs, isolate=not args.no_isolate)
    started = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    t0 = time.perf_counter()
    status, meta = runner.call(lambda: metadata_of(target.device), timeout=max(args.timeout, 60))
    if status != "ok":
        print(f"[conformance] could not open '{target.device}': {meta}", file=sys.stderr)
        meta = {"plugin": target.plugin, "error": meta}
    if meta.get("plugin") in loaded:  # named after its file; report it under its device's name
        meta["plugin_loaded_from"] = loaded[meta["plugin"]]
        meta["plugin"] = target.type
    print(
        f"oarlock conformance on {target.device}: plugin {_named(meta)}, "
        f"{len(cases)} cases, tiers {', '.join(t for t in TIERS if t in tiers and t not in unavailable)}"
    )
    from .report import Progress, build, summary, write_json, write_junit

    progress = Progress(len(cases), quiet=args.quiet, per_tier=Counter(c.tier for c in cases))
    results = runner.run(progress)
    progress.finish()
    optional = {t.strip() for t in args.optional.split(",") if t.strip()}
    required = {t for t in tiers if t not in optional}
    meta.update(
        device=target.device,
        duration_s=time.perf_counter() - t0,
        started=started,
        worker_restarts=runner.respawns,
        command="oarlock conformance "
        + " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
        host=platform.node(),
        python=platform.python_version(),
        has_compiler=target.has_compiler,
        has_communicator=target.has_communicator,
    )
    report = build(meta, results, required, args.strict, unavailable)
    summary(report, results)
    if args.json:
        write_json(report, args.json)
    if args.junit:
        write_junit(report, args.junit)
    if args.html:
        from .html import write_html

        write_html(report, args.html)
    for kind, path in (("JSON", args.json), ("JUnit", args.junit), ("HTML", args.html)):
        if path:
            print(f"{kind} report: {path}")
    return 1 if report["failed_tiers"] or status != "ok" else 0


def onnx_check(path: str, device: str, dim: int = 1, json_path: str | None = None) -> int:
    """Run an ONNX model on ``device`` and on the cpu reference with the same seeded inputs and
    compare every output within the output dtype's tolerance (``framework.testing``); 0 when
    all agree, 1 when one differs or the device cannot run the model."""
    import json

    import numpy as np

    import framework as fw
    from framework import testing

    try:
        ref = fw.onnx.InferenceSession(path, device="cpu")
    except fw.OarlockError as exc:
        print(f"[conformance] cannot import {path}:\n{exc}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(0)
    feed = {}
    for i in ref.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else dim for d in i.shape]
        dt = ref.model.input_dtypes[[j.name for j in ref.get_inputs()].index(i.name)]
        feed[i.name] = (rng.standard_normal(shape) if dt.kind == "f" else rng.integers(0, 2, shape)).astype(
            dt
        )
    want = ref.run(None, feed)
    rows, ok = [], True
    try:
        got = fw.onnx.InferenceSession(path, device=device).run(None, feed)
    except Exception as exc:  # noqa: BLE001  (the device's failure is the finding)
        print(f"[conformance] {path} on {device}: FAILED to run: {type(exc).__name__}: {exc}")
        got, ok = None, False
    for k, o in enumerate(ref.get_outputs()):
        if got is None:
            break
        tol = testing.tolerance(want[k].dtype, scale=10)
        good = got[k].shape == want[k].shape and np.allclose(
            got[k], want[k], tol.rtol, tol.atol, equal_nan=True
        )
        err = (
            float(np.max(np.abs(got[k].astype(np.float64) - want[k])))
            if got[k].shape == want[k].shape and want[k].size
            else 0.0
        )
        rows.append(
            {"output": o.name, "shape": list(want[k].shape), "passed": bool(good), "max_abs_error": err}
        )
        ok &= bool(good)
        print(
            f"  {o.name:24s} {str(list(want[k].shape)):20s} {'ok' if good else 'DIFFERS'}  max |error| {err:.3g}"
        )
    print(
        f"oarlock conformance --onnx {path}: {device} {'agrees with' if ok else 'differs from'} the cpu reference"
    )
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"model": path, "device": device, "passed": ok, "outputs": rows}, f, indent=1)
    return 0 if ok else 1


def _named(meta: dict[str, Any]) -> str:
    """``plugin`` and its version, when it declares one."""
    version = meta.get("plugin_version") or ""
    return f"{meta.get('plugin')}{' ' + version if version else ''}"


def _unavailable(target: Any, tiers: tuple[str, ...]) -> dict[str, str]:
    from .tiers import TIER_MODULES

    out = {}
    for t in tiers:
        mod = TIER_MODULES[t]()
        why = getattr(mod, "unavailable", lambda target: None)(target)
        if why:
            out[t] = why
    return out


if __name__ == "__main__":
    sys.exit(main())
