"""The verifier: SSA (each value defined once, before its uses), use-def chains both ways
(no dangling uses), known ops with the right number of results, and types (the OpDef's shape
rule agrees with each result's type). Every problem names the op and its position.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator

import numpy as np

from .core import Block, IRError, Operation, Program, SymDim, TensorType, Value, print_type
from .dialects import OpInfo, infer_shapes, lookup


class VerifyError(IRError):
    """The program breaks an invariant of the IR (the message lists every problem found)."""


#: the value each symbol takes when the verifier evaluates shape rules: distinct primes, so
#: a rule that mixes symbols up gives a different shape
_PROBE = (7, 11, 13, 17, 19, 23, 29, 31)


def _where(k: int, op: Operation, path: str = "") -> str:
    return f"{path}op #{k} '{op.name}'"


def _numel1(t: object) -> bool:
    return isinstance(t, TensorType) and all(d == 1 for d in t.shape)


def _types(vs: list[Value]) -> list[str]:
    return [print_type(v.type) if isinstance(v.type, TensorType) else repr(v.type) for v in vs]


def _check_cf(op: Operation, where: str) -> list[str]:
    """The control-flow dialect's rules: region and block shapes, what each yield gives."""
    out: list[str] = []
    name = op.name
    if name == "cf.yield":
        return out
    regions = op.regions
    if len(regions) != 2 or any(len(r.blocks) != 1 for r in regions):
        return [f"{where}: needs two regions of one block each, has {[len(r.blocks) for r in regions]}"]
    res = [r.type for r in op.results]
    if name == "cf.cond":
        if len(op.operands) != 1 or op.operands[0].type.dtype != np.bool_ or not _numel1(op.operands[0].type):
            out.append(
                f"{where}: takes one operand, a bool predicate of one element; got {_types(op.operands)}"
            )
        for k, (label, r) in enumerate(zip(("then", "else"), regions)):
            b = r.blocks[0]
            if b.args:
                out.append(f"{where}: region {k} ({label}) has block arguments; a cond's regions take none")
            y = b.ops[-1] if b.ops else None
            if y is None or y.name != "cf.yield":
                continue  # reported as a missing terminator
            got = [v.type for v in y.operands]
            if len(got) != len(res):
                out.append(
                    f"{where}: region {k} ({label}) yields {len(got)} values, the cond has {len(res)} results"
                )
            else:
                for i, (g, t) in enumerate(zip(got, res)):
                    if g != t:
                        out.append(
                            f"{where}: region {k} ({label}) yields {_types([y.operands[i]])[0]} as output {i}, "
                            f"the result is typed {print_type(t)} (type mismatch)"
                        )
        return out
    # cf.while: operands = initial loop values, regions = (cond, body)
    init = [v.type for v in op.operands]
    if init != res:
        out.append(f"{where}: the loop values are typed {_types(op.operands)} but the results {res}")
    for k, (label, r) in enumerate(zip(("cond", "body"), regions)):
        b = r.blocks[0]
        if [a.type for a in b.args] != init:
            out.append(
                f"{where}: region {k} ({label}) takes {_types(b.args)}, the loop values are {_types(op.operands)}"
            )
        y = b.ops[-1] if b.ops else None
        if y is None or y.name != "cf.yield":
            continue
        if k == 0:
            if (
                len(y.operands) != 1
                or y.operands[0].type.dtype != np.bool_
                or not _numel1(y.operands[0].type)
            ):
                out.append(
                    f"{where}: region 0 (cond) must yield one bool of one element, yields {_types(y.operands)}"
                )
        elif [v.type for v in y.operands] != init:
            out.append(
                f"{where}: region 1 (body) yields {_types(y.operands)}, the loop values are "
                f"{_types(op.operands)}: the body must keep each loop value's type"
            )
    return out


#: the attributes each builtin op takes, and what each holds
_BUILTIN_ATTRS: dict[str, dict[str, tuple[type, ...]]] = {
    "builtin.parameter": {"name": (str,)},
    "builtin.constant": {"name": (str,), "value": (bool, int, float)},
    "builtin.return": {},
}


def _check_builtin(op: Operation, where: str) -> list[str]:
    """A parameter has a name; a constant a name or a scalar value; neither reads operands."""
    takes = _BUILTIN_ATTRS[op.name]
    out = [
        f"{where}: attribute {k} = {v!r} is not {' or '.join(t.__name__ for t in takes[k])}"
        if k in takes
        else f"{where}: has attribute '{k}', which {op.name} does not take (it takes {sorted(takes)})"
        for k, v in op.attrs.items()
        if k not in takes or not isinstance(v, takes[k])
    ]
    if op.name != "builtin.return":
        if op.operands:
            out.append(f"{where}: takes no operands, got {len(op.operands)}")
        if not any(k in op.attrs for k in takes):
            out.append(f"{where}: needs the attribute {' or '.join(sorted(takes))}")
    return out


@functools.cache
def _decomposition_signature(fn: Callable[..., object]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _check_signature(op: Operation, info: OpInfo, where: str) -> list[str]:
    """The operands and attribute names of an ``op.*`` (or ``kernel.*``) operation against its
    OpDef: a primitive's contract (``adapter_api.PRIMITIVES``) lists both, a composite's
    decomposition takes the operands positionally and the attributes by name."""
    if op.name in _BUILTIN_ATTRS:
        return _check_builtin(op, where)
    d = info.opdef
    if d is None or op.name == "kernel.eager" or op.name.startswith(("kernel.fused", "fused.")):
        return []
    attrs = [a for a in op.attrs if not a.startswith("kernel.")]
    if d.spec is not None:
        out = []
        fixed = [i for i in d.spec.inputs if not i.startswith("*")]
        want = len(fixed)
        variadic = len(fixed) < len(d.spec.inputs)  # ``*xs``: one or more
        if len(op.operands) < max(want, 1 if variadic else 0) or (not variadic and len(op.operands) != want):
            out.append(
                f"{where}: takes {want} operand(s) ({', '.join(d.spec.inputs) or 'none'}), got {len(op.operands)}"
            )
        unknown = [a for a in attrs if a not in d.spec.attrs]
        if unknown:
            out.append(
                f"{where}: has attribute(s) {unknown} that {d.name} does not take; its attributes are "
                f"{list(d.spec.attrs)}"
            )
        return out
    sig = _decomposition_signature(d.decomposition) if d.decomposition is not None else None
    if sig is None:
        return []
    try:
        sig.bind(*op.operands, **dict.fromkeys(attrs))
    except TypeError as exc:
        return [
            f"{where}: its operands and attributes do not fit {d.name}({', '.join(sig.parameters)}): {exc}"
        ]
    return []


def _check_kernel(op: Operation, info: OpInfo, where: str) -> list[str]:
    """The kernel dialect's rules: the lowering's attributes are there, the kernel was chosen
    for the dtype its key operand has, and a kernel that does not broadcast gets operands of
    the result's shape (``kernel.expand`` in front)."""
    a = op.attrs
    need = ("kernel.op", "kernel.reason") if op.name == "kernel.eager" else ("kernel.name",)
    missing = [k for k in (*need, "kernel.device") if k not in a]
    if missing:
        return [f"{where}: lacks the attribute(s) {missing} of the kernel dialect"]
    if op.name == "kernel.eager":
        try:
            of = lookup(str(a["kernel.op"]))
        except IRError as exc:
            return [f"{where}: kernel.op {a['kernel.op']!r} is not an op: {exc}"]
        if of.opdef is None:
            return [f"{where}: kernel.op {a['kernel.op']!r} is not an op with a definition"]
        return []
    d = info.opdef
    if a["kernel.name"] == "view":
        return (
            [] if d is not None and d.kind == "view" else [f"{where}: only a view op has kernel.name 'view'"]
        )
    if "kernel.dtype" not in a:
        return [f"{where}: lacks the attribute kernel.dtype (the dtype its kernel was chosen for)"]
    want = np.dtype(a["kernel.dtype"])
    out: list[str] = []
    k = d.spec.key_input if d is not None and d.spec else 0
    if op.operands and k < len(op.operands):
        got = op.operands[k].type.dtype
        if got != want:
            out.append(
                f"{where}: kernel.dtype is {want.name} but operand {k}, which picks the kernel, is "
                f"{np.dtype(got).name} (dtype mismatch: the kernel was chosen for another dtype)"
            )
    elif op.results and op.results[0].type.dtype != want:
        out.append(f"{where}: kernel.dtype is {want.name} but the result is {op.results[0].type.dtype}")
    if a.get("kernel.broadcast") is False and op.results:
        shape = tuple(op.results[0].type.shape)
        for j, v in enumerate(op.operands):
            if tuple(v.type.shape) != shape:
                out.append(
                    f"{where}: operand {j} is {_types([v])[0]} but the result is "
                    f"{print_type(op.results[0].type)}; its kernel does not broadcast (kernel.expand first)"
                )
    return out


def verify(p: Program, check_types: bool = True) -> None:
    """Raise :class:`VerifyError` listing every broken invariant of ``p``. A problem inside
    a region is named by its path: ``op #3 'cf.cond' region 1: op #0 'op.exp'``."""
    problems: list[str] = []
    everywhere: set[Operation] = set(p.walk())
    for i, a in enumerate(p.inputs):
        if a.owner is not p.block or a.index != i:
            problems.append(f"argument {i}: its owner/index say {a.owner!r}#{a.index}")
    _verify_block(p.block, set(p.inputs), "", None, everywhere, problems)
    for v in p.values():
        for u, i in v.uses:
            if u not in everywhere:
                problems.append(
                    f"{_value_name(p, v)} is used by '{u.name}', which is not in the program (dangling use)"
                )
            elif i >= len(u.operands) or u.operands[i] is not v:
                problems.append(
                    f"{_value_name(p, v)} lists a use by '{u.name}' operand {i}, which reads another value"
                )
    if p.return_op is None:
        problems.append("the program does not end in builtin.return")
    if check_types and not problems:
        problems += _check_types(p)
    if problems:
        raise VerifyError(f"[ir.verify] @{p.name} is malformed:\n  " + "\n  ".join(problems))


def _verify_block(
    block: Block,
    visible: set[Value],
    path: str,
    owner: Operation | None,
    everywhere: set[Operation],
    problems: list[str],
) -> None:
    """Check ``block``'s ops; ``visible`` holds the values defined before it in enclosing
    blocks (captured values must be among them: dominance)."""
    defined = set(visible) | set(block.args)
    for i, a in enumerate(block.args):
        if a.owner is not block or a.index != i:
            problems.append(f"{path}block argument {i}: its owner/index say {a.owner!r}#{a.index}")
    position = {op: k for k, op in enumerate(block.ops)}
    terminator = "builtin.return" if owner is None else "cf.yield"
    for k, op in enumerate(block.ops):
        where = _where(k, op, path)
        if op.parent is not block:
            problems.append(f"{where}: its parent is not the block it is in")
        try:
            info = lookup(op.name)
        except IRError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if info.results is not None and len(op.results) != info.results:
            problems.append(f"{where}: has {len(op.results)} results, expected {info.results}")
        if info.has("terminator"):
            if k != len(block.ops) - 1:
                problems.append(f"{where}: a terminator must be the last op of its block")
            if op.name != terminator:
                inside = "the program's body" if owner is None else f"a region of '{owner.name}'"
                problems.append(f"{where}: {op.name} cannot end {inside}; expected {terminator}")
        elif k == len(block.ops) - 1 and owner is not None:
            problems.append(f"{where}: the block of a region of '{owner.name}' must end in cf.yield")
        for i, v in enumerate(op.operands):
            if v not in defined:
                d = v.defining_op
                if d in position and position[d] > k:
                    why = "defined later (use before definition)"
                elif d is not None and d in everywhere:
                    why = "defined inside another region, which does not enclose this op (dominance)"
                elif d is not None:
                    why = "defined by an op that is not in the program (dangling)"
                else:
                    why = "an argument of a block that does not enclose this op"
                problems.append(f"{where}: operand {i} is {why}")
            if (op, i) not in v.uses:
                problems.append(f"{where}: operand {i} is not in its value's use list (broken use-def chain)")
        problems += _check_signature(op, info, where)
        if op.dialect == "cf":
            problems += _check_cf(op, where)
        elif op.dialect == "kernel":
            problems += _check_kernel(op, info, where)
        if op.regions and op.dialect != "cf":
            problems.append(f"{where}: has regions, which only cf ops hold")
        for j, r in enumerate(op.regions):
            if r.owner is not op:
                problems.append(f"{where}: region {j} says it is owned by another op")
            for b in r.blocks:
                if b.parent is not r:
                    problems.append(f"{where}: a block of region {j} says it is in another region")
                _verify_block(b, defined, f"{where} region {j}: ", op, everywhere, problems)
        for r in op.results:
            if r in defined:
                problems.append(f"{where}: result {r.index} is already defined (SSA: one definition)")
            if r.owner is not op:
                problems.append(f"{where}: result {r.index} says it is owned by {r.owner!r}")
            defined.add(r)
    if owner is not None and not block.ops:
        problems.append(f"{path}the block is empty; a region's block ends in cf.yield")


def _value_name(p: Program, v: Value) -> str:
    if isinstance(v.owner, Operation):
        k = p.block.ops.index(v.owner) if v.owner in p.block.ops else "?"
        return f"result {v.index} of op #{k} '{v.owner.name}'"
    if v.owner is p.block:
        return f"argument {v.index}"
    return f"block argument {v.index} of a region"


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
    for where, op in _ops_with_paths(p.block, ""):
        for v in op.operands + op.results:
            if not isinstance(v.type, TensorType):
                problems.append(f"{where}: {v!r} is not a tensor")
        if op.name.startswith("builtin.") or op.dialect == "cf":
            continue
        if any(d == -1 for v in op.operands for d in v.type.shape):
            continue  # unknown dims: the rule cannot be evaluated statically
        try:
            metas = infer_shapes(op, binding)
        except RecursionError:
            raise  # the program nests too deep: not this op's fault (the caller names it)
        except Exception as exc:  # noqa: BLE001 — a rule that rejects its inputs is a type error
            problems.append(f"{where}: its shape rule rejects the operand types: {exc}")
            continue
        if metas is None:
            continue
        if len(metas) != len(op.results):
            problems.append(
                f"{where}: the shape rule gives {len(metas)} results, the op has {len(op.results)}"
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
                    f"{where}: result {r.index} is typed {t.dtype}{list(t.shape)} but its "
                    f"operands give {dtype}{list(shape)}{_at(binding)} (type mismatch)"
                )
    return problems


def _ops_with_paths(block: Block, path: str) -> Iterator[tuple[str, Operation]]:
    for k, op in enumerate(block.ops):
        where = _where(k, op, path)
        yield where, op
        for j, r in enumerate(op.regions):
            for b in r.blocks:
                yield from _ops_with_paths(b, f"{where} region {j}: ")
