"""The optimizer update as one program: every parameter's update (and the gradient clipping)
traced from the optimizer's own ``_apply_groups`` into a static program, run by the executor
with the compiler's fusion pass.

The program takes the parameters, their gradients and the optimizer states as inputs, and the
step's scalars (the learning rate, Adam's bias corrections, AdamW's decay factor: what
``Optimizer._scalars`` computes on the host) as 0-d inputs, so one program serves every step
and any learning-rate schedule. Its outputs, the new parameters and states, are pointed into
the same tensor objects (as the eager update does), so a Layer and anything else holding them
sees the update.

A program is kept per *layout*: which parameters have a gradient, their shapes and dtypes, the
state slots, the weight decays, and which parameters share a scalar set (parameters whose
step counters or learning-rate scales differ get scalars of their own). Parameters left
without a gradient are not inputs, as eager skips them.

When it is used (``Optimizer(fused=...)``): ``True`` always (on a device without compile access
the program runs unfused through the executor); ``False`` never; ``None`` (the default) when the
compiler is on (``OARLOCK_COMPILE``, default on) and the parameters' device has compile access.
Parameters on several devices, distributed tensors, or a gradient-clipping callable that
cannot be traced, run the eager update (the latter with one warning).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._src.tensor import Tensor, to_tensor
from ..ir import Executor
from ..ir import passes as _passes
from ..jit.trace import TracingError, trace
from .assign import _assign

Work = list[tuple[dict[str, Any], list[tuple[Tensor, Tensor]]]]


def _slots(state: dict[str, Any]) -> tuple[str, ...]:
    """The tensor slots of one parameter's state (a step counter is host state)."""
    return tuple(k for k, v in state.items() if isinstance(v, Tensor))


def _scalars(dt: np.dtype, values: list[float], device: Any) -> list[Tensor]:
    """The step's scalars as 0-d tensors on ``device``: one host-to-device copy, each scalar a
    view of it."""
    t = to_tensor(np.asarray(values, dtype=dt), device=device)
    return [Tensor._make(t._block, t._offset + i * dt.itemsize, (), dt, t.device) for i in range(len(values))]


def wanted(opt: Any, device: Any) -> bool:
    """Whether ``opt`` runs its update as a program on ``device`` (see the module docstring)."""
    if opt.fused is not None:
        return bool(opt.fused)
    from ..compiler import has_compile_access

    return _passes.fusion.compile_enabled() and has_compile_access(device)


class FusedUpdate:
    """The update programs of one optimizer (one per layout)."""

    def __init__(self, opt: Any) -> None:
        self.opt = opt
        self.programs: dict[Any, tuple[Executor, list[tuple[int, str]]]] = {}
        self.failed: str | None = None  #: why the programs are off for this optimizer
        self.last: Executor | None = None  #: the executor of the last step

    def step(self, work: Work, plan: list[list[dict[str, float]]]) -> bool:
        """Run one update; False when it must run eagerly instead (nothing was changed)."""
        opt = self.opt
        pairs = [pg for _, pgs in work for pg in pgs]
        dev = pairs[0][0].device
        if self.failed is not None or any(t.device != dev or t._dist for pg in pairs for t in pg):
            return False  # several devices, or distributed tensors (their ops meet the interceptor)
        if not wanted(opt, dev):
            return False
        # one scalar set per distinct (dtype, scalars): usually one for all parameters
        states = opt._state
        sets: dict[tuple[Any, ...], int] = {}
        layout = []
        own: list[Tensor] = []  # the parameters' state tensors, in the program's input order
        written: list[Tensor] = []  # what its outputs update: each parameter, then its states
        for (group, pgs), row in zip(work, plan):
            for (p, g), sc in zip(pgs, row):
                st = states.setdefault(id(p), {})
                opt._init_state(p, st)
                # keyed by the dtype itself: bfloat16's .str is '<V2', a raw 2-byte void
                k = sets.setdefault((p.dtype, tuple(sc.items())), len(sets))
                slots = _slots(st)
                kept = [st[n] for n in slots]
                own += kept
                written += [p, *kept]
                extra = (repr(getattr(p, "regularizer", None)), getattr(p, "need_clip", True))
                layout.append((id(p), p.shape, p.dtype, g.shape, g.dtype, slots, k, tuple(sc), extra))
            layout.append(("group", group["weight_decay"]))
        key = (tuple(layout), id(opt.grad_clip), str(dev))
        hit = self.programs.get(key)
        if hit is None:
            try:
                hit = self.programs[key] = self._build(work, plan, sets, dev)
            except TracingError as exc:
                self.failed = str(exc)
                warnings.warn(
                    f"[{type(opt).__name__}.step] the update cannot run as a program ({exc}); "
                    f"it runs eagerly",
                    stacklevel=3,
                )
                return False
        ex = hit[0]
        inputs = [p for p, _ in pairs] + [g for _, g in pairs] + own
        for (dtype, items), _ in sorted(sets.items(), key=lambda kv: kv[1]):
            inputs += _scalars(dtype, [v for _, v in items], dev)
        results = ex(*inputs)  # written in place (Executor(inplace=...))
        for r, t in zip(results, written):  # the outputs' order (_build: ``outs``)
            if r is not t:  # an input given twice (checked by the executor) cannot be in place
                _assign(t, r)
                continue
            t._bump_versions("the optimizer's step")  # its views' too: they see the new values
            t._block.written_at = Tensor._clock  # written in place: so does any tensor on the block
        self.last = ex
        return True

    def _build(
        self, work: Work, plan: list[list[dict[str, float]]], sets: dict[tuple[Any, ...], int], dev: Any
    ) -> tuple[Executor, list[tuple[int, str]]]:
        """Trace ``opt._apply_groups`` over inputs standing for the parameters, gradients,
        states and scalar sets; returns the executor and what each output is (parameter
        index, state slot or "" for the parameter)."""
        opt = self.opt
        pairs = [pg for _, pgs in work for pg in pgs]
        slots = [_slots(opt._state[id(p)]) for p, _ in pairs]
        specs = [(tuple(p.shape), p.dtype) for p, _ in pairs]
        specs += [(tuple(g.shape), g.dtype) for _, g in pairs]
        for (p, _), names in zip(pairs, slots):
            specs += [(tuple(opt._state[id(p)][n].shape), opt._state[id(p)][n].dtype) for n in names]
        ordered = sorted(sets.items(), key=lambda kv: kv[1])
        for (dtype, items), _ in ordered:
            specs += [((), np.dtype(dtype))] * len(items)
        outs: list[tuple[int, str]] = []

        def update(*args: Tensor) -> tuple[Tensor, ...]:
            it = iter(args)
            ps = [next(it) for _ in pairs]
            for tp, (p, _) in zip(ps, pairs):  # what _apply_groups reads of each parameter
                tp.regularizer, tp.need_clip = getattr(p, "regularizer", None), getattr(p, "need_clip", True)
            gs = [next(it) for _ in pairs]
            states = {id(tp): {n: next(it) for n in names} for tp, names in zip(ps, slots)}
            scal = [{name: next(it) for name, _ in items} for (_, items), _ in ordered]
            tw, tplan, k = [], [], 0
            for (group, pgs), row in zip(work, plan):
                tw.append((group, list(zip(ps[k : k + len(pgs)], gs[k : k + len(pgs)]))))
                tplan.append([scal[sets[(p.dtype, tuple(sc.items()))]] for (p, _), sc in zip(pgs, row)])
                k += len(pgs)
            opt._apply_groups(tw, tplan, states)
            res: list[Tensor] = []
            for i, tp in enumerate(ps):
                res.append(tp)
                outs.append((i, ""))
                for n in slots[i]:
                    res.append(states[id(tp)][n])
                    outs.append((i, n))
            return tuple(res)

        name = f"{type(opt).__name__.lower()}_update"
        tr, _ = trace(update, specs, dev, {}, (), name)
        prog = tr.program
        _passes.run_pipeline(prog, _passes.DEFAULT_LEVEL, tr.constants, dev)
        # every new parameter and state is written into the tensor it replaces: the inputs
        # keep their storage, so a step binds nothing anew (and a graph replays it as is)
        where = {(i, ""): i for i in range(len(pairs))}
        k = 2 * len(pairs)
        for i, names in enumerate(slots):
            for n in names:
                where[(i, n)] = k
                k += 1
        inplace = {o: where[key] for o, key in enumerate(outs)}
        run = _passes.fuse_program(prog, dev, tr.constants)
        from ..jit import api

        for hook in api.PREBUILD:  # its fused kernels built in parallel, as a new trace's are
            hook([run], dev)
        return Executor(run, dev, {}, tr.constants, inplace=inplace), outs

    def launches(self) -> int:
        """Kernel launches (instructions) of the last step's program."""
        if self.last is None:
            return 0
        return sum(len(pl.bound) for pl in self.last._plans.values())
