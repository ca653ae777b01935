"""``dist.to_static``'s rewrite ``dist_reduce_scatter``: a partial value all-reduced and then
sliced on the same mesh axis becomes one reduce-scatter (``op.dist_reshard`` ``P -> S(d)``);
a whole value read elsewhere too, or a slice on another axis, is left alone; two all-reduces
added (a parameter used twice) become one all-reduce of the sum, on a linear reduction over one
axis only. The programs it rewrites train as one process on 2 and 4 ranks in
tests/test_parallelize_sharding.py (ZeRO stages 2 and 3 under ``dist.to_static``)."""

from __future__ import annotations

import pytest

from framework import ir
from framework.distributed.auto_parallel import program_passes
from framework.ir import passes

_ATTRS = (
    'dim_names = ("dp", "mp"), grad_reduce = "", mesh = (0, 1, 2, 3), mesh_shape = (2, 2), shape = (6, 8)'
)


def _program(second_axis: int = 0, extra_use: bool = False) -> ir.Program:
    """The backward of a ZeRO-3 gather: all-reduce over axis 0, then this rank's chunk on
    ``second_axis``; ``extra_use``: the whole gradient is also returned."""
    ret = "%2, %3" if extra_use else "%3"
    types = "tensor<[6, 8], float32, cpu>, " if extra_use else ""
    return ir.parse_program(
        f"module @f(%0: tensor<[6, 8], float32, cpu>) -> ({types}tensor<[3, 8], float32, cpu>) {{\n"
        f'  %2 = op.dist_reshard(%0) {{axis = 0, {_ATTRS}, src = "Psum", dst = "R", '
        f'tensor = "w", why = "matmul"}} : tensor<[6, 8], float32, cpu>\n'
        f'  %3 = op.dist_reshard(%2) {{axis = {second_axis}, {_ATTRS}, src = "R", dst = "S0", '
        f'tensor = "w", why = "ShardingStage3 gather w"}} : tensor<[3, 8], float32, cpu>\n'
        f"  builtin.return({ret})\n"
        "}\n"
    )


def _reshards(p: ir.Program) -> list[tuple[str, str, int, str]]:
    return [
        (op.attrs["src"], op.attrs["dst"], op.attrs["axis"], op.attrs["why"])
        for op in p.walk()
        if op.name == "op.dist_reshard"
    ]


def test_all_reduce_then_slice_becomes_one_reduce_scatter() -> None:
    p = _program()
    stats = passes.PassManager.named(["dist_reduce_scatter"]).run(p, passes.PassContext())
    assert stats[0].rewritten == 1
    assert _reshards(p) == [("Psum", "S0", 0, "ShardingStage3 gather w")]
    (op,) = [o for o in p.walk() if o.name == "op.dist_reshard"]
    assert op.operands[0] is p.inputs[0] and op.result.type.shape == (3, 8)
    assert "dist_reduce_scatter" == program_passes.PIPELINE[0]  # what dist.to_static runs first


@pytest.mark.parametrize(
    "second_axis, extra_use", [(1, False), (0, True)], ids=["another-axis", "whole-value-read"]
)
def test_the_rewrite_leaves_other_pairs_alone(second_axis: int, extra_use: bool) -> None:
    p = _program(second_axis, extra_use)
    before = _reshards(p)
    passes.PassManager.named(["dist_reduce_scatter"]).run(p, passes.PassContext())
    assert _reshards(p) == before


def _twice(partial: str = "Psum", axis_b: int = 0) -> ir.Program:
    """A parameter used twice under ZeRO stage 2: each use's partial gradient all-reduced (the
    second over mesh axis ``axis_b``, with reduction ``partial``), added, then this rank's
    chunk."""
    t = "tensor<[6, 8], float32, cpu>"
    return ir.parse_program(
        f"module @f(%0: {t}, %1: {t}) -> (tensor<[3, 8], float32, cpu>) {{\n"
        f'  %2 = op.dist_reshard(%0) {{axis = 0, {_ATTRS}, src = "Psum", dst = "R", '
        f'tensor = "w", why = "matmul"}} : {t}\n'
        f'  %3 = op.dist_reshard(%1) {{axis = {axis_b}, {_ATTRS}, src = "{partial}", dst = "R", '
        f'tensor = "w", why = "add"}} : {t}\n'
        f"  %4 = op.add(%2, %3) : {t}\n"
        f'  %5 = op.dist_reshard(%4) {{axis = 0, {_ATTRS}, src = "R", dst = "S0", '
        f'tensor = "w", why = "ShardingStage2 gradient of w, in the program"}} : tensor<[3, 8], float32, cpu>\n'
        "  builtin.return(%5)\n"
        "}\n"
    )


def test_a_sum_of_all_reduces_becomes_one_reduce_scatter_of_the_sum() -> None:
    p = _twice()
    passes.PassManager.named(["dist_reduce_scatter"]).run(p, passes.PassContext())
    assert _reshards(p) == [("Psum", "S0", 0, "ShardingStage2 gradient of w, in the program")]
    (rs,) = [o for o in p.walk() if o.name == "op.dist_reshard"]
    add = rs.operands[0].defining_op
    assert add.name == "op.add" and set(add.operands) == set(p.inputs)
    assert rs.result.type.shape == (3, 8) and add.result.type.shape == (6, 8)


@pytest.mark.parametrize(
    "partial, axis_b", [("Pmax", 0), ("Psum", 1)], ids=["max-is-not-linear", "another-axis"]
)
def test_a_sum_of_other_all_reduces_is_left_alone(partial: str, axis_b: int) -> None:
    p = _twice(partial, axis_b)
    before = _reshards(p)
    passes.PassManager.named(["dist_reduce_scatter"]).run(p, passes.PassContext())
    assert _reshards(p) == before
