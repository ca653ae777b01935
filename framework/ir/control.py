"""Running the control-flow dialect and run-time random draws inside the executor.

The executor hands every op :func:`handles` says is dynamic to :func:`lower`, which returns
a :class:`Step`; the plan turns it into one instruction (a callable that reads its input
slots and sets its result slots while the program runs, like an eager step).

- ``cf.cond``: each region becomes a sub-program ``(captured...) -> (yielded...)`` run by its
  own executor (so it has its own kernels, slots and buffer plan, lowered once per binding);
  the predicate is read on the host (a device sync, as a Python ``if`` on a tensor is in
  eager mode) and only the taken branch runs.
- ``cf.while``: the cond and body regions become sub-programs
  ``(loop values..., captured...) -> ...``; the body runs while the cond yields true, at most
  :func:`max_while_iterations` times (``OARLOCK_MAX_WHILE_ITERATIONS``, default 10,000,000):
  a loop still running then raises :class:`LoopLimitError` instead of hanging.
- ``op.philox_uniform`` with ``seed = none``: a draw from the global generator at run time:
  each run takes fresh counters exactly as eager mode does (``fw.seed(n)`` then the same calls
  give the same numbers eagerly and in a program).

A result that would share storage with an input of the op, a parameter or a constant (a
branch that returns its captured value) is copied, so the caller's buffer planning never sees
one buffer under two values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from adapter_api import OarlockError, OpArgumentError

from .._src import dispatch, env
from .._src.ops import base
from .._src.tensor import Tensor
from .core import IRError, Operation, Program, Value, clone_op, free_values

#: the random primitive whose ``seed = none`` form draws from the global generator when run
RANDOM_OP = "op.philox_uniform"


#: iterations a while loop may run before it is reported as stuck (``OARLOCK_MAX_WHILE_ITERATIONS``)
DEFAULT_MAX_WHILE_ITERATIONS = 10_000_000


class LoopLimitError(OarlockError):
    """A while loop ran past its iteration cap: its condition never became false."""


def max_while_iterations() -> int:
    """The iteration cap of ``cf.while`` and ``fw.static.nn.while_loop``:
    ``OARLOCK_MAX_WHILE_ITERATIONS`` (read when the loop starts), default 10,000,000."""
    return int(env.number("OARLOCK_MAX_WHILE_ITERATIONS", DEFAULT_MAX_WHILE_ITERATIONS, 1))


def loop_limit_error(what: str, cap: int) -> LoopLimitError:
    return LoopLimitError(
        f"[{what}] the loop ran {cap} iterations and its condition still holds: it looks endless (a condition "
        f"that never becomes false); fix the condition, or raise the cap with OARLOCK_MAX_WHILE_ITERATIONS"
        + (" or while_loop(..., max_iterations=N)" if what == "while_loop" else "")
    )


def draws_at_run(op: Operation) -> bool:
    """``op`` takes its seed and counters from the global generator each time it runs."""
    return op.name == RANDOM_OP and op.attrs.get("seed") is None


def handles(op: Operation) -> bool:
    """The executor runs ``op`` through :func:`lower` (control flow, run-time draws)."""
    return op.dialect == "cf" or draws_at_run(op)


def reads(op: Operation) -> list[Value]:
    """Every value ``op`` reads when it runs: its operands, then what its regions capture (a
    value may be both: a loop's initial value that its body also reads)."""
    return list(op.operands) + free_values(op)


def region_program(op: Operation, k: int, captured: Sequence[Value], name: str) -> Program:
    """Region ``k`` of ``op`` as a program ``(block arguments..., captured...) -> (yielded...)``."""
    blk = op.regions[k].blocks[0]
    p = Program(name)
    m: dict[Value, Value] = {a: p.block.add_argument(a.type) for a in blk.args}
    for v in captured:
        m[v] = p.block.add_argument(v.type)
    for o in blk.ops[:-1]:
        p.block.append_op(clone_op(o, m))
    p.block.append("builtin.return", [m[v] for v in blk.ops[-1].operands], [])
    return p


def _shared_outputs(p: Program) -> set[int]:
    """The outputs of ``p`` whose storage is not made by the run: an input, a parameter or a
    constant, or a reshape of one."""
    out = set()
    for i, v in enumerate(p.outputs):
        while True:
            d = v.defining_op
            if d is None or d.name.startswith("builtin."):
                out.add(i)
                break
            if d.name != "op.reshape":
                break
            v = d.operands[0]
    return out


def truth(t: Tensor, what: str) -> bool:
    """The Python truth of a one-element bool tensor (read on the host)."""
    a = np.asarray(t.numpy())
    if a.size != 1:
        raise OpArgumentError(f"[{what}] the predicate must have one element, got shape {list(a.shape)}")
    return bool(a.reshape(-1)[0])


def _copy(t: Tensor) -> Tensor:
    return dispatch.run(base.OPS["copy"], [t], {}, None)[0]


class Step:
    """One dynamic op of a plan: ``instruction(plan, refs, outs)`` makes its callable."""

    name = "control"

    def instruction(self, plan: Any, refs: list[tuple[int, Any]], outs: list[int]) -> Callable[..., None]:
        slots_in = [s for s, _ in refs]

        def run(*_: Any) -> None:  # called bare or as fn(ctx, outs, ins): it reads the plan's slots
            slots = plan.slots
            res = self.run([slots[s] for s in slots_in])
            for s, t in zip(outs, res):
                plan.set(s, t)

        return run

    def run(self, ins: list[Tensor]) -> list[Tensor]:
        raise NotImplementedError(f"need run() in {type(self).__name__}")


class _Sub:
    """A region's sub-program with its executor's plan for the outer binding."""

    def __init__(self, ex: Any, op: Operation, k: int, captured: Sequence[Value], binding: Mapping[str, int]):
        name = f"{op.opname}_{('then', 'else')[k] if op.name == 'cf.cond' else ('cond', 'body')[k]}"
        self.program = region_program(op, k, captured, name)
        self.executor = type(ex)(self.program, ex.device, ex.params, ex.constants)
        self.plan = self.executor.plan(binding)
        self.shared = _shared_outputs(self.program)

    def run(self, ins: list[Tensor], outer: Sequence[Tensor]) -> list[Tensor]:
        res = self.plan.run(ins)
        blocks = {id(t._block) for t in outer}
        return [_copy(t) if i in self.shared or id(t._block) in blocks else t for i, t in enumerate(res)]


class _Cond(Step):
    name = "cf.cond"

    def __init__(self, op: Operation, ex: Any, binding: Mapping[str, int]) -> None:
        captured = reads(op)[1:]
        self.branches = [_Sub(ex, op, k, captured, binding) for k in (0, 1)]

    def run(self, ins: list[Tensor]) -> list[Tensor]:
        k = 0 if truth(ins[0], "cf.cond") else 1
        return self.branches[k].run(ins[1:], ins)


class _While(Step):
    name = "cf.while"

    def __init__(self, op: Operation, ex: Any, binding: Mapping[str, int]) -> None:
        self.n = len(op.operands)
        captured = reads(op)[self.n :]
        self.cond = _Sub(ex, op, 0, captured, binding)
        self.body = _Sub(ex, op, 1, captured, binding)

    def run(self, ins: list[Tensor]) -> list[Tensor]:
        vals, cap = ins[: self.n], ins[self.n :]
        limit = max_while_iterations()
        n = 0
        while truth(self.cond.plan.run(vals + cap)[0], "cf.while"):
            if n == limit:
                raise loop_limit_error("cf.while", limit)
            vals = self.body.plan.run(vals + cap)
            n += 1
        blocks = {id(t._block) for t in ins}
        shared = self.body.shared
        return [_copy(t) if id(t._block) in blocks or i in shared else t for i, t in enumerate(vals)]


class _Draw(Step):
    """``philox_uniform`` with counters taken from the global generator when it runs."""

    name = "philox_uniform"

    def __init__(self, op: Operation, ex: Any, binding: Mapping[str, int]) -> None:
        from .._src.ops.random import default_generator

        self.gen = default_generator
        self.device = ex.device
        self.attrs = {k: v for k, v in op.attrs.items() if k not in ("seed", "offset")}
        self.shape = op.result.type.concrete(binding)
        self.attrs["shape"] = self.shape
        self.n = math.prod(self.shape)

    def run(self, ins: list[Tensor]) -> list[Tensor]:
        off = self.gen.take(self.n)
        attrs = dict(self.attrs, seed=self.gen.seed, offset=off)
        return dispatch.run(base.OPS["philox_uniform"], [], attrs, self.device)


def lower(op: Operation, ex: Any, binding: Mapping[str, int]) -> Step:
    """The step that runs ``op`` for ``ex`` (an :class:`~framework.ir.Executor`) under
    ``binding``; sub-programs are lowered here, once."""
    if op.name == "cf.cond":
        return _Cond(op, ex, binding)
    if op.name == "cf.while":
        return _While(op, ex, binding)
    if draws_at_run(op):
        return _Draw(op, ex, binding)
    raise IRError(f"[executor] {op.name} is not an op of the control-flow dialect")
