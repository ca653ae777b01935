"""benchmarks/trace_svg.py draws a real fw.profiler trace: one rectangle per span in the drawn
window, lanes per process and thread, nesting rows from the spans' times, names as labels."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import framework as fw
from benchmarks import trace_svg
from framework import profiler

SVG = "{http://www.w3.org/2000/svg}"


def _trace(tmp_path) -> str:
    x = fw.to_tensor(np.ones((8, 4), np.float32))
    w = fw.to_tensor(np.ones((4, 2), np.float32))
    with profiler.Profiler(
        scheduler=(1, 3), on_trace_ready=profiler.export_chrome_tracing(str(tmp_path))
    ) as p:
        for _ in range(4):
            with profiler.RecordEvent("fwd"):
                fw.nn.functional.softmax(x @ w, axis=-1).sum()
            p.step()
    (f,) = os.listdir(tmp_path)
    return os.path.join(tmp_path, f)


def _spans(svg: str) -> list[tuple[str, float, float, float]]:
    """(tooltip, x, y, width) of every span rectangle (those with a tooltip)."""
    out = []
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        r, t = g.find(f"{SVG}rect"), g.find(f"{SVG}title")
        out.append((t.text, float(r.get("x")), float(r.get("y")), float(r.get("width"))))
    return out


def test_one_rectangle_per_span_of_the_step(tmp_path):
    path = _trace(tmp_path)
    events = json.load(open(path))["traceEvents"]
    step = next(e for e in events if e.get("name") == "ProfileStep#2")
    t0, t1 = step["ts"], step["ts"] + step["dur"]
    inside = [e for e in events if e.get("ph") == "X" and e["ts"] < t1 and e["ts"] + e["dur"] > t0]
    spans = _spans(trace_svg.render(json.load(open(path)), "2", None, 1200, "t"))
    assert len(spans) == len(inside)
    assert sorted(s[0].rsplit(" (", 1)[0] for s in spans) == sorted(e["name"] for e in inside)
    assert {"matmul", "softmax", "fwd", "ProfileStep#2"} <= {s[0].rsplit(" (", 1)[0] for s in spans}
    # the step spans the drawing; a span's x is its start's place on the time axis
    by = {s[0].rsplit(" (", 1)[0]: s for s in spans}
    left, width = by["ProfileStep#2"][1], by["ProfileStep#2"][3]
    assert left == pytest.approx(trace_svg.LEFT) and width == pytest.approx(
        1200 - trace_svg.LEFT - 10, abs=0.01
    )
    mm = next(
        e for e in inside if e["name"] == "matmul" and e["pid"] != 1000000 and e.get("cat") == "Operator"
    )
    assert by["matmul"][1] == pytest.approx(left + (mm["ts"] - t0) / (t1 - t0) * width, abs=0.01)
    # nesting: the step, then the user's event, then the op, one row each, down the host lane
    assert by["ProfileStep#2"][2] < by["fwd"][2] < by["matmul"][2]


def test_fastest_step_and_window(tmp_path):
    path = _trace(tmp_path)
    trace = json.load(open(path))
    steps = [e for e in trace["traceEvents"] if e.get("cat") == "ProfileStep"]
    fastest = min(steps, key=lambda e: e["dur"])["name"]
    assert f"({fastest})" in trace_svg.render(trace, "fastest", None, 1000, "t")
    st = min(steps, key=lambda e: e["dur"])
    t0, t1 = st["ts"], st["ts"] + st["dur"] / 2
    first_half = [
        e for e in trace["traceEvents"] if e.get("ph") == "X" and e["ts"] < t1 and e["ts"] + e["dur"] > t0
    ]
    got = _spans(trace_svg.render(trace, "fastest", (0, st["dur"] / 2e3), 1000, "t"))
    assert sorted(s[0].rsplit(" (", 1)[0] for s in got) == sorted(e["name"] for e in first_half)
    assert max(s[1] + s[3] for s in got) <= 1000 - 10 + 1e-6  # clipped to the window
    with pytest.raises(SystemExit, match="no ProfileStep#7"):
        trace_svg.render(trace, "7", None, 1000, "t")
