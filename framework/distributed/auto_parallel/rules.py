"""The planner of sharding (SPMD) rules. Each op declares its rule in its OpDef
(``OpDef.sharding``, built with ``framework._src.ops.sharding``) in an einsum-like notation.

A rule is ``"inputs->output | kept"``: one group of letters per input and for the output, one
letter per tensor dim; ``*`` stands for the leading (broadcast) dims, aligned from the right
as in numpy; a letter in an input and not in the output is contracted (summed: matmul, sum;
or reduced by ``reduce``: max); letters after ``|`` must stay whole on every rank (softmax's
axis, the normalised axis of a norm, the classes of cross-entropy).

Planning, for each mesh axis in order:

1. *Candidates*: the letters some input shards on the axis (not a kept letter, not one an
   earlier axis took), and "none".
2. *Cost rule*: each candidate costs the bytes its reshards move per rank (ring estimates,
   ``B`` the bytes of the whole tensor) -- an input sharded on another letter is all-gathered
   (``B (k-1)/k``), a partial input is reduce-scattered (``B (k-1)/k``) when it holds the
   letter, else all-reduced (twice that), a replicated input is sliced (free). The cheapest wins; a tie goes to the candidate met
   first (inputs in order, dims in order), "none" last.
3. *Partial values* pass through an op that is linear in them (``linear``: "all" -- add
   and subtract, when every input is partial; "one" -- multiply, matmul, when one input is);
   otherwise they are reduced first.
4. *Output*: ``Shard`` of the output dim of the chosen letter; ``Partial`` when the letter is
   contracted (or a partial value passed through); else ``Replicate``.
5. *Gradients*: an input replicated on an axis whose letter it lacks (it is broadcast along
   it), or next to a partial value, gets a partial gradient: the planner marks it, and the
   executor all-reduces its gradient over the axis in backward (Megatron's ``f``).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass, field

from .placement import Partial, Placement, Replicate, Shard


@dataclass
class Plan:
    """What the executor does: the placements each input needs, the output's placements,
    and the (input, mesh axis) pairs whose gradient is all-reduced in backward."""

    inputs: list[list[Placement]]
    output: list[Placement]
    grad_all_reduce: list[tuple[int, int]] = field(default_factory=list)
    letters: list[str] = field(default_factory=list)
    shapes: list[tuple[int, ...]] = field(default_factory=list)


def expand(rule: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str, set[str]]:
    """Letters per input, for the output, and the kept letters, with ``*`` spelled out."""
    body, _, kept = rule.partition("|")
    ins, _, out = body.replace(" ", "").partition("->")
    specs = ins.split(",")
    nbatch = max((len(s) - len(p.replace("*", "")) for s, p in zip(shapes, specs) if "*" in p), default=0)
    pool = [c for c in string.ascii_uppercase][:nbatch]
    batch = "".join(pool)

    def spell(p: str, rank: int | None) -> str:
        if "*" not in p:
            return p
        n = (rank - len(p) + 1) if rank is not None else nbatch
        return p.replace("*", batch[nbatch - n :] if n else "")

    letters = [spell(p, len(s)) for p, s in zip(specs, shapes)]
    # a dim of size 1 broadcast against a larger one is not that letter in this input
    sizes: dict[str, int] = {}
    for lt, s in zip(letters, shapes):
        for c, n in zip(lt, s):
            sizes[c] = max(sizes.get(c, 1), n)
    letters = [
        "".join("_" if n == 1 and sizes[c] > 1 else c for c, n in zip(lt, s))
        for lt, s in zip(letters, shapes)
    ]
    return letters, spell(out, None), set(kept.strip())


def plan(
    name: str,
    rule: str,
    linear: str,
    reduce: str,
    letters: list[str],
    out: str,
    kept: set[str],
    placements: list[list[Placement]],
    shapes: list[tuple[int, ...]],
    itemsizes: list[int],
    mesh_shape: list[int],
) -> Plan:
    """Apply the rule to the inputs' placements (see the module docstring)."""
    nin = len(letters)
    need: list[list[Placement]] = [[Replicate()] * len(mesh_shape) for _ in range(nin)]
    outp: list[Placement] = []
    gar: list[tuple[int, int]] = []
    taken: set[str] = set()
    chosen_all: list[str] = []
    nbytes = [math.prod(s) * b for s, b in zip(shapes, itemsizes)]  # of the whole tensors
    for axis, k in enumerate(mesh_shape):
        sharded = []  # (input, letter) sharded on this axis
        partial = [i for i in range(nin) if placements[i][axis].is_partial()]
        cands: list[str] = []
        for i in range(nin):
            p = placements[i][axis]
            if isinstance(p, Shard):
                c = letters[i][p.dim]
                sharded.append((i, c))
                if c not in kept and c != "_" and c not in taken and c not in cands:
                    cands.append(c)
        cands.append("")

        keep = _keeps_partial(linear, partial, [placements[i][axis] for i in range(nin)])

        def cost(c: str, axis: int = axis, k: int = k, keep: bool = keep) -> float:
            total = 0.0
            for i in range(nin):
                p = placements[i][axis]
                if isinstance(p, Shard) and letters[i][p.dim] != c:
                    total += nbytes[i] * (k - 1) / k  # all_gather
                elif p.is_partial() and not (keep and not c):
                    total += nbytes[i] * (k - 1) / k * (1 if c and c in letters[i] else 2)  # reduce
            return total

        best = min(cands, key=lambda c: (cost(c), cands.index(c)))
        if best:
            taken.add(best)
        chosen_all.append(best)
        passing = keep and not best
        for i in range(nin):
            p = placements[i][axis]
            if best and best in letters[i]:
                need[i][axis] = Shard(letters[i].index(best))
            elif passing and p.is_partial():
                need[i][axis] = p
            else:
                need[i][axis] = Replicate()
        if best and best in out:
            outp.append(Shard(out.index(best)))
        elif best:
            outp.append(Partial(reduce or "sum"))
        elif passing:
            outp.append(placements[partial[0]][axis])
        else:
            outp.append(Replicate())
        # gradients that are partial over this axis
        for i in range(nin):
            if not isinstance(need[i][axis], Replicate):
                continue
            if (best and best not in letters[i]) or passing:
                gar.append((i, axis))
    return Plan(need, outp, gar, chosen_all)


def _keeps_partial(linear: str, partial: list[int], ps: list[Placement]) -> bool:
    """Whether partial values pass through an op of this linearity unreduced."""
    if not partial:
        return False
    if linear == "all":
        return (
            len(partial) == len(ps)
            and len({ps[i] for i in partial}) == 1
            and ps[0].reduce_type in ("sum", "avg")
        )
    if linear == "one":
        return len(partial) == 1 and ps[partial[0]] == Partial("sum")
    if linear == "first":
        return partial == [0] and ps[0] == Partial("sum")
    return False
