"""Passes over programs: a pass manager with levels, statistics and IR printing; dead code
elimination, common subexpression elimination, constant folding; pattern rewriting to a
fixpoint, with rules written as data (DRR).

>>> from framework import ir
>>> from framework.ir import passes
>>> p = ir.parse_program(
...     "module @f(%0: tensor<[2, 3], float32, cpu>) -> (tensor<[2, 3], float32, cpu>) {\\n"
...     "  %1 = op.permute(%0) {perm = (1, 0)} : tensor<[3, 2], float32, cpu>\\n"
...     "  %2 = op.permute(%1) {perm = (1, 0)} : tensor<[2, 3], float32, cpu>\\n"
...     "  %3 = op.exp(%2) : tensor<[2, 3], float32, cpu>\\n"
...     "  builtin.return(%3)\\n"
...     "}\\n")
>>> _, stats = passes.optimize(p, "O2")
>>> [op.name for op in p.block.ops]
['op.exp', 'builtin.return']
"""

from __future__ import annotations

from . import rules
from .canonical import Canonicalize, Fuse, PermuteOfPermute
from .conv_fold import ConvAffineFold, ConvFold, fold_conv_affine
from .conv_fusion import ConvNchwc
from .cse import CommonSubexpressionElimination, eliminate_common_subexpressions
from .dce import DeadCodeElimination, eliminate_dead_code
from .drr import Attr, Const, Match, Pat, Res, Rule, Var
from .fold import ConstantFolding, fold_constants
from .fusion import Fusion, fuse_program, fuses, fusion_stats
from .horizontal import HorizontalFusion
from .lower import Lower, lower
from .manager import (
    DEFAULT_LEVEL,
    LEVELS,
    PASSES,
    FunctionPass,
    Pass,
    PassContext,
    PassManager,
    PassStats,
    optimize,
    register_pass,
    run_pipeline,
)
from .rewrite import PatternRewriter, RewritePattern, apply_patterns_greedily

__all__ = [
    "DEFAULT_LEVEL",
    "LEVELS",
    "PASSES",
    "Attr",
    "Canonicalize",
    "CommonSubexpressionElimination",
    "Const",
    "ConvAffineFold",
    "ConvFold",
    "ConvNchwc",
    "ConstantFolding",
    "DeadCodeElimination",
    "Fuse",
    "FunctionPass",
    "Fusion",
    "HorizontalFusion",
    "Lower",
    "Match",
    "Pass",
    "PassContext",
    "PassManager",
    "PassStats",
    "Pat",
    "PatternRewriter",
    "PermuteOfPermute",
    "Res",
    "RewritePattern",
    "Rule",
    "Var",
    "apply_patterns_greedily",
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "fold_constants",
    "fold_conv_affine",
    "fuse_program",
    "fuses",
    "lower",
    "fusion_stats",
    "optimize",
    "register_pass",
    "rules",
    "run_pipeline",
]
