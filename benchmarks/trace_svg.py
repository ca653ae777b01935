"""Draw a Chrome trace written by ``fw.profiler`` (``export_chrome_tracing``) as an SVG picture:
one lane per process and thread (the host's Python thread, each device's kernels), spans nested
by time as in Perfetto, coloured by category (step, your ``RecordEvent``, composite, operator,
backward node, program instruction, kernel) and labelled with their names where they fit; a time
axis in ms and a legend. Plain SVG written by hand (no plotting library needed); a browser shows
the name, category and duration of a span under the mouse.

    python benchmarks/trace_svg.py TRACE.json OUT.svg [--step N] [--window A:B] [--width 1600]

``--step N`` draws the span of ``ProfileStep#N`` (``--step fastest``: the shortest step; default:
the whole trace); ``--window A:B``
zooms to ``A`` .. ``B`` ms from the start of that span. Used for docs/img/profiler_trace*.svg
(docs/profiler.md).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from html import escape

COLOURS = {
    "ProfileStep": "#d0d0d0",
    "UserDefined": "#9ecae1",
    "Composite": "#fdae6b",
    "Operator": "#74c476",
    "Backward": "#f4a3c8",
    "Instruction": "#bcbddc",
    "Trace": "#e0e0e0",
    "Kernel": "#6baed6",
}
ROW, PAD, LEFT, TOP, CHAR = 17, 8, 150, 66, 6.1  # px: row, lane gap, label column, axis, a glyph


def lanes(
    events: list[dict],
) -> tuple[dict[tuple[int, int], tuple[str, str]], list[tuple[tuple[int, int], list]]]:
    """The trace's named lanes and, per lane, its complete ('X') spans with their nesting depth."""
    pname = {
        e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"
    }
    tname = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e["name"] == "thread_name"
    }
    by: dict[tuple[int, int], list[dict]] = {}
    for e in events:
        if e.get("ph") == "X":
            by.setdefault((e["pid"], e["tid"]), []).append(e)
    names = {}
    out = []
    for key in sorted(by, key=lambda k: ("device" in pname.get(k[0], ""), k)):
        spans = sorted(by[key], key=lambda e: (e["ts"], -e["dur"]))
        stack: list[float] = []  # end times of the open spans
        placed = []
        for e in spans:
            while stack and stack[-1] <= e["ts"] + 1e-9:
                stack.pop()
            placed.append((len(stack), e))
            stack.append(e["ts"] + e["dur"])
        proc = pname.get(key[0], f"pid {key[0]}")
        names[key] = (proc, tname.get(key, ""))
        out.append((key, placed))
    return names, out


def nice_step(span_ms: float, ticks: int = 10) -> float:
    """A 1-2-5 step giving about ``ticks`` ticks over ``span_ms``."""
    raw = span_ms / ticks
    k = 10 ** math.floor(math.log10(raw))
    return next(m * k for m in (1, 2, 5, 10) if m * k >= raw)


def label(name: str, px: float) -> str:
    """``name`` cut to ``px`` pixels (with an ellipsis), or '' when under three glyphs fit."""
    fit = int((px - 4) / CHAR)
    if fit >= len(name):
        return name
    return name[: fit - 1] + "…" if fit >= 4 else ""


def render(trace: dict, step: str | None, window: tuple[float, float] | None, width: int, title: str) -> str:
    events = trace["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X"]
    if not xs:
        raise SystemExit("[trace_svg] the trace has no complete ('X') spans to draw")
    if step is not None:
        steps = [e for e in xs if e.get("cat") == "ProfileStep"]
        if step == "fastest":
            st = sorted(steps, key=lambda e: e["dur"])[:1]
        else:
            st = [e for e in steps if e["name"] == f"ProfileStep#{step}"]
        if not st:
            got = sorted(e["name"] for e in steps)
            raise SystemExit(
                f"[trace_svg] no ProfileStep#{step} in the trace (it has {got}); pick one of them"
            )
        t0, t1 = st[0]["ts"], st[0]["ts"] + st[0]["dur"]
    else:
        t0, t1 = min(e["ts"] for e in xs), max(e["ts"] + e["dur"] for e in xs)
    if window is not None:
        t0, t1 = t0 + window[0] * 1e3, t0 + min(window[1] * 1e3, t1 - t0)
    inside = [
        e
        for e in events
        if e.get("ph") == "M" or (e.get("ph") == "X" and e["ts"] < t1 and e["ts"] + e["dur"] > t0)
    ]
    names, placed = lanes(inside)
    scale = (width - LEFT - 10) / (t1 - t0)  # px per us

    def x(t: float) -> float:
        return LEFT + (min(max(t, t0), t1) - t0) * scale

    body: list[str] = []
    y = TOP
    for key, spans in placed:
        depth = 1 + max(d for d, _ in spans)
        h = depth * ROW
        body.append(f'<rect x="0" y="{y - 3}" width="{width}" height="{h + 6}" fill="#f7f7f7"/>')
        proc, thread = names[key]
        body.append(f'<text x="6" y="{y + 12}" class="lane">{escape(proc)}</text>')
        if thread:
            body.append(f'<text x="6" y="{y + 26}">thread {escape(thread)}</text>')
        for d, e in spans:
            a, b = x(e["ts"]), x(e["ts"] + e["dur"])
            w = max(b - a, 0.6)
            top = y + d * ROW
            tip = f"{e['name']} ({e.get('cat', '')}) {e['dur'] / 1e3:.3f} ms"
            fill = COLOURS.get(e.get("cat", ""), "#cccccc")
            body.append(
                f'<g><title>{escape(tip)}</title><rect x="{a:.2f}" y="{top}" width="{w:.2f}" '
                f'height="{ROW - 2}" fill="{fill}" stroke="#555" stroke-width="0.3"/>'
            )
            text = label(e["name"], w)
            if text:
                body.append(f'<text x="{a + 2:.2f}" y="{top + 11.5}">{escape(text)}</text>')
            body.append("</g>")
        y += h + PAD + 6
    # the time axis
    span_ms = (t1 - t0) / 1e3
    tick = nice_step(span_ms)
    axis = [f'<line x1="{LEFT}" y1="{TOP - 8}" x2="{width - 10}" y2="{TOP - 8}" stroke="#333"/>']
    k = 0
    while k * tick <= span_ms + 1e-9:
        tx = LEFT + k * tick * 1e3 * scale
        axis.append(
            f'<line x1="{tx:.2f}" y1="{TOP - 12}" x2="{tx:.2f}" y2="{y}" stroke="#ccc" stroke-width="0.5"/>'
        )
        axis.append(f'<text x="{tx:.2f}" y="{TOP - 15}" text-anchor="middle">{k * tick:g} ms</text>')
        k += 1
    # the legend
    cats = sorted({e.get("cat", "") for _, spans in placed for _, e in spans}, key=list(COLOURS).index)
    legend = []
    lx = LEFT
    for c in cats:
        legend.append(
            f'<rect x="{lx}" y="{y + 6}" width="12" height="12" fill="{COLOURS[c]}" stroke="#555" stroke-width="0.3"/>'
        )
        legend.append(f'<text x="{lx + 16}" y="{y + 16}">{c}</text>')
        lx += 26 + CHAR * len(c)
    height = y + 28
    if step is not None:
        title += f" ({st[0]['name']})"
    head = f'<text x="6" y="18" class="title">{escape(title)}</text>'
    sub = (
        f'<text x="6" y="34">{len([e for _, s in placed for e in s])} spans from '
        f"{t0 / 1e3:.3f} to {t1 / 1e3:.3f} ms of the trace; lanes: the host's thread (spans nested "
        f"by time) and each device's kernels (from the runtime's events)</text>"
    )
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, monospace" font-size="10">',
            "<style>.lane{font-size:11px;font-weight:bold}.title{font-size:14px;font-weight:bold}</style>",
            f'<rect width="{width}" height="{height}" fill="white"/>',
            head,
            sub,
            *axis,
            *body,
            *legend,
            "</svg>",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--step", help="draw ProfileStep#N only (N, or 'fastest')")
    ap.add_argument("--window", help="A:B, ms from the start of the step (or trace)")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    window = None
    if args.window:
        try:
            a, b = (float(v) for v in args.window.split(":"))
        except ValueError:
            sys.exit(f"[trace_svg] --window takes A:B in ms, got {args.window!r}")
        if not 0 <= a < b:
            sys.exit(f"[trace_svg] --window needs 0 <= A < B, got {args.window!r}")
        window = (a, b)
    with open(args.trace) as f:
        trace = json.load(f)
    svg = render(trace, args.step, window, args.width, args.title or args.trace)
    with open(args.out, "w") as f:
        f.write(svg + "\n")


if __name__ == "__main__":
    main()
