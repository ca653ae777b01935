"""The program IR: SSA programs of operations, a text form that round-trips, a verifier and an executor.

The dialects are generated from the OpDefs, plus the control-flow dialect (``cf.cond``,
``cf.while`` with regions; run by :mod:`.control`).

>>> import framework as fw
>>> from framework import ir
>>> p = ir.parse_program(
...     "module @f(%0: tensor<[s0, 3], float32, cpu>) -> (tensor<[s0, 3], float32, cpu>) {\\n"
...     "  %1 = op.exp(%0) : tensor<[s0, 3], float32, cpu>\\n"
...     "  builtin.return(%1)\\n"
...     "}\\n")
>>> ir.verify(p)
>>> str(p) == ir.print_program(ir.parse_program(str(p)))
True
"""

from __future__ import annotations

from . import passes
from .core import (
    Block,
    IRError,
    Operation,
    Program,
    Region,
    SymDim,
    TensorType,
    Type,
    Value,
    print_attr,
    print_program,
    print_type,
)
from .dialects import OpInfo, infer_shapes, lookup, ops
from .executor import Executor
from .passes import PassManager, optimize
from .text import ParseError, parse_program
from .verify import VerifyError, verify

__all__ = [
    "Block",
    "Executor",
    "IRError",
    "OpInfo",
    "Operation",
    "ParseError",
    "PassManager",
    "Program",
    "Region",
    "SymDim",
    "TensorType",
    "Type",
    "Value",
    "VerifyError",
    "infer_shapes",
    "lookup",
    "ops",
    "parse_program",
    "optimize",
    "passes",
    "print_attr",
    "print_program",
    "print_type",
    "verify",
]
