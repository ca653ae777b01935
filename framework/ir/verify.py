"""The verifier: SSA (each value defined once, before its uses), use-def chains both ways
(no dangling uses), known ops with the right number of results, and types (the OpDef's shape
rule agrees with each result's type). Every problem names the op and its position.
"""

from __future__ import annotations

from .core import IRError, Operation, Program, SymDim, TensorType, Value
from .dialects import infer_shapes, lookup


class VerifyError(IRError):
    """The program breaks an invariant of the IR (the message lists every problem found)."""


#: the value each symbol takes when the verifier evaluates shape rules: distinct primes, so
#: a rule that mixes symbols up gives a different shape
_PROBE = (7, 11, 13, 17, 19, 23, 29, 31)


def _where(k: int, op: Operation) -> str:
    return f"op #{k} '{op.name}'"


def verify(p: Program, check_types: bool = True) -> None:
    """Raise :class:`VerifyError` listing every broken invariant of ``p``."""
    problems: list[str] = []
    defined: set[Value] = set()
    for i, a in enumerate(p.inputs):
        if a.owner is not p.block or a.index != i:
            problems.append(f"argument {i}: its owner/index say {a.owner!r}#{a.index}")
        defined.add(a)
    position = {op: k for k, op in enumerate(p.block.ops)}
    for k, op in enumerate(p.block.ops):
        where = _where(k, op)
        if op.parent is not p.block:
            problems.append(f"{where}: its parent is not the block it is in")
        try:
            info = lookup(op.name)
        except IRError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if info.results is not None and len(op.results) != info.results:
            problems.append(f"{where}: has {len(op.results)} results, expected {info.results}")
        if info.has("terminator") and k != len(p.block.ops) - 1:
            problems.append(f"{where}: a terminator must be the last op of its block")
        for i, v in enumerate(op.operands):
            if v not in defined:
                d = v.defining_op
                why = (
                    "defined later (use before definition)"
                    if d in position and position[d] > k
                    else "defined by an op that is not in the program (dangling)"
                    if d is not None
                    else "an argument of another block"
                )
                problems.append(f"{where}: operand {i} is {why}")
            if (op, i) not in v.uses:
                problems.append(f"{where}: operand {i} is not in its value's use list (broken use-def chain)")
        for r in op.results:
            if r in defined:
                problems.append(f"{where}: result {r.index} is already defined (SSA: one definition)")
            if r.owner is not op:
                problems.append(f"{where}: result {r.index} says it is owned by {r.owner!r}")
            defined.add(r)
    for v in list(p.inputs) + [r for op in p.block.ops for r in op.results]:
        for u, i in v.uses:
            if u not in position:
                problems.append(
                    f"{_value_name(p, v)} is used by '{u.name}', which is not in the program (dangling use)"
                )
            elif i >= len(u.operands) or u.operands[i] is not v:
                problems.append(
                    f"{_value_name(p, v)} lists a use by {_where(position[u], u)} operand {i}, which reads another value"
                )
    if p.return_op is None:
        problems.append("the program does not end in builtin.return")
    if check_types and not problems:
        problems += _check_types(p)
    if problems:
        raise VerifyError(f"[ir.verify] @{p.name} is malformed:\n  " + "\n  ".join(problems))


def _value_name(p: Program, v: Value) -> str:
    if isinstance(v.owner, Operation):
        k = p.block.ops.index(v.owner) if v.owner in p.block.ops else "?"
        return f"result {v.index} of op #{k} '{v.owner.name}'"
    return f"argument {v.index}"


def _at(binding: dict[str, int]) -> str:
    return " with " + ", ".join(f"{k} = {v}" for k, v in binding.items()) if binding else ""


def _check_types(p: Program) -> list[str]:
    problems = []
    syms: dict[str, None] = {}
    for op in p.walk():
        for v in op.operands + op.results:
            if isinstance(v.type, TensorType):
                for d in v.type.shape:
                    if isinstance(d, SymDim):
                        syms.update(dict.fromkeys(d.symbols))
    binding = {s: _PROBE[i % len(_PROBE)] + 30 * (i // len(_PROBE)) for i, s in enumerate(syms)}
    for k, op in enumerate(p.block.ops):
        for v in op.operands + op.results:
            if not isinstance(v.type, TensorType):
                problems.append(f"{_where(k, op)}: {v!r} is not a tensor")
        if op.name.startswith("builtin."):
            continue
        if any(d == -1 for v in op.operands for d in v.type.shape):
            continue  # unknown dims: the rule cannot be evaluated statically
        try:
            metas = infer_shapes(op, binding)
        except Exception as exc:  # noqa: BLE001 — a rule that rejects its inputs is a type error
            problems.append(f"{_where(k, op)}: its shape rule rejects the operand types: {exc}")
            continue
        if metas is None:
            continue
        if len(metas) != len(op.results):
            problems.append(
                f"{_where(k, op)}: the shape rule gives {len(metas)} results, the op has {len(op.results)}"
            )
            continue
        for r, (shape, dtype) in zip(op.results, metas):
            t = r.type
            got = tuple(-1 if d == -1 else d for d in t.concrete(binding))
            if (
                t.dtype != dtype
                or any(g != -1 and g != s for g, s in zip(got, shape))
                or len(got) != len(shape)
            ):
                problems.append(
                    f"{_where(k, op)}: result {r.index} is typed {t.dtype}{list(t.shape)} but its "
                    f"operands give {dtype}{list(shape)}{_at(binding)} (type mismatch)"
                )
    return problems
