"""The Oarlock conformance suite: how far a device plugin is from "everything works".

Run it with ``oarlock conformance --device NAME`` (see docs/conformance.md). Tiers a vendor
climbs: runtime, primitives, random, autograd, composites, compile, collectives, models.
Each case runs in a forked worker with a timeout, so a crashing or hanging kernel fails its
own case and the run continues.
"""

from __future__ import annotations

from .cases import OUTCOMES, TIERS, Case, Result, Target, collect, make_target

__all__ = ["OUTCOMES", "TIERS", "Case", "Result", "Target", "collect", "make_target"]
