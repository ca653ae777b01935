"""What a conformance run is made of: targets, cases and results.

Collecting cases never touches the device (only the plugin registry), so the runner can fork
workers that open the device themselves, and a crash in one of them loses one case.
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Tiers in the order a vendor climbs them.
TIERS = (
    "runtime",
    "primitives",
    "random",
    "lowp",
    "autograd",
    "composites",
    "static",
    "compile",
    "collectives",
    "models",
)

#: Outcomes, best first. "fallback" passed, but part of it ran on the CPU plugin.
OUTCOMES = ("passed", "fallback", "not_supported", "skipped", "failed")


@dataclass
class Target:
    """The device under test, as the registry describes it (no device work)."""

    device: str
    type: str
    plugin: str
    kernels: dict[str, set[str]]  #: op -> dtype names the device's own plugin registers
    cpu_kernels: dict[str, set[str]]
    has_compiler: bool = False
    has_communicator: bool = False

    def registers(self, op: str, dtype: str) -> bool:
        return dtype in self.kernels.get(op, ())


@dataclass
class Case:
    id: str
    tier: str
    fn: Callable[[], dict[str, Any] | None] | None
    op: str = ""
    dtype: str = ""
    #: an outcome decided without running (e.g. "not_supported"), with its reason
    preset: str | None = None
    reason: str = ""
    timeout: float | None = None


@dataclass
class Result:
    id: str
    tier: str
    outcome: str
    op: str = ""
    dtype: str = ""
    message: str = ""
    expected: str | None = None
    got: str | None = None
    duration: float = 0.0
    fallbacks: dict[str, int] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)  #: e.g. loss curves of a model case

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def _generated_primitives(device_type: str) -> dict[str, set[str]]:
    """What the core generates on ``device_type``, asked in a child process.

    NOTE: answering needs the plugin's compiler, hence its runtime (an OpenCL context, threads
    of the driver); the runner forks its case workers from this process, and a forked copy of
    a live driver hangs. So the parent never starts a device: a fresh interpreter answers."""
    code = (
        "import json, sys; from framework import compiler; "
        "print(json.dumps({k: sorted(v) for k, v in compiler.generated_primitives(sys.argv[1]).items()}))"
    )
    p = subprocess.run([sys.executable, "-c", code, device_type], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(
            f"[conformance] listing the primitives the core generates on '{device_type}' "
            f"failed:\n{p.stderr[-2000:]}"
        )
    return {k: set(v) for k, v in json.loads(p.stdout.strip().splitlines()[-1]).items()}


def make_target(device: str) -> Target:
    """Describe ``device`` from the registry only."""
    from framework import testing

    d = testing.parse_device(device, check=False)
    reg = testing.registry()
    if d.type not in reg.runtimes:
        testing.parse_device(d.type)  # raises the readable "unknown device / broken plugin" error
    kernels: dict[str, set[str]] = {}
    cpu: dict[str, set[str]] = {}
    for op, typ, dt in reg.kernels:
        if typ == d.type:
            kernels.setdefault(op, set()).add(dt.name)
        if typ == "cpu":
            cpu.setdefault(op, set()).add(dt.name)
    if d.type in reg.compilers:  # what the core generates for a plugin with compile access
        for op, dts in _generated_primitives(d.type).items():
            kernels.setdefault(op, set()).update(dts)
    return Target(
        device=str(d),
        type=d.type,
        plugin=testing.plugin_of(d.type) or "?",
        kernels=kernels,
        cpu_kernels=cpu,
        has_compiler=d.type in reg.compilers,
        has_communicator=d.type in reg.communicators,
    )


def collect(target: Target, tiers: tuple[str, ...] = TIERS, pattern: str | None = None) -> list[Case]:
    """Every case of the chosen tiers, filtered by ``-k`` (substring or glob on the case id)."""
    from .tiers import TIER_MODULES

    out: list[Case] = []
    for tier in TIERS:
        if tier not in tiers or tier not in TIER_MODULES:
            continue
        out.extend(TIER_MODULES[tier]().cases(target))
    if pattern:
        pats = [p.strip() for p in pattern.split(",") if p.strip()]
        out = [c for c in out if any(_match(p, c.id) for p in pats)]
    return out


def _match(pattern: str, cid: str) -> bool:
    if pattern.startswith("not "):
        return not _match(pattern[4:].strip(), cid)
    if any(ch in pattern for ch in "*?"):
        return fnmatch.fnmatch(cid, pattern)
    return pattern in cid
