"""Reports: progress and summary on the terminal, JSON, JUnit XML (the HTML page is in html.py)."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any, TextIO

from .cases import OUTCOMES, TIERS, Result

MARK = {"passed": ".", "fallback": "f", "not_supported": "s", "skipped": "-", "failed": "F"}


class Progress:
    """One line of marks per tier, like pytest: ``.`` passed, ``F`` failed, ``s`` not supported,
    ``f`` passed with CPU fallbacks, ``-`` skipped."""

    def __init__(self, total: int, stream: TextIO = sys.stdout, quiet: bool = False) -> None:
        self.total = total
        self.stream = stream
        self.quiet = quiet
        self.n = 0
        self.tier = ""
        self.col = 0

    def __call__(self, r: Result) -> None:
        self.n += 1
        if self.quiet:
            return
        if r.tier != self.tier:
            if self.tier:
                self.stream.write("\n")
            self.tier = r.tier
            head = f"{r.tier:<12} "
            self.stream.write(head)
            self.col = len(head)
        self.stream.write(MARK.get(r.outcome, "?"))
        self.col += 1
        if self.col >= 100:
            self.stream.write(f" [{self.n}/{self.total}]\n{'':<13}")
            self.col = 13
        self.stream.flush()

    def finish(self) -> None:
        if not self.quiet and self.n:
            self.stream.write(f" [{self.n}/{self.total}]\n")
            self.stream.flush()


def tier_counts(results: list[Result]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for tier in TIERS:
        rs = [r for r in results if r.tier == tier]
        if rs:
            c = Counter(r.outcome for r in rs)
            out[tier] = {o: c.get(o, 0) for o in OUTCOMES}
    return out


def failed_tiers(results: list[Result], required: set[str], strict: bool = False) -> list[str]:
    bad = {r.tier for r in results if r.outcome == "failed" or (strict and r.outcome == "fallback")}
    return [t for t in TIERS if t in bad and t in required]


def summary(report: dict[str, Any], results: list[Result], stream: TextIO = sys.stdout, max_failures: int = 40) -> None:
    meta = report["metadata"]
    w = stream.write
    fails = [r for r in results if r.outcome == "failed"]
    if fails:
        w(f"\n{'=' * 30} failures {'=' * 30}\n")
        for r in fails[:max_failures]:
            w(f"FAILED {r.id}: {r.message[:600]}\n")
            if r.expected is not None or r.got is not None:
                w(f"    expected: {str(r.expected)[:300]}\n    got:      {str(r.got)[:300]}\n")
        if len(fails) > max_failures:
            w(f"... and {len(fails) - max_failures} more (see the JSON or HTML report)\n")
    w(f"\n{'=' * 24} conformance summary: {meta['device']} {'=' * 24}\n")
    w(f"plugin {meta['plugin']} {meta.get('plugin_version', '')}, contract {meta.get('contract', '?')} "
      f"(core {meta.get('core_contract', '?')}), {meta.get('kernel_count', 0)} kernels registered\n")
    props = meta.get("properties") or {}
    if props:
        w(f"device: {props.get('name', '?')} [{props.get('vendor', '?')}]\n")
    w(f"{'tier':<12} {'passed':>7} {'failed':>7} {'not sup.':>9} {'fallback':>9} {'skipped':>8}   status\n")
    for tier, c in report["tiers"].items():
        status = "FAIL" if c["failed"] else ("ok" if c["passed"] + c["fallback"] else "-")
        req = "" if tier in report["required_tiers"] else " (optional)"
        w(f"{tier:<12} {c['passed']:>7} {c['failed']:>7} {c['not_supported']:>9} {c['fallback']:>9} {c['skipped']:>8}   {status}{req}\n")
    for tier, why in report.get("unavailable_tiers", {}).items():
        w(f"{tier:<12} {'':>7} {'':>7} {'':>9} {'':>9} {'':>8}   not run: {why}\n")
    fb = meta.get("fallbacks") or {}
    if fb:
        w("CPU fallbacks: " + ", ".join(f"{k} x{v}" for k, v in sorted(fb.items())) + "\n")
    w(f"{len(results)} cases in {meta['duration_s']:.1f} s; worker restarts after crashes/timeouts: {meta.get('worker_restarts', 0)}\n")
    w(f"result: {'FAILED (' + ', '.join(report['failed_tiers']) + ')' if report['failed_tiers'] else 'PASSED'}\n")


def build(meta: dict[str, Any], results: list[Result], required: set[str], strict: bool,
          unavailable: dict[str, str]) -> dict[str, Any]:
    fb: Counter[str] = Counter()
    for r in results:
        fb.update(r.fallbacks)
    meta = dict(meta, fallbacks=dict(fb))
    tiers = tier_counts(results)
    return {
        "format": "oarlock-conformance/1",
        "metadata": meta,
        "tiers": tiers,
        "required_tiers": sorted(t for t in required if t in tiers),
        "unavailable_tiers": unavailable,
        "failed_tiers": failed_tiers(results, required, strict),
        "results": [r.to_dict() for r in results],
    }


def _atomic_write(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".conformance-{os.getpid()}-{os.urandom(4).hex()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies (mkstemp forces 0600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json(report: dict[str, Any], path: str) -> None:
    _atomic_write(path, json.dumps(report, indent=1, default=str))


def write_junit(report: dict[str, Any], path: str) -> None:
    meta = report["metadata"]
    suites = ET.Element("testsuites", name=f"oarlock conformance {meta['device']}")
    by_tier: dict[str, list[dict[str, Any]]] = {}
    for r in report["results"]:
        by_tier.setdefault(r["tier"], []).append(r)
    for tier, rs in by_tier.items():
        c = Counter(r["outcome"] for r in rs)
        suite = ET.SubElement(
            suites, "testsuite", name=f"{meta['device']}.{tier}", tests=str(len(rs)), failures=str(c["failed"]),
            errors="0", skipped=str(c["not_supported"] + c["skipped"]), time=f"{sum(r['duration'] for r in rs):.3f}",
        )
        props = ET.SubElement(suite, "properties")
        for k in ("device", "plugin", "plugin_version", "contract", "kernel_count"):
            ET.SubElement(props, "property", name=k, value=str(meta.get(k, "")))
        for r in rs:
            tc = ET.SubElement(suite, "testcase", classname=f"conformance.{tier}", name=r["id"].split("/", 1)[-1],
                               time=f"{r['duration']:.3f}")
            if r["outcome"] == "failed":
                f = ET.SubElement(tc, "failure", message=r["message"][:500])
                f.text = f"{r['message']}\nexpected: {r['expected']}\ngot: {r['got']}"
            elif r["outcome"] in ("not_supported", "skipped"):
                ET.SubElement(tc, "skipped", message=f"{r['outcome']}: {r['message']}")
            elif r["outcome"] == "fallback":
                ET.SubElement(tc, "system-out").text = r["message"]
    ET.indent(suites)
    _atomic_write(path, ET.tostring(suites, encoding="unicode", xml_declaration=True))
