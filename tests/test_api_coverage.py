"""API breadth measured by name against Paddle's common surface (issue 17).

The name lists live in ``../shared/api`` beside the clone (CI has them there):
``paddle_tensor.txt`` (Paddle's top-level tensor functions, one line per module of
``paddle/tensor``) and ``paddle_nn.txt`` (``F:``, ``nn:``, ``optimizer:``, ... prefixed lines).
The test prints coverage per group, asserts a floor per group so coverage cannot regress (raise
the floor when you add names), and checks that every name that is present is callable and is
exercised by some test file (so a name cannot be a stub nobody calls).

Run ``python -m pytest -q -s tests/test_api_coverage.py`` to see the table.
"""

from __future__ import annotations

import pathlib
import re

import pytest

import framework as fw

ROOT = pathlib.Path(__file__).resolve().parents[1]
API = ROOT.parent / "shared" / "api"

#: the module each prefix of paddle_nn.txt names, as an attribute path under ``framework``
PREFIXES = {
    "F": "nn.functional",
    "nn": "nn",
    "optimizer": "optimizer",
    "optimizer.lr": "optimizer.lr",
    "io": "io",
    "amp": "amp",
    "top": "",
}
#: paddle/tensor's modules, in the order of paddle_tensor.txt's lines
TENSOR_GROUPS = ["creation", "linalg", "logic", "manipulation", "math", "random", "search", "stat"]

#: coverage floors in percent, per group; raise them as names are added, never lower them
FLOORS = {
    "tensor.creation": 96,
    "tensor.linalg": 100,
    "tensor.logic": 100,
    "tensor.manipulation": 94,
    "tensor.math": 100,
    "tensor.random": 100,
    "tensor.search": 100,
    "tensor.stat": 100,
    "F": 100,
    "nn": 100,
    "optimizer": 100,
    "optimizer.lr": 100,
    "io": 100,
    "amp": 100,
    "top": 100,
}


def _groups() -> dict[str, tuple[str, list[str]]]:
    """``{group: (attribute prefix, [names])}`` read from the lists."""
    out: dict[str, tuple[str, list[str]]] = {}
    lines = [
        ln
        for ln in (API / "paddle_tensor.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    for key, ln in zip(TENSOR_GROUPS, lines):
        out["tensor." + key] = ("", ln.split())
    for ln in (API / "paddle_nn.txt").read_text().splitlines():
        if not ln.strip() or ln.startswith("#"):
            continue
        key, rest = ln.split(":", 1)
        prefix, names = out.get(key, (PREFIXES[key], []))
        out[key] = (prefix, names + rest.split())
    return out


def _resolve(prefix: str, name: str) -> object | None:
    obj: object = fw
    for part in (f"{prefix}.{name}" if prefix else name).split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


pytestmark = pytest.mark.skipif(
    not API.is_dir(), reason=f"the API name lists are not beside the clone ({API}); CI has them"
)


def _table() -> dict[str, tuple[list[str], list[str]]]:
    res = {}
    for g, (prefix, names) in _groups().items():
        present = [n for n in names if _resolve(prefix, n) is not None]
        res[g] = (present, [n for n in names if n not in present])
    return res


def test_coverage_per_group_meets_floor() -> None:
    table = _table()
    total = sum(len(p) + len(m) for p, m in table.values())
    have = sum(len(p) for p, _ in table.values())
    print(f"\nAPI coverage: {have} of {total} names ({100 * have / total:.0f} %)")
    low = []
    for g, (present, missing) in table.items():
        n = len(present) + len(missing)
        pct = 100 * len(present) / n
        print(f"  {g:22s} {len(present):3d}/{n:<3d} {pct:5.1f} %  missing: {' '.join(missing) or '-'}")
        if pct < FLOORS[g]:
            low.append(f"{g}: {pct:.1f} % < floor {FLOORS[g]} % (missing {missing})")
    assert set(FLOORS) == set(table), (
        f"groups changed: floors for {sorted(FLOORS)}, lists have {sorted(table)}"
    )
    assert not low, "coverage fell below its floor:\n" + "\n".join(low)


def test_present_names_are_callable() -> None:
    for g, (present, _) in _table().items():
        prefix = _groups()[g][0]
        for n in present:
            assert callable(_resolve(prefix, n)), f"{g}.{n} exists but is not callable"


def test_present_names_are_exercised_by_a_test() -> None:
    """Every present name is called (``name(``) or used as an attribute (``.name``) in some
    test file other than this one: a name nobody exercises could be a stub."""
    text = "\n".join(
        p.read_text() for p in (ROOT / "tests").glob("test_*.py") if p.name != pathlib.Path(__file__).name
    )
    untested = []
    for g, (present, _) in _table().items():
        for n in present:
            last = n.split(".")[-1]
            if not re.search(rf"(\.|\b){re.escape(last)}\b\s*[(\[]|\.{re.escape(last)}\b", text):
                untested.append(f"{g}.{n}")
    assert not untested, f"present but exercised by no test: {untested}"
