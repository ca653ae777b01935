"""Reports: progress and summary on the terminal, JSON, JUnit XML (the HTML page is in html.py)."""

from __future__ import annotations

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any, TextIO

from .cases import OUTCOMES, TIERS, Result

MARK = {"passed": ".", "fallback": "f", "not_supported": "s", "skipped": "-", "failed": "F"}


class Progress:
    """One line of marks per tier, like pytest: ``.`` passed, ``F`` failed, ``s`` not supported,
    ``f`` passed with CPU fallbacks, ``-`` skipped.

    Results arrive out of tier order (not-supported cases are decided first; with ``-j N``
    workers run the next tier's cases while the last of a tier finish), so given ``per_tier``
    (cases per tier) a tier's marks wait until every tier before it is complete."""

    def __init__(
        self,
        total: int,
        stream: TextIO = sys.stdout,
        quiet: bool = False,
        per_tier: dict[str, int] | None = None,
    ) -> None:
        self.total = total
        self.stream = stream
        self.quiet = quiet
        self.per_tier = {t: per_tier[t] for t in TIERS if per_tier and per_tier.get(t)}
        self.held: dict[str, list[str]] = {}  #: marks not shown yet, per tier
        self.shown: Counter[str] = Counter()
        self.n = 0
        self.tier = ""
        self.col = 0

    def __call__(self, r: Result) -> None:
        if self.quiet:
            return
        self.held.setdefault(r.tier, []).append(MARK.get(r.outcome, "?"))
        for tier in self.per_tier or [r.tier]:
            self._show(tier)
            if self.shown[tier] < self.per_tier.get(tier, 0):
                break  # later tiers wait for this one
        self.stream.flush()

    def _show(self, tier: str) -> None:
        for mark in self.held.pop(tier, []):
            self.n += 1
            self.shown[tier] += 1
            if tier != self.tier:
                if self.tier:
                    self.stream.write("\n")
                self.tier = tier
                head = f"{tier:<12} "
                self.stream.write(head)
                self.col = len(head)
            self.stream.write(mark)
            self.col += 1
            if self.col >= 100:
                self.stream.write(f" [{self.n}/{self.total}]\n{'':<13}")
                self.col = 13

    def finish(self) -> None:
        if self.quiet:
            return
        for tier in [*self.per_tier, *self.held]:  # anything still held (counts that did not add up)
            self._show(tier)
        if self.n:
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


def cause_of(r: dict[str, Any]) -> str:
    """A failure's message with the case's own op and dtype written ``{op}`` and ``{dtype}``,
    and long hex strings (cache keys, addresses) as ``…``: failures with one cause (a compiler
    that builds nothing, a missing library) then read alike."""
    msg = r.get("message") or ""
    op, dtype = r.get("op") or "", r.get("dtype") or ""
    names = {op: "{op}", dtype: "{dtype}"}
    if op and dtype:
        names.update({f"{op}_{dtype}": "{op}_{dtype}", f"{dtype}_{op}": "{dtype}_{op}"})
    names.pop("", None)
    if names:
        # NOTE: whole identifiers only: one that merely contains the op's name (pad_width when
        # the op is pad) is kept; a kernel named after both (add_float32) reads alike
        msg = re.sub(r"[A-Za-z0-9_]+", lambda m: names.get(m.group(0), m.group(0)), msg)
    return re.sub(r"\b(0x[0-9a-f]+|(?=[0-9a-f]*[a-f])[0-9a-f]{8,})\b", "…", msg)


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its start and its end: a traceback's
    last line (the exception itself) is what a reader needs most."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    return f"{text[:head]} [... {len(text) - limit} characters left out ...] {text[-tail:]}"


def failure_groups(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Failed cases grouped by :func:`cause_of`, in order of first appearance:
    ``[{"cause", "count", "ids"}]``. A group of one keeps its own message as the cause."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        if r["outcome"] == "failed":
            groups.setdefault(cause_of(r), []).append(r)
    return [
        {"cause": c if len(rs) > 1 else rs[0]["message"], "count": len(rs), "ids": [r["id"] for r in rs]}
        for c, rs in groups.items()
    ]


def not_supported(results: list[Result], compile_access: bool = False) -> dict[str, Any]:
    """How many cases were not supported, and why: ``{"count", "reasons": [{"reason",
    "count"}], "compile_access"}``, reasons grouped as :func:`cause_of` groups failures;
    ``compile_access`` counts the primitive cases of a plugin with compile access among them
    (the core generates primitives for such a plugin: each one left is worth a look)."""
    groups: Counter[str] = Counter()
    for r in results:
        if r.outcome == "not_supported":
            groups[cause_of(r.to_dict())] += 1
    return {
        "count": sum(groups.values()),
        "reasons": [{"reason": k, "count": n} for k, n in groups.most_common()],
        "compile_access": sum(1 for r in results if r.outcome == "not_supported" and r.tier == "primitives")
        if compile_access
        else 0,
    }


def summary(
    report: dict[str, Any],
    results: list[Result],
    stream: TextIO = sys.stdout,
    max_failures: int = 40,
    max_ids: int = 8,
) -> None:
    meta = report["metadata"]
    w = stream.write
    by_id = {r.id: r for r in results}
    groups = failure_groups([r.to_dict() for r in results])
    if groups:
        n = sum(g["count"] for g in groups)
        w(
            f"\n{'=' * 30} failures: {n} cases, {len(groups)} {'cause' if len(groups) == 1 else 'causes'} {'=' * 30}\n"
        )
        for g in groups[:max_failures]:
            first = by_id[g["ids"][0]]
            if g["count"] == 1:
                w(f"FAILED {first.id}: {clip(first.message, 600)}\n")
            else:
                ids = ", ".join(g["ids"][:max_ids]) + (
                    f", ... and {g['count'] - max_ids} more" if g["count"] > max_ids else ""
                )
                w(f"FAILED {g['count']} cases: {clip(g['cause'], 600)}\n    cases: {ids}\n")
            if first.expected is not None or first.got is not None:
                label = "" if g["count"] == 1 else f" ({first.id})"
                w(
                    f"    expected{label}: {clip(str(first.expected), 300)}\n    got{label}:      {clip(str(first.got), 300)}\n"
                )
        if len(groups) > max_failures:
            w(f"... and {len(groups) - max_failures} more causes (see the JSON or HTML report)\n")
    w(f"\n{'=' * 24} conformance summary: {meta['device']} {'=' * 24}\n")
    w(
        f"plugin {meta['plugin']}{' ' + meta['plugin_version'] if meta.get('plugin_version') else ''}, contract {meta.get('contract', '?')} "
        f"(core {meta.get('core_contract', '?')}), {meta.get('kernel_count', 0)} kernels registered\n"
    )
    props = meta.get("properties") or {}
    if props:
        w(f"device: {props.get('name', '?')} [{props.get('vendor', '?')}]\n")
    w(f"{'tier':<12} {'passed':>7} {'failed':>7} {'not sup.':>9} {'fallback':>9} {'skipped':>8}   status\n")
    for tier, c in report["tiers"].items():
        status = "FAIL" if c["failed"] else ("ok" if c["passed"] + c["fallback"] else "-")
        req = "" if tier in report["required_tiers"] else " (optional)"
        w(
            f"{tier:<12} {c['passed']:>7} {c['failed']:>7} {c['not_supported']:>9} {c['fallback']:>9} {c['skipped']:>8}   {status}{req}\n"
        )
    for tier, why in report.get("unavailable_tiers", {}).items():
        w(f"{tier:<12} {'':>7} {'':>7} {'':>9} {'':>9} {'':>8}   not run: {why}\n")
    fb = meta.get("fallbacks") or {}
    if fb:
        w("CPU fallbacks: " + ", ".join(f"{k} x{v}" for k, v in sorted(fb.items())) + "\n")
    w(
        f"{len(results)} cases in {meta['duration_s']:.1f} s; worker restarts after crashes/timeouts: {meta.get('worker_restarts', 0)}\n"
    )
    ns = report.get("not_supported") or {"count": 0, "reasons": []}
    ran = sum(1 for r in results if r.outcome in ("passed", "fallback", "failed"))
    w(f"{ran} of {len(results)} cases ran; {ns['count']} not supported")
    w(":\n" if ns["count"] else "\n")
    for g in ns["reasons"][:max_failures]:
        w(f"  {g['count']:>5} x {g['reason']}\n")
    if ns.get("compile_access"):
        w(
            f"NOTE: the plugin has compile access, yet {ns['compile_access']} primitive cases are neither "
            f"registered nor generated by the core (see docs/conformance.md, 'compile access')\n"
        )
    verdict = "FAILED (" + ", ".join(report["failed_tiers"]) + ")" if report["failed_tiers"] else "PASSED"
    if not report["failed_tiers"] and ns["count"]:
        verdict += f" ({ran} cases ran; {ns['count']} not supported, listed above)"
    w(f"result: {verdict}\n")


def build(
    meta: dict[str, Any], results: list[Result], required: set[str], strict: bool, unavailable: dict[str, str]
) -> dict[str, Any]:
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
        "failure_groups": failure_groups([r.to_dict() for r in results]),
        "not_supported": not_supported(results, bool(meta.get("has_compiler"))),
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
            suites,
            "testsuite",
            name=f"{meta['device']}.{tier}",
            tests=str(len(rs)),
            failures=str(c["failed"]),
            errors="0",
            skipped=str(c["not_supported"] + c["skipped"]),
            time=f"{sum(r['duration'] for r in rs):.3f}",
        )
        props = ET.SubElement(suite, "properties")
        for k in ("device", "plugin", "plugin_version", "contract", "kernel_count"):
            ET.SubElement(props, "property", name=k, value=str(meta.get(k, "")))
        for r in rs:
            tc = ET.SubElement(
                suite,
                "testcase",
                classname=f"conformance.{tier}",
                name=r["id"].split("/", 1)[-1],
                time=f"{r['duration']:.3f}",
            )
            if r["outcome"] == "failed":
                f = ET.SubElement(tc, "failure", message=clip(r["message"], 500))
                f.text = f"{r['message']}\nexpected: {r['expected']}\ngot: {r['got']}"
            elif r["outcome"] in ("not_supported", "skipped"):
                ET.SubElement(tc, "skipped", message=f"{r['outcome']}: {r['message']}")
            elif r["outcome"] == "fallback":
                ET.SubElement(tc, "system-out").text = r["message"]
    ET.indent(suites)
    _atomic_write(path, ET.tostring(suites, encoding="unicode", xml_declaration=True))
