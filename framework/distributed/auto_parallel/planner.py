"""``auto_plan``: search data/tensor-parallel degrees and per-layer layouts for a model on a
mesh, score each with a cost model, return the cheapest as a plan applied with one call.

The search, on ``N`` ranks:

1. *Degrees*: every ``dp x tp = N`` (the mesh's ranks laid out as ``[dp, tp]``, axes
   ``"dp"`` and ``"mp"``); the batch is split over ``dp``.
2. *Layouts per layer*, for ``tp > 1``: each ``Linear`` is column-parallel (``Shard(1)`` of
   its ``[in, out]`` weight), row-parallel (``Shard(0)``) or replicated; each ``Embedding``
   column-parallel or replicated. The pairs come from the model's data flow, found by one
   forward in this process: a linear whose input is another linear's output through
   element-wise ops only (SwiGLU's gate and up into down) is a *pair*, column then row
   (Megatron: no communication between them). Layout families: ``replicated``; ``pairs``
   (pairs column/row, the other layers replicated); ``pairs+column`` (the others
   column-parallel); ``column`` (every linear and embedding column-parallel).
3. *Cost model*, from one real training step of each candidate on the mesh (forward and
   backward, every reshard logged): compute per rank = the FLOPs of this rank's matmuls and
   attention (forward x 3 for the backward) x seconds per FLOP; communication = the bytes this
   rank's reshards moved x seconds per byte; both rates measured by a short probe (a local
   matmul; an all-reduce over the mesh with the plugin's collectives). Memory per rank =
   parameter bytes held x 4 (parameter, gradient, Adam's two moments). The score is compute +
   communication seconds; a ``memory_budget`` (bytes per rank) rules out what exceeds it.

``auto_plan`` prints the table it considered (on rank 0) and returns a :class:`Plan`:
``plan.apply(model)`` lays the model out (``dist.shard_layer(model, plan.mesh, plan.shard_fn)``).
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ..._src import autograd
from ..._src.tensor import Tensor
from ..._src.tensor import to_tensor as _to_tensor
from .. import collective
from .dtensor import DistTensor, shard_tensor
from .layer import local_bytes, shard_layer
from .mesh import ProcessMesh
from .placement import Replicate, Shard
from .reshard import LOG


@dataclass
class Plan:
    """A chosen layout: degrees, the mesh ``[dp, tp]`` (axes ``dp``, ``mp``) and a layout
    per layer (``"col"``, ``"row"`` or ``"rep"``); ``table`` holds every candidate scored."""

    dp: int
    tp: int
    family: str
    layouts: dict[str, str]
    mesh: ProcessMesh
    table: list[dict[str, Any]] = field(default_factory=list)

    def shard_fn(self, name: str, layer: Any, mesh: ProcessMesh) -> None:
        """The ``shard_fn`` of :func:`shard_layer` that lays the layers out as planned."""
        kind = self.layouts.get(name, "rep")
        if kind == "rep" or getattr(layer, "weight", None) is None:
            return
        pl = [Replicate()] * mesh.ndim
        pl[mesh.dim_names.index("mp")] = Shard(1 if kind == "col" else 0)
        layer.weight = shard_tensor(layer.weight, mesh, pl)

    def apply(self, model: Any) -> Any:
        """Lay ``model`` out as planned (every rank of the mesh calls it)."""
        return shard_layer(model, self.mesh, self.shard_fn)

    def __repr__(self) -> str:
        return f"Plan(dp={self.dp}, tp={self.tp}, family={self.family!r})"


# -- the model's layers and pairs -------------------------------------------------------------
def _is(layer: Any, kind: str) -> bool:
    """Whether ``layer`` is an ``nn.<kind>`` (or a subclass): by class name, as this package
    sits below ``framework.nn``."""
    return any(c.__name__ == kind for c in type(layer).__mro__)


def _layers(model: Any) -> tuple[list[str], list[str]]:
    lin = [n for n, s in model.named_sublayers() if _is(s, "Linear")]
    emb = [n for n, s in model.named_sublayers() if _is(s, "Embedding")]
    return lin, emb


def _elementwise(node: Any) -> bool:
    """The tape node's op maps elements to elements: an element-wise primitive, or an op
    whose sharding rule (its OpDef's) is element-wise (``*->*``: casts, copies, activations)."""
    op = node.op
    if op.elementwise:
        return True
    rule = op.sharding(node.attrs, node.inputs) if op.sharding is not None else None
    return rule is not None and set(rule.rule.replace(",", "").replace("->", "")) == {"*"}


def linear_pairs(model: Any, inputs: Any) -> list[tuple[str, str]]:
    """``(a, b)``: linear ``b`` reads linear ``a``'s output through element-wise ops only
    (one forward of ``model`` on ``inputs`` in this process, then a walk of its tape)."""
    outs: dict[int, str] = {}
    ins: dict[str, Tensor] = {}
    hooks = []
    for name, sub in model.named_sublayers():
        if _is(sub, "Linear"):
            hooks.append(sub.register_forward_pre_hook(lambda m, a, name=name: ins.__setitem__(name, a[0])))
            hooks.append(
                sub.register_forward_post_hook(lambda m, a, o, name=name: outs.__setitem__(id(o), name))
            )
    try:
        with autograd.enable_grad():
            keep = model(inputs)
    finally:
        for h in hooks:
            h.remove()
    pairs = []
    for b, t in ins.items():
        seen, stack, found = set(), [t], set()
        while stack:
            u = stack.pop()
            if id(u) in seen:
                continue
            seen.add(id(u))
            if id(u) in outs and u is not t:
                found.add(outs[id(u)])
                continue
            node = u._node
            if node is not None and _elementwise(node):
                stack.extend(x for x in node.inputs if isinstance(x, Tensor))
        pairs += [(a, b) for a in sorted(found)]
    del keep
    return pairs


def families(
    linears: Sequence[str], embeds: Sequence[str], pairs: Sequence[tuple[str, str]]
) -> dict[str, dict[str, str]]:
    """The layout families (see the module docstring)."""
    col = {a for a, _ in pairs}
    row = {b for _, b in pairs} - col
    paired = {n: "col" if n in col else "row" if n in row else "rep" for n in linears}
    out = {
        "replicated": {n: "rep" for n in [*linears, *embeds]},
        "pairs": {**paired, **{n: "rep" for n in embeds}},
        "pairs+column": {
            **{n: ("col" if k == "rep" else k) for n, k in paired.items()},
            **{n: "col" for n in embeds},
        },
        "column": {n: "col" for n in [*linears, *embeds]},
    }
    if not pairs:
        del out["pairs"], out["pairs+column"]
    return out


# -- the probes ---------------------------------------------------------------------------------
def probe_rates(mesh: ProcessMesh, device: Any = None, nbytes: int = 1 << 20) -> tuple[float, float]:
    """(seconds per byte of an all-reduce over the mesh, seconds per FLOP of a local matmul):
    medians of a few runs with the plugin's collectives and kernels."""
    from ..._src.ops import math as M

    a = _to_tensor(np.ones((128, 128), np.float32), device=device)
    M.matmul(a, a).numpy()
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        M.matmul(a, a).numpy()
        runs.append(time.perf_counter() - t0)
    per_flop = statistics.median(runs) / (2 * 128**3)
    g = mesh.get_group(0) if mesh.shape[0] > 1 else None
    if g is None:
        return 0.0, per_flop
    x = _to_tensor(np.ones(nbytes // 4, np.float32), device=device)
    collective.all_reduce(x, group=g)
    runs = []
    for _ in range(5):
        collective.barrier(group=g)
        t0 = time.perf_counter()
        collective.all_reduce(x, group=g)
        x.numpy()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs) / nbytes, per_flop


def local_flops(loss: Tensor) -> float:
    """FLOPs of the ops on this rank's tape up to ``loss`` whose time is their arithmetic
    (``OpDef.flops``: products, attention), forward."""
    total, seen, stack = 0.0, set(), [loss._node] if loss._node is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        ts = [t for t in node.inputs or () if isinstance(t, Tensor)]
        if node.op.flops is not None and len(ts) >= 2:
            outs = [node.out(i).shape for i in range(node.n_outputs)]
            total += node.op.flops([t.shape for t in ts], outs, node.attrs)
        stack.extend(t._node for t in ts if t._node is not None)
    return total


# -- the search ---------------------------------------------------------------------------------
def _step(model: Any, mesh: ProcessMesh, dp: int, batch: Sequence[Any], loss_fn: Callable[..., Any]) -> float:
    xs = []
    for b in batch:
        t = b if isinstance(b, Tensor) else _to_tensor(b)
        xs.append(shard_tensor(t, mesh, [Shard(0), Replicate()]) if dp > 1 else t)
    loss = loss_fn(model(xs[0]), *xs[1:])
    local = loss._local_value() if isinstance(loss, DistTensor) else loss
    flops = 0.0 if local is None else local_flops(local)
    loss.backward()
    return flops


def default_loss(out: Any, *labels: Any) -> Any:
    """Cross-entropy over the last dim for integer labels, else the mean square of the output."""
    from ..._src.ops.composites.loss import cross_entropy

    if labels and labels[0].dtype.kind in "iu":
        return cross_entropy(out.reshape((-1, out.shape[-1])), labels[0].reshape((-1,)))
    return (out * out).mean()


def auto_plan(
    model: Any,
    mesh: ProcessMesh,
    sample_batch: Any,
    loss_fn: Callable[..., Any] | None = None,
    memory_budget: float | None = None,
    verbose: bool = True,
    extra: dict[str, dict[str, str]] | None = None,
) -> Plan:
    """Search layouts of ``model`` over the ranks of ``mesh`` for ``sample_batch`` (inputs,
    or a tuple ``(inputs, labels...)``) and return the cheapest :class:`Plan` (see the module
    docstring); ``loss_fn(output, *labels)`` defaults to :func:`default_loss`; ``extra`` adds
    named layouts (``{layer: "col" | "row" | "rep"}``) to score, e.g. hand-written ones.
    Every rank of the world calls it; ``model`` itself is not changed.

    >>> import numpy as np, framework as fw, framework.distributed as dist
    >>> _ = fw.seed(0)
    >>> net = fw.nn.Sequential(fw.nn.Linear(8, 16), fw.nn.ReLU(), fw.nn.Linear(16, 4))
    >>> plan = dist.auto_plan(net, dist.ProcessMesh([0]), np.ones((4, 8), "float32"), verbose=False)
    >>> plan.dp, plan.tp, plan.family
    (1, 1, 'replicated')
    """
    if not isinstance(mesh, ProcessMesh):
        raise OpArgumentError(f"[auto_plan] expected a dist.ProcessMesh, got {type(mesh).__name__}")
    batch = list(sample_batch) if isinstance(sample_batch, (tuple, list)) else [sample_batch]
    loss_fn = loss_fn or default_loss
    ids = mesh.process_ids
    n = len(ids)
    linears, embeds = _layers(model)
    first = batch[0] if isinstance(batch[0], Tensor) else _to_tensor(batch[0])
    pairs = linear_pairs(copy.deepcopy(model), first)
    fams = families(linears, embeds, pairs)
    for name, layout in (extra or {}).items():
        fams[name] = {**{k: "rep" for k in [*linears, *embeds]}, **layout}
    per_byte, per_flop = probe_rates(ProcessMesh(ids, dim_names=["all"]))
    rows: list[dict[str, Any]] = []
    for tp in [d for d in range(1, n + 1) if n % d == 0]:
        dp = n // tp
        sub = ProcessMesh(np.array(ids).reshape(dp, tp), dim_names=["dp", "mp"])
        for fam, layouts in fams.items() if tp > 1 else [("replicated", fams["replicated"])]:
            plan = Plan(dp, tp, fam, layouts, sub)
            m = plan.apply(copy.deepcopy(model))
            start = len(LOG)
            flops = _step(m, sub, dp, batch, loss_fn)
            moved = sum(r["bytes"] for r in LOG[start:])
            held, _ = local_bytes(m)
            row = {
                "dp": dp,
                "tp": tp,
                "layout": fam,
                "compute_ms": 3 * flops * per_flop * 1e3,
                "bytes_moved": moved,
                "comm_ms": moved * per_byte * 1e3,
                "memory_bytes": 4 * held,
            }
            row["score_ms"] = row["compute_ms"] + row["comm_ms"]
            row["fits"] = memory_budget is None or row["memory_bytes"] <= memory_budget
            rows.append(row)
            plan.table = rows
    fitting = [r for r in rows if r["fits"]]
    if not fitting:
        raise OpArgumentError(
            f"[auto_plan] no layout fits the memory budget of {memory_budget} bytes per rank; the "
            f"smallest needs {min(r['memory_bytes'] for r in rows)}"
        )
    # the same pick on every rank: the scores of rank 0 decide
    scores = _to_tensor(np.array([r["score_ms"] if r["fits"] else np.inf for r in rows], np.float64))
    if collective.get_world_size() > 1:
        collective.broadcast(scores, src=ids[0])
    best = int(np.argmin(scores.numpy()))
    pick = rows[best]
    for r in rows:
        r["picked"] = r is pick
    sub = ProcessMesh(np.array(ids).reshape(pick["dp"], pick["tp"]), dim_names=["dp", "mp"])
    plan = Plan(pick["dp"], pick["tp"], pick["layout"], fams[pick["layout"]], sub, rows)
    if verbose and collective.get_rank() == ids[0]:
        print(format_table(rows, per_byte, per_flop), flush=True)
    return plan


def format_table(rows: list[dict[str, Any]], per_byte: float, per_flop: float) -> str:
    head = (
        f"[auto_plan] rates: {per_byte * 1e9:.3f} ns/byte (all-reduce probe), {per_flop * 1e12:.1f} ps/FLOP (matmul probe)\n"
        f"{'dp':>3} {'tp':>3} {'layout':<14} {'compute ms':>11} {'bytes moved':>12} {'comm ms':>9} "
        f"{'memory/rank':>12} {'score ms':>9}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['dp']:>3} {r['tp']:>3} {r['layout']:<14} {r['compute_ms']:>11.3f} {r['bytes_moved']:>12} "
            f"{r['comm_ms']:>9.3f} {r['memory_bytes']:>12} {r['score_ms']:>9.3f}"
            + (" <- picked" if r.get("picked") else "")
            + ("" if r["fits"] else " (over budget)")
        )
    return "\n".join(lines)


__all__ = ["Plan", "auto_plan", "families", "linear_pairs"]
