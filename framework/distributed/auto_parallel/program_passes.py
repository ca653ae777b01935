"""The rewrites ``dist.to_static`` runs on its programs before the default pipeline.

A traced step records each reshard transition as one ``op.dist_reshard`` (:mod:`.reshard`).
At ZeRO stage 3 the gradient of a gathered parameter comes back through two of them: the
all-reduce of the partial gradient over ``dp`` (the backward of the op rule's
``grad_reduce``: ``P(sum) -> R``) and this rank's chunk of the sum (the backward of the gather:
``R -> S(d)``). :data:`REDUCE_SCATTER` makes the pair one ``P(sum) -> S(d)``, a
reduce-scatter: each rank receives only its chunk (``B (k-1)/k`` bytes on the wire instead of
``2 B (k-1)/k``) and no whole gradient is made. The same holds for any partial value made
replicated and then sliced on the same mesh axis, forward or backward; a whole value read by
another op as well is left alone (DRR's use count).

>>> from framework.ir.passes import PASSES
>>> "dist_reduce_scatter" in PASSES
True
"""

from __future__ import annotations

from ...ir.passes import DEFAULT_LEVEL, LEVELS, Attr, Canonicalize, Pat, Res, Rule, Var, register_pass
from .reshard import register_ir_op

register_ir_op()  # a program holding op.dist_reshard can be parsed wherever the pass exists

_SAME = {k: Attr(k) for k in ("mesh", "mesh_shape", "dim_names", "axis", "shape")}

#: ``P -> R`` then ``R -> S(d)`` on the same mesh axis (the all-reduce is read by the slice
#: only): one ``P -> S(d)``, a reduce-scatter (see the module)
REDUCE_SCATTER = Rule(
    name="all_reduce_then_slice_to_reduce_scatter",
    source=Pat(
        "dist_reshard",
        Pat("dist_reshard", Var("g"), src=Attr("partial"), dst="R", grad_reduce="", **_SAME),
        src="R",
        dst=Attr("shard"),
        grad_reduce="",
        **_SAME,
    ),
    where=[lambda m: m["partial"].startswith("P") and m["shard"].startswith("S")],
    result=Res(
        "dist_reshard",
        "g",
        src=Attr("partial"),
        dst=Attr("shard"),
        grad_reduce="",
        tensor=lambda m: m.root.attrs["tensor"],
        why=lambda m: m.root.attrs["why"],
        **_SAME,
    ),
)


class DistReduceScatter(Canonicalize):
    """:data:`REDUCE_SCATTER`, greedily (the pass ``dist_reduce_scatter``)."""

    name = "dist_reduce_scatter"
    rules = (REDUCE_SCATTER,)
    hand_written = ()


register_pass("dist_reduce_scatter", DistReduceScatter)

#: the passes of a ``dist.to_static`` program: the rewrite above, then the default level
PIPELINE = ("dist_reduce_scatter", *LEVELS[DEFAULT_LEVEL])
