"""The ONNX backend node tests through the importer, on every device.

``test_onnx_backend_passing.json`` is the reviewed record of the cases that pass per device
type, by op (written by ``python -m framework.onnx.backend_report --device D --write-passing``).
By default the first recorded case of every op runs (every op covered once, a deterministic
subset); ``OARLOCK_NIGHTLY=1`` runs every recorded case. Each must still pass: a regression
fails here, and the record's size is the goal's count (>= 1000 of the ~1900 cases per device).
"""

from __future__ import annotations

import json
import os

import pytest

from .conftest import DEVICES

RECORD = os.path.join(os.path.dirname(__file__), "test_onnx_backend_passing.json")
PASSING: dict[str, dict[str, list[str]]] = json.load(open(RECORD))
NIGHTLY = os.environ.get("OARLOCK_NIGHTLY") == "1"


def _cases() -> list[tuple[str, str]]:
    out = []
    for dev in DEVICES:
        by_op = PASSING.get(dev.split(":")[0], {})
        for op in sorted(by_op):
            for name in by_op[op] if NIGHTLY else by_op[op][:1]:
                out.append((dev, name))
    return out


@pytest.mark.parametrize("device,case", _cases())
def test_backend_node_case(device: str, case: str) -> None:
    from framework.onnx.backend_report import run_case

    r = run_case(case, device)
    assert r.status == "passed", f"{case} ({r.op}) on {device}: {r.status}: {r.reason}"


@pytest.mark.parametrize("kind", sorted(PASSING))
def test_record_meets_the_goal(kind: str) -> None:
    from framework.onnx.backend_report import case_names

    names = set(case_names())
    recorded = [n for v in PASSING[kind].values() for n in v]
    assert set(recorded) <= names, "the record names cases the installed onnx does not have"
    assert len(recorded) >= 1000, f"{kind}: {len(recorded)} backend node cases recorded as passing"


def test_report_groups_by_op_and_writes_the_record(tmp_path, capsys) -> None:
    from framework.onnx.backend_report import main

    record = tmp_path / "passing.json"
    out = tmp_path / "all.json"
    assert (
        main(
            [
                "--device",
                "cpu",
                "--ops",
                "Relu,Softmax (expanded)",
                "--json",
                str(out),
                "--write-passing",
                str(record),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "Relu" in text and "Softmax (expanded)" in text and "cases on cpu" in text
    rows = json.load(open(out))
    assert {r["op"] for r in rows} == {"Relu", "Softmax (expanded)"} and all(
        r["status"] == "passed" for r in rows
    )
    rec = json.load(open(record))["cpu"]
    assert rec["Relu"] == ["test_relu"] and all("_expanded" in n for n in rec["Softmax (expanded)"])
