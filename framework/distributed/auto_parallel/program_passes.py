"""The rewrites ``dist.to_static`` runs on its programs before the default pipeline.

A traced step records each reshard transition as one ``op.dist_reshard`` (:mod:`.reshard`).
At ZeRO stage 3 the gradient of a gathered parameter comes back through two of them: the
all-reduce of the partial gradient over ``dp`` (the backward of the op rule's
``grad_reduce``: ``P(sum) -> R``) and this rank's chunk of the sum (the backward of the gather:
``R -> S(d)``). :data:`REDUCE_SCATTER` makes the pair one ``P(sum) -> S(d)``, a
reduce-scatter: each rank receives only its chunk (``B (k-1)/k`` bytes on the wire instead of
``2 B (k-1)/k``) and no whole gradient is made. The same holds for any partial value made
replicated and then sliced on the same mesh axis, forward or backward; a whole value read by
another op as well is left alone (DRR's use count). At ZeRO stage 2 the slice is the traced
step's (the optimizer keeps this rank's slice of a whole parameter's gradient); a parameter
used twice has two all-reduced partial gradients added first, which
:data:`SUM_OF_ALL_REDUCES` makes one all-reduce of the sum (one collective instead of two, and
a pair :data:`REDUCE_SCATTER` then takes).

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


def _all_reduce(v: str, tag: str) -> Pat:
    """A ``P -> R`` all-reduce of ``v`` (its reduction bound to ``partial``; ``tensor`` and
    ``why`` to ``tensor_<tag>`` and ``why_<tag>``)."""
    return Pat(
        "dist_reshard",
        Var(v),
        src=Attr("partial"),
        dst="R",
        grad_reduce="",
        tensor=Attr(f"tensor_{tag}"),
        why=Attr(f"why_{tag}"),
        **_SAME,
    )


#: two all-reduces of partial values over the same mesh axis, added: one all-reduce of the sum
#: (a sum or a mean is linear). A parameter used twice has its gradient made so (a rule's
#: ``P(sum) -> R`` per use, then the accumulation); as one all-reduce, :data:`REDUCE_SCATTER`
#: can then make it a reduce-scatter where only a slice is read (ZeRO stage 2)
SUM_OF_ALL_REDUCES = Rule(
    name="add_of_all_reduces_to_all_reduce_of_add",
    source=Pat("add", _all_reduce("a", "a"), _all_reduce("b", "b")),
    where=[lambda m: m["partial"] in ("Psum", "Pavg")],
    result=Res(
        "dist_reshard",
        Res("add", "a", "b"),
        src=Attr("partial"),
        dst="R",
        grad_reduce="",
        tensor=Attr("tensor_a"),
        why=Attr("why_a"),
        **_SAME,
    ),
)


class DistReduceScatter(Canonicalize):
    """:data:`SUM_OF_ALL_REDUCES` and :data:`REDUCE_SCATTER`, greedily (the pass
    ``dist_reduce_scatter``)."""

    name = "dist_reduce_scatter"
    rules = (SUM_OF_ALL_REDUCES, REDUCE_SCATTER)
    hand_written = ()


register_pass("dist_reduce_scatter", DistReduceScatter)

#: the passes of a ``dist.to_static`` program: the rewrite above, then the default level
PIPELINE = ("dist_reduce_scatter", *LEVELS[DEFAULT_LEVEL])
