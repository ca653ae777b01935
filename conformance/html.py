"""The HTML report: one self-contained page (inline CSS and SVG, no script, no network).

Sections: plugin metadata, per-tier summary, an ops x dtypes matrix per tier coloured by
outcome, failures grouped by cause (one headline per cause, its cases folded) with expected vs
got, and model loss curves drawn against the golden ones.
"""

from __future__ import annotations

import html
import math
from typing import Any

from .opdb import ALL
from .report import clip, failure_groups

COLOURS = {
    "passed": "#2e9d4f",
    "fallback": "#e0b100",
    "not_supported": "#b8bec6",
    "skipped": "#dfe3e8",
    "failed": "#d9363e",
}
LABEL = {
    "passed": "passed",
    "fallback": "fallback",
    "not_supported": "not supported",
    "skipped": "skipped",
    "failed": "failed",
}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d232a;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:20px 0 8px;border-bottom:1px solid #e3e6ea;padding-bottom:4px}
.sub{color:#5a6470} table{border-collapse:collapse} td,th{padding:3px 8px;border:1px solid #e3e6ea;text-align:left}
th{background:#f5f7f9;font-weight:600} .num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;font-weight:600}
.matrix td.c{width:22px;height:18px;padding:0;border:1px solid #fff} .matrix th.rot{height:70px;white-space:nowrap;vertical-align:bottom;padding:2px}
.matrix th.rot div{transform:rotate(-55deg);width:22px;transform-origin:left bottom;margin-left:10px}
.matrix td.op{font-family:ui-monospace,Menlo,monospace;font-size:12px;padding:0 8px 0 0;border:none}
.legend span{display:inline-block;margin-right:14px} .legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
.fail{border-left:4px solid #d9363e;padding:6px 10px;margin:8px 0;background:#fdf4f4}
.fail code{font-size:12px} pre{white-space:pre-wrap;margin:4px 0;font-size:12px;font-family:ui-monospace,Menlo,monospace}
.grid{display:flex;flex-wrap:wrap;gap:16px} .card{border:1px solid #e3e6ea;border-radius:6px;padding:8px}
.meta td:first-child{color:#5a6470;white-space:nowrap} .meta td{max-width:380px;font-size:13px} .grid>div{flex:0 1 auto}
"""


def _e(v: Any) -> str:
    return html.escape(str(v))


def _matrix(results: list[dict[str, Any]], tier: str) -> str:
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for r in results:
        if r["tier"] == tier and r.get("op"):
            rows.setdefault(r["op"], {})[r.get("dtype") or "-"] = r
    if not rows:
        return ""
    dtypes = [d for d in (*ALL, "-") if any(d in v for v in rows.values())]
    out = [f"<h2>{_e(tier)}: ops &times; dtypes</h2><table class='matrix'><tr><th></th>"]
    out += [f"<th class='rot'><div>{_e(d)}</div></th>" for d in dtypes]
    out.append("</tr>")
    for op in rows:
        out.append(f"<tr><td class='op'>{_e(op)}</td>")
        for d in dtypes:
            r = rows[op].get(d)
            if r is None:
                out.append("<td class='c'></td>")
                continue
            tip = f"{r['id']}: {LABEL.get(r['outcome'], r['outcome'])}" + (
                f" - {clip(r['message'], 300)}" if r["message"] else ""
            )
            out.append(
                f"<td class='c' style='background:{COLOURS.get(r['outcome'], '#888')}' title='{_e(tip)}'></td>"
            )
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _curve_svg(title: str, loss: list[float], golden: list[float] | None, rtol: float, atol: float) -> str:
    W, H, L, B, T, Rm = 420, 240, 52, 30, 24, 12
    ys = [v for v in loss if math.isfinite(v)] + [v for v in (golden or []) if math.isfinite(v)]
    if golden:
        ys += [g + atol + rtol * abs(g) for g in golden] + [g - atol - rtol * abs(g) for g in golden]
    if not ys:
        return f"<div class='card'><b>{_e(title)}</b><p>no finite loss values</p></div>"
    lo, hi = min(ys), max(ys)
    if hi - lo < 1e-12:
        hi, lo = hi + 1.0, lo - 1.0
    n = max(len(loss), len(golden or []), 2)

    def px(i: int) -> float:
        return L + (W - L - Rm) * i / (n - 1)

    def py(v: float) -> float:
        return T + (H - T - B) * (hi - v) / (hi - lo)

    def path(vals: list[float]) -> str:
        pts = [f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(vals) if math.isfinite(v)]
        return "M" + " L".join(pts) if pts else ""

    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{H}' role='img'>",
        f"<text x='{L}' y='15' font-size='13' font-weight='600'>{_e(title)}</text>",
    ]
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        y = py(v)
        parts.append(
            f"<line x1='{L}' x2='{W - Rm}' y1='{y:.1f}' y2='{y:.1f}' stroke='#eef0f2'/>"
            f"<text x='{L - 4}' y='{y + 4:.1f}' font-size='10' text-anchor='end' fill='#5a6470'>{v:.4g}</text>"
        )
    parts.append(
        f"<text x='{(L + W) / 2:.0f}' y='{H - 6}' font-size='10' text-anchor='middle' fill='#5a6470'>step (0..{n - 1})</text>"
    )
    if golden:
        up = [f"{px(i):.1f},{py(g + atol + rtol * abs(g)):.1f}" for i, g in enumerate(golden)]
        dn = [f"{px(i):.1f},{py(g - atol - rtol * abs(g)):.1f}" for i, g in reversed(list(enumerate(golden)))]
        parts.append(f"<polygon points='{' '.join(up + dn)}' fill='#2e6fd9' fill-opacity='0.12'/>")
        parts.append(
            f"<path d='{path(golden)}' fill='none' stroke='#2e6fd9' stroke-width='2' stroke-dasharray='5 3'/>"
        )
    parts.append(f"<path d='{path(loss)}' fill='none' stroke='#d9363e' stroke-width='1.6'/>")
    for i, v in enumerate(loss):
        if math.isfinite(v):
            parts.append(f"<circle cx='{px(i):.1f}' cy='{py(v):.1f}' r='2' fill='#d9363e'/>")
    parts.append(
        f"<g font-size='11'><line x1='{W - 150}' x2='{W - 130}' y1='{T + 6}' y2='{T + 6}' stroke='#d9363e' stroke-width='2'/>"
        f"<text x='{W - 126}' y='{T + 10}'>this device</text>"
        f"<line x1='{W - 150}' x2='{W - 130}' y1='{T + 20}' y2='{T + 20}' stroke='#2e6fd9' stroke-width='2' stroke-dasharray='5 3'/>"
        f"<text x='{W - 126}' y='{T + 24}'>golden &#177; tolerance</text></g></svg>"
    )
    return f"<div class='card'>{''.join(parts)}</div>"


def render(report: dict[str, Any]) -> str:
    meta = report["metadata"]
    results = report["results"]
    failed = report["failed_tiers"]
    verdict = (
        "<span class='badge' style='background:#d9363e'>FAILED</span>"
        if failed
        else "<span class='badge' style='background:#2e9d4f'>PASSED</span>"
    )
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Oarlock conformance: {_e(meta['device'])}</title><style>{CSS}</style></head><body>",
        f"<h1>Oarlock conformance &mdash; {_e(meta['device'])} {verdict}</h1>",
        f"<div class='sub'>{_e(meta.get('started', ''))} &middot; {len(results)} cases in {meta['duration_s']:.1f} s "
        f"&middot; <code>{_e(meta.get('command', ''))}</code></div>",
    ]
    props = meta.get("properties") or {}
    rows = [
        ("plugin", f"{meta['plugin']} {meta.get('plugin_version', '')}"),
        ("adapter contract", f"plugin {meta.get('contract', '?')}, core {meta.get('core_contract', '?')}"),
        ("registered kernels", meta.get("kernel_count", 0)),
        ("device", f"{props.get('name', '?')} [{props.get('vendor', '?')}]"),
        (
            "memory",
            f"{props.get('total_memory', 0) / 2**30:.1f} GiB, {props.get('compute_units', 0)} compute units",
        ),
        ("driver / runtime", f"{props.get('driver_version', '')} / {props.get('runtime_version', '')}"),
        ("dtypes", ", ".join(props.get("dtypes") or [])),
        (
            "compile access / collectives",
            f"{meta.get('has_compiler', False)} / {meta.get('has_communicator', False)}",
        ),
        (
            "CPU fallbacks",
            ", ".join(f"{k} x{v}" for k, v in sorted((meta.get("fallbacks") or {}).items())) or "none",
        ),
        ("oarlock", meta.get("oarlock_version", "")),
    ]
    out.append(
        "<div class='grid'><div><h2>Plugin</h2><table class='meta'>"
        + "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows)
        + "</table></div>"
    )
    out.append(
        "<div><h2>Tiers</h2><table><tr><th>tier</th><th>passed</th><th>failed</th><th>not supported</th><th>fallback</th>"
        "<th>skipped</th><th>status</th></tr>"
    )
    for tier, c in report["tiers"].items():
        st = "FAIL" if c["failed"] else "ok"
        colour = COLOURS["failed"] if c["failed"] else COLOURS["passed"]
        opt = "" if tier in report["required_tiers"] else " (optional)"
        out.append(
            f"<tr><td>{_e(tier)}</td>"
            + "".join(
                f"<td class='num'>{c[k]}</td>"
                for k in ("passed", "failed", "not_supported", "fallback", "skipped")
            )
            + f"<td><span class='badge' style='background:{colour}'>{st}</span>{opt}</td></tr>"
        )
    for tier, why in report.get("unavailable_tiers", {}).items():
        out.append(
            f"<tr><td>{_e(tier)}</td><td colspan='6' class='sub' style='max-width:420px'>not run: {_e(why)}</td></tr>"
        )
    out.append("</table>")
    out.append(
        "<p class='legend'>"
        + "".join(f"<span><i style='background:{c}'></i>{LABEL[k]}</span>" for k, c in COLOURS.items())
        + "</p></div></div>"
    )
    by_id = {r["id"]: r for r in results}
    groups = report.get("failure_groups") or failure_groups(results)
    n_fail = sum(g["count"] for g in groups)
    out.append(
        f"<h2>Failures ({n_fail}" + (f", {len(groups)} causes" if len(groups) != n_fail else "") + ")</h2>"
    )
    if not groups:
        out.append("<p class='sub'>none</p>")
    for g in groups:  # one headline per cause; the cases that share it folded below
        r = by_id[g["ids"][0]]
        if g["count"] == 1:
            out.append(f"<div class='fail'><b>{_e(r['id'])}</b><pre>{_e(r['message'])}</pre>")
        else:
            out.append(
                f"<div class='fail'><b>{g['count']} cases</b><pre>{_e(g['cause'])}</pre><details><summary>the "
                f"{g['count']} cases</summary><pre>{_e(chr(10).join(g['ids']))}</pre></details>"
            )
        if r.get("expected") is not None or r.get("got") is not None:
            first = "" if g["count"] == 1 else f" ({_e(r['id'])})"
            out.append(
                f"<table><tr><th>expected{first}</th><td><pre>{_e(r['expected'])}</pre></td></tr>"
                f"<tr><th>got</th><td><pre>{_e(r['got'])}</pre></td></tr></table>"
            )
        out.append("</div>")
    curves = [r for r in results if r.get("data", {}).get("loss")]
    if curves:
        out.append("<h2>Model regression: loss per step against the golden curve</h2><div class='grid'>")
        for r in curves:
            d = r["data"]
            out.append(
                _curve_svg(
                    f"{r['id']} ({LABEL.get(r['outcome'], r['outcome'])})",
                    d["loss"],
                    d.get("golden"),
                    d.get("rtol", 0.0),
                    d.get("atol", 0.0),
                )
            )
        out.append("</div>")
    out.append("<div class='grid'>")
    for tier in ("primitives", "autograd", "composites", "compile"):
        out.append(f"<div>{_matrix(results, tier)}</div>")
    out.append("</div>")
    out.append(
        "<h2>Every case</h2><details><summary>show all</summary><table><tr><th>case</th><th>outcome</th>"
        "<th>seconds</th><th>note</th></tr>"
    )
    for r in results:
        out.append(
            f"<tr><td><code>{_e(r['id'])}</code></td><td style='color:{COLOURS.get(r['outcome'], '#000')}'>"
            f"{_e(LABEL.get(r['outcome'], r['outcome']))}</td><td class='num'>{r['duration']:.3f}</td>"
            f"<td>{_e(clip(r['message'], 200))}</td></tr>"
        )
    out.append("</table></details></body></html>")
    return "".join(out)


def write_html(report: dict[str, Any], path: str) -> None:
    from .report import _atomic_write

    _atomic_write(path, render(report))
