"""The programs of a ``to_static`` function per outcome of its size guards.

A function traced with dynamic dims keeps the guards its trace took (the Python branches on
sizes, a slice clamped to a dim: :mod:`framework.jit.size_guards`). Here: which guards a set of
probe traces took alike (:func:`same_guards`), which program serves a call whose sizes make a
guard fail (:func:`guarded`: traced at probe sizes that take the call's branches, else with the
guard's dims fixed, else at the call's own sizes), which serves a call whose sizes avoid a
probe trace's error (:func:`failed_at_probes`) and which ``None`` dims a function needs equal
(:func:`equal_symbols`). :class:`framework.jit.api.StaticFunction` keeps the programs.

>>> import framework as fw
>>> from framework.static import InputSpec
>>> def f(x):
...     return x[:4] * 2.0  # x[:b] where b < 4: a second program, not one per size
>>> sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 2])])
>>> [sf(fw.ones([n, 2])).shape[0] for n in (9, 3, 2, 7)], len(sf.programs)
([4, 3, 2, 4], 2)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from adapter_api import OpArgumentError

from .._src.tensor import Tensor
from . import size_guards, symbolic
from .trace import TracingError

if TYPE_CHECKING:
    from .api import ConcreteProgram, StaticFunction


class Specialise(TracingError):
    """The traces at the probe sizes disagree beyond affine dims: the dynamic dims must be
    specialised (the message says where)."""


def same_guards(
    lists: list[list[size_guards.Guard]], bindings: list[dict[str, int]]
) -> tuple[size_guards.Guard, ...]:
    """The guards every probe trace took alike; a branch on a size that went both ways
    between the probes cannot be generalised (the dims are then specialised)."""
    first = {g.condition: g for g in lists[0]}
    for gs, b in zip(lists[1:], bindings[1:]):
        for g in gs:
            g0 = first.get(g.condition)
            if g0 is None or g0.outcome != g.outcome:
                raise Specialise(
                    f"a Python branch on a dynamic size at {g.where}: "
                    f"{size_guards.show(g.left)} {g.op} {size_guards.show(g.right)} is {g.outcome} at "
                    f"{b}" + (f" and {g0.outcome} at {bindings[0]}" if g0 is not None else "")
                )
        if len(gs) != len(first):
            raise Specialise("the branches on dynamic sizes differ between the probe sizes")
    return tuple(lists[0])


def equal_symbols(
    run: Callable[[dict[str, int]], Any],
    symbols: list[str],
    failed: dict[str, int],
    exc: Exception,
    probe: symbolic.Probe,
) -> dict[str, str]:
    """Two ``None`` dims the function needs equal (``x + y`` of ``[None, 8]`` inputs, a mask
    and the query it masks): the probe that moved one alone failed, the probe that moves it
    with another passes. Returns ``{moved: other}`` (one symbol then stands for both, and a
    call with different sizes is refused by the program's input check)."""
    moved = [s for s in symbols if failed[s] == probe.step]
    for s in moved:
        for other in symbols:
            if other == s or other in moved:
                continue
            b = dict(failed)
            b[other] = probe.step
            try:
                run(b)
            except OpArgumentError:
                continue
            return {s: other} if symbols.index(other) < symbols.index(s) else {other: s}
    raise Specialise(
        f"tracing with the dynamic dims at {failed} fails ({exc}); name dims that must be equal "
        f"alike in the input_spec (InputSpec(['b', 't', 8]) and InputSpec(['b', 't']))"
    )


def guarded(
    sf: StaticFunction,
    cp: ConcreteProgram,
    specs: Sequence[tuple[tuple[int | str, ...], np.dtype]],
    tensors: Sequence[Tensor],
    dev: Any,
    extra: Any,
    requires: Any,
    depth: int = 0,
) -> ConcreteProgram:
    """``cp``, or where a guard on the sizes fails for this call (a Python branch on a size
    goes the other way) the program of the branches these sizes take: one per outcome of
    ``cp``'s guards, traced at probe sizes that take the same branches. Sizes no probe
    can stand for get a program with that dim fixed (``if t == 1``: the other dims stay
    dynamic), else a program of their own, with a warning. A branch that fails at its probe
    sizes (an index past a small dim) is traced at the call's sizes: eager's error, naming them."""
    binding = {
        d: n for (dims, _), t in zip(specs, tensors) for d, n in zip(dims, t.shape) if isinstance(d, str)
    }
    outcomes = tuple(g.holds(binding) for g in cp.size_guards)
    if all(outcomes):
        return cp
    if not binding:
        return cp  # every dim fixed: a program of these sizes
    symbols = list(dict.fromkeys(binding))
    static = {d for dims, _ in specs for d in dims if isinstance(d, int)}
    probe = symbolic.probe_for(symbols, cp.size_guards, binding, sorted(static))
    exact = [(tuple(t.shape), t.dtype) for t in tensors]
    if probe is not None:
        try:
            got = sf.get_concrete_program(specs, dev, extra, requires, probe, (("guards", outcomes),))
        except Specialise:
            got = None
        except OpArgumentError:  # the branch these sizes take fails (an index past the dim):
            return sf.get_concrete_program(exact, dev, extra, requires)  # their error, at them
        if got is not None and all(g.holds(binding) for g in got.size_guards):
            return got
    # `if t == 1`, `if t > 1` at t = 1: the sizes the failed guards read fixed, the other dims dynamic
    failed = [g for g, ok in zip(cp.size_guards, outcomes) if not ok]
    # fix the sizes of the guards no probe can take alone (`t == 1`); all failed, else
    alone = [g for g in failed if symbolic.probe_for(symbols, [g], binding, sorted(static)) is None]
    fixed = {
        s: binding[s]
        for g in alone or failed
        for s in size_guards.symbols_of(g.left, g.right)
        if s in binding
    }
    if fixed and depth < 2:
        specs = [(tuple(fixed.get(d, d) for d in dims), t) for dims, t in specs]  # type: ignore[misc]
        try:
            got = sf.get_concrete_program(specs, dev, extra, requires)
            return guarded(sf, got, specs, tensors, dev, extra, requires, depth + 1)
        except Specialise:
            pass
    warnings.warn(
        f"[to_static] {sf.__name__} branches on a dynamic size ({failed[0]}); the sizes "
        f"{binding} take another branch, traced for these sizes alone (one program per size)",
        stacklevel=3,
    )
    return sf.get_concrete_program(exact, dev, extra, requires)


def failed_at_probes(
    sf: StaticFunction,
    exc: Exception,
    specs: Sequence[tuple[tuple[int | str, ...], np.dtype]],
    tensors: Sequence[Tensor],
    dev: Any,
    extra: Any,
    requires: Any,
) -> ConcreteProgram | None:
    """The probe trace failed with an argument error after guards the call's sizes take the
    other way (``x[12]``: ``b <= 12`` at the probe 11, not at 20): the program of probes on
    the call's side of them, or None where none is found (the caller then traces the call's
    own sizes)."""
    taken = getattr(exc, "size_guards", ())
    binding = {
        d: n for (dims, _), t in zip(specs, tensors) for d, n in zip(dims, t.shape) if isinstance(d, str)
    }
    if not taken or all(g.holds(binding) for g in taken):
        return None
    static = sorted({d for dims, _ in specs for d in dims if isinstance(d, int)})
    probe = symbolic.probe_for(list(binding), taken, binding, static)
    if probe is None:
        return None
    outcomes = tuple(g.truth(binding) for g in taken)
    try:
        cp = sf.get_concrete_program(specs, dev, extra, requires, probe, (("failed", outcomes),))
    except (Specialise, OpArgumentError):
        return None
    return cp if all(g.holds(binding) for g in cp.size_guards) else None
