"""The pass manager: named passes in levels, timing and statistics per pass, IR printing
around a named pass and verification after each pass in debug mode.

>>> from framework.ir import passes
>>> pm = passes.PassManager.level("O2")
>>> [p.name for p in pm.passes]
['fold', 'canonicalize', 'cse', 'fuse', 'dce']

Environment:

- ``OARLOCK_PRINT_IR=cse`` prints the program before and after the pass named ``cse``
  (comma-separated names; ``all`` or ``1`` for every pass) to stderr;
- ``OARLOCK_VERIFY_IR=1`` (debug mode) verifies the program after every pass and names the
  pass that broke it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..._src import env
from ..core import IRError, Program
from ..verify import VerifyError, verify


@dataclass
class PassContext:
    """What passes may read and extend besides the program.

    ``constants`` maps a named ``builtin.constant`` to its tensor (constant folding adds the
    tensors it makes; DCE drops the ones no op reads). ``device`` is the device the program
    runs on (rewrites to a fused op ask whether its plugin registers a kernel there).
    ``no_signed_zeros`` allows rewrites that may turn ``-0.0`` into ``+0.0`` (``x + 0.0 -> x``),
    as fast-math's ``nsz``."""

    constants: dict[str, Any] = field(default_factory=dict)
    device: str | None = None
    no_signed_zeros: bool = False


@dataclass
class PassStats:
    """What one pass did: ops before and after, ops removed and rewritten, seconds."""

    name: str
    ops_before: int = 0
    ops_after: int = 0
    removed: int = 0
    rewritten: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        return (
            f"{self.name:<13} {self.ops_before:>5} -> {self.ops_after:<5} removed {self.removed:<4} "
            f"rewritten {self.rewritten:<4} {self.seconds * 1e3:8.3f} ms"
        )


class Pass:
    """A transformation of a program in place. Subclasses set ``name`` and define
    :meth:`run`, which returns the number of ops it rewrote (removals are counted by the
    manager from the op counts)."""

    name = "pass"

    def run(self, program: Program, ctx: PassContext) -> int:
        raise NotImplementedError(f"need run() in pass {self.name}")

    def __repr__(self) -> str:
        return f"<Pass {self.name}>"


class FunctionPass(Pass):
    """A pass made from a function ``fn(program, ctx) -> rewritten count``."""

    def __init__(self, name: str, fn: Callable[[Program, PassContext], int]) -> None:
        self.name = name
        self.fn = fn

    def run(self, program: Program, ctx: PassContext) -> int:
        return self.fn(program, ctx)


#: the pass registry: name -> factory
PASSES: dict[str, Callable[[], Pass]] = {}

#: levels: names of passes in order
LEVELS: dict[str, tuple[str, ...]] = {
    "O0": (),
    "O1": ("canonicalize", "cse", "dce"),
    "O2": ("fold", "canonicalize", "cse", "fuse", "dce"),
    # O2 and the rewrites that hold up to rounding, for programs that only run inference (an
    # imported ONNX model's passes="inference"): BatchNorm folded into the conv before it, then
    # each conv with its bias, residual add and relu in the blocked layout where the device has
    # the kernel (conv_fusion.py)
    "inference": ("conv_fold", "fold", "canonicalize", "cse", "conv_nchwc", "fuse", "dce"),
}
DEFAULT_LEVEL = "O2"


def register_pass(name: str, factory: Callable[[], Pass]) -> None:
    """Make a pass available by name to :meth:`PassManager.named` and ``OARLOCK_PRINT_IR``."""
    PASSES[name] = factory


def _count(program: Program) -> int:
    return sum(1 for _ in program.walk())


class PassManager:
    """Runs passes in order over a program, with statistics, printing and verification.

    ``verify_each`` (default: the ``OARLOCK_VERIFY_IR`` switch) verifies after every pass;
    ``print_ir`` (default: ``OARLOCK_PRINT_IR``) names the passes to print around."""

    def __init__(
        self,
        passes: Iterable[Pass],
        verify_each: bool | None = None,
        print_ir: str | Iterable[str] | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.passes = list(passes)
        self.verify_each = env.flag("OARLOCK_VERIFY_IR", False) if verify_each is None else verify_each
        if print_ir is None:
            print_ir = os.environ.get("OARLOCK_PRINT_IR", "")
        names = print_ir.split(",") if isinstance(print_ir, str) else list(print_ir)
        self.print_ir = {n.strip() for n in names if n.strip()}
        if self.print_ir & {"1", "true", "yes", "on"}:  # the switch form (as for the reshard log)
            self.print_ir = {"all"}
        unknown = self.print_ir - set(PASSES) - {"all"}
        if unknown:
            raise IRError(
                f"[passes] OARLOCK_PRINT_IR names {sorted(unknown)}, which are not passes; "
                f"choose from {sorted(PASSES)} or 'all'"
            )
        self.stream = stream
        self.stats: list[PassStats] = []

    @staticmethod
    def named(names: Iterable[str], **kwargs: Any) -> PassManager:
        """A manager for passes by name (``["dce", "cse"]`` or ``"dce,cse"``)."""
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        out = []
        for n in names:
            if n not in PASSES:
                raise IRError(
                    f"[passes] unknown pass '{n}'; choose from {sorted(PASSES)} or a level {sorted(LEVELS)}"
                )
            out.append(PASSES[n]())
        return PassManager(out, **kwargs)

    @staticmethod
    def level(level: str = DEFAULT_LEVEL, **kwargs: Any) -> PassManager:
        """The pipeline of an optimisation level: ``O0`` (none), ``O1`` (canonicalize, cse,
        dce), ``O2`` (fold, canonicalize, cse, fuse, dce: the default) or ``inference`` (O2
        after ``conv_fold``, which holds up to rounding)."""
        if level not in LEVELS:
            raise IRError(
                f"[passes] unknown level {level!r}; choose from {sorted(LEVELS)} or name the passes"
            )
        return PassManager.named(LEVELS[level], **kwargs)

    def _wants_print(self, name: str) -> bool:
        return "all" in self.print_ir or name in self.print_ir

    def _print(self, when: str, name: str, program: Program) -> None:
        out = self.stream or sys.stderr
        out.write(f"// ----- IR {when} pass '{name}' -----\n{program}")

    def run(self, program: Program, ctx: PassContext | None = None) -> list[PassStats]:
        """Run every pass over ``program`` (in place); returns (and keeps in ``stats``) one
        :class:`PassStats` per pass."""
        ctx = ctx or PassContext()
        self.stats = []
        for p in self.passes:
            before = _count(program)
            if self._wants_print(p.name):
                self._print("before", p.name, program)
            t0 = time.perf_counter()
            rewritten = p.run(program, ctx)
            dt = time.perf_counter() - t0
            after = _count(program)
            if self._wants_print(p.name):
                self._print("after", p.name, program)
            if self.verify_each:
                try:
                    verify(program)
                except VerifyError as exc:
                    raise VerifyError(
                        f"[passes] the program is broken after pass '{p.name}':\n{exc}"
                    ) from None
            self.stats.append(PassStats(p.name, before, after, max(before - after, 0), rewritten, dt))
        return self.stats

    def report(self) -> str:
        """A table of the last run's statistics."""
        return "\n".join(str(s) for s in self.stats)


def optimize(
    program: Program,
    level: str | Iterable[str] | None = DEFAULT_LEVEL,
    constants: Mapping[str, Any] | None = None,
    device: Any = None,
    no_signed_zeros: bool = False,
) -> tuple[dict[str, Any], list[PassStats]]:
    """Run a level (``"O2"``) or named passes over ``program`` in place; returns the named
    constants the program reads afterwards and the statistics. ``level=None`` runs nothing."""
    ctx = PassContext(dict(constants or {}), None if device is None else str(device), no_signed_zeros)
    if level is None:
        return ctx.constants, []
    pm = PassManager.level(level) if isinstance(level, str) and level in LEVELS else PassManager.named(level)
    stats = pm.run(program, ctx)
    return ctx.constants, stats


def run_pipeline(
    program: Program, level: str | Iterable[str], constants: dict[str, Any], device: Any = None
) -> list[PassStats]:
    """What ``to_static`` runs on every traced program: ``level`` (or named passes) over
    ``program`` in place, with ``constants`` (the tracer's named constants) updated in place:
    folded tensors added, unread ones dropped."""
    ctx = PassContext(constants, None if device is None else str(device))
    pm = PassManager.level(level) if isinstance(level, str) and level in LEVELS else PassManager.named(level)
    return pm.run(program, ctx)
