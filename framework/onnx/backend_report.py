"""The ONNX backend node tests run through the importer: passed / failed / skipped by op.

Each case of ``onnx.backend.test`` is a one-node model with input and expected output tensors
(``model.onnx``, ``test_data_set_0/input_*.pb``, ``output_*.pb``). The installed ``onnx`` wheel
does not ship that data, only the cases' Python, so it is written once to a cache folder
(``OARLOCK_ONNX_NODE_DATA``, default ``~/.cache/oarlock/onnx-node-<onnx version>``), exactly as
``python -m onnx.backend.test.cmd_tools generate-data`` writes it.

A case is *skipped* when it needs what the importer states it does not take (an op with no
converter, a dtype Oarlock does not hold, sequence or optional values); *failed* when the
import or the run raises anything else or the values differ (the backend's tolerances:
``rtol=1e-3, atol=1e-7`` unless the case sets its own; bfloat16 outputs are compared in
float32 with ``rtol`` at least two bfloat16 ulps, 2**-6, as onnx's runner does).

    python -m framework.onnx.backend_report --device cpu [--ops Add,Conv] [--json out.json]

>>> from framework.onnx.backend_report import run_case
>>> run_case("test_relu", "cpu").status
'passed'
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

#: dtypes Oarlock holds (a case with any other is skipped)
HELD = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool", "bfloat16"}
HELD |= {"uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}


@dataclass
class CaseResult:
    """One backend case: its name, the ONNX op it tests, status and why."""

    name: str
    op: str
    status: str  # "passed", "failed" or "skipped"
    reason: str = ""


def data_dir() -> str:
    """The node tests' folder: the onnx source tree's when installed, else the cache (written on first use)."""
    import onnx

    shipped = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if os.path.isdir(shipped):
        return shipped
    default = os.path.join(os.path.expanduser("~"), ".cache", "oarlock", f"onnx-node-{onnx.__version__}")
    path = os.environ.get("OARLOCK_ONNX_NODE_DATA", default)
    if not os.path.exists(os.path.join(path, "COMPLETE")):
        _generate(path)
    return path


def _generate(path: str) -> None:
    """Write every node case (model and tensors) as onnx's own ``generate-data`` does."""
    import warnings

    from onnx import numpy_helper
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np_err = np.seterr(all="ignore")
        try:
            cases = collect_testcases()
        finally:
            np.seterr(**np_err)
    os.makedirs(path, exist_ok=True)
    for case in cases:
        d = os.path.join(path, case.name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        meta = {"rtol": case.rtol, "atol": case.atol}
        for i, (inputs, outputs) in enumerate(case.data_sets[:1]):
            for kind, vals, infos in (
                ("input", inputs, case.model.graph.input),
                ("output", outputs, case.model.graph.output),
            ):
                for j, v in enumerate(vals):
                    if not infos[j].type.HasField("tensor_type"):
                        meta["non_tensor"] = True
                        continue
                    proto = (
                        v
                        if not isinstance(v, np.ndarray | np.generic)
                        else numpy_helper.from_array(np.asarray(v), infos[j].name)
                    )
                    with open(os.path.join(d, f"test_data_set_{i}", f"{kind}_{j}.pb"), "wb") as f:
                        f.write(proto.SerializeToString())
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f)
    with open(os.path.join(path, "COMPLETE"), "w") as f:
        f.write(str(len(cases)))


def case_names() -> list[str]:
    """Every node case, sorted."""
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(data_dir(), "test_*")))


def op_of(model: Any) -> str:
    """The op type a case tests (its model's first node outside the ``Constant`` feeding it)."""
    ops = [n.op_type for n in model.graph.node]
    rest = [o for o in ops if o != "Constant"] or ops
    return rest[0] if rest else "?"


def case_op(name: str, model: Any = None) -> str:
    """The op a case is grouped under: its model's op, or ``"Op (expanded)"`` for the
    ``_expanded`` form of a case (the op's function body written out in other ops)."""
    import onnx

    d = data_dir()
    base = name.split("_expanded")[0]
    if base != name and os.path.exists(os.path.join(d, base, "model.onnx")):
        return op_of(onnx.load(os.path.join(d, base, "model.onnx"))) + " (expanded)"
    return op_of(model if model is not None else onnx.load(os.path.join(d, name, "model.onnx")))


def _read(pb: str) -> np.ndarray:
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(pb, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run_case(name: str, device: str, compile: bool = False) -> CaseResult:
    """Import and run one node case on ``device``; compare with its expected outputs.
    ``compile``: let the compiler fuse (off by default: a one-node model has nothing to fuse,
    and compiling a kernel per case would dominate the run)."""
    import onnx

    from . import InferenceSession, OnnxImportError

    d = os.path.join(data_dir(), name)
    model = onnx.load(os.path.join(d, "model.onnx"))
    op = case_op(name, model)
    meta_path = os.path.join(d, "meta.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
    if meta.get("non_tensor") or any(
        not vi.type.HasField("tensor_type") for vi in [*model.graph.input, *model.graph.output]
    ):
        return CaseResult(name, op, "skipped", "sequence, map or optional values")
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    ins = [_read(p) for p in sorted(glob.glob(os.path.join(sets[0], "input_*.pb")), key=_index)]
    outs = [_read(p) for p in sorted(glob.glob(os.path.join(sets[0], "output_*.pb")), key=_index)]
    odd = sorted({a.dtype.name for a in [*ins, *outs]} - HELD)
    if odd:
        return CaseResult(name, op, "skipped", f"dtype {odd[0]}")
    try:
        sess = InferenceSession(model, device=device, compile=compile)
        got = sess.run(None, dict(zip([i.name for i in sess.get_inputs()], ins)))
    except OnnxImportError as e:
        msg = str(e)
        if "no converter" in msg or "element type" in msg:
            return CaseResult(name, op, "skipped", msg.split(";")[0][:160])
        return CaseResult(name, op, "failed", msg[:300])
    except Exception as e:  # noqa: BLE001  (the report names every failure)
        return CaseResult(name, op, "failed", f"{type(e).__name__}: {str(e)[:300]}")
    rtol, atol = meta.get("rtol", 1e-3), meta.get("atol", 1e-7)
    for k, (g, w) in enumerate(zip(got, outs)):
        if g.shape != w.shape:
            return CaseResult(name, op, "failed", f"output {k}: shape {g.shape}, expected {w.shape}")
        if g.dtype != w.dtype:
            return CaseResult(name, op, "failed", f"output {k}: dtype {g.dtype}, expected {w.dtype}")
        try:
            if w.dtype.name == "bfloat16":  # as onnx's runner: in float32, two bfloat16 ulps
                np.testing.assert_allclose(
                    g.astype(np.float32),
                    w.astype(np.float32),
                    rtol=max(rtol, 2**-6),
                    atol=atol,
                    equal_nan=True,
                )
            elif w.dtype.kind in "fc":
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
            else:
                np.testing.assert_array_equal(g, w)
        except AssertionError as e:
            return CaseResult(name, op, "failed", f"output {k}: " + " ".join(str(e).split())[:200])
    return CaseResult(name, op, "passed")


def _index(p: str) -> int:
    return int(os.path.basename(p).split("_")[1].split(".")[0])


def run_all(device: str, names: list[str] | None = None) -> list[CaseResult]:
    """Run ``names`` (default: every case) on ``device``."""
    import warnings

    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names if names is not None else case_names():
            out.append(run_case(name, device))
    return out


def summary(results: list[CaseResult]) -> str:
    """Counts, then per op its passed/failed/skipped and the first failure's reason."""
    c = collections.Counter(r.status for r in results)
    lines = [f"passed {c['passed']}  failed {c['failed']}  skipped {c['skipped']}  of {len(results)}"]
    by_op: dict[str, list[CaseResult]] = collections.defaultdict(list)
    for r in results:
        by_op[r.op].append(r)
    for op in sorted(by_op):
        rs = by_op[op]
        k = collections.Counter(r.status for r in rs)
        first = next((r for r in rs if r.status != "passed"), None)
        why = f"  {first.name}: {first.reason}" if first else ""
        lines.append(
            f"  {op:28s} passed {k['passed']:3d} failed {k['failed']:3d} skipped {k['skipped']:3d}{why}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m framework.onnx.backend_report", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ops", default=None, help="comma-separated op types to run (default: all)")
    ap.add_argument("-k", default=None, help="only cases whose name contains this")
    ap.add_argument("--json", default=None, help="write every case's result here")
    ap.add_argument(
        "--write-passing",
        default=None,
        help="record the passed cases, by op, under this device's key of this json file (the reviewed list)",
    )
    a = ap.parse_args(argv)
    names = case_names()
    if a.k:
        names = [n for n in names if a.k in n]
    if a.ops:
        wanted = set(a.ops.split(","))
        names = [n for n in names if case_op(n) in wanted]
    t0 = time.perf_counter()
    results = run_all(a.device, names)
    print(summary(results))
    print(f"{len(results)} cases on {a.device} in {time.perf_counter() - t0:.1f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([r.__dict__ for r in results], f, indent=0)
    if a.write_passing:
        record = json.load(open(a.write_passing)) if os.path.exists(a.write_passing) else {}
        by_op: dict[str, list[str]] = collections.defaultdict(list)
        for r in results:
            if r.status == "passed":
                by_op[r.op].append(r.name)
        record[a.device.split(":")[0]] = {op: sorted(v) for op, v in sorted(by_op.items())}
        with open(a.write_passing, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
