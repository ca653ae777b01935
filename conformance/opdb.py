"""The op database: for each primitive, sample inputs, the numpy reference and tolerances.

In the spirit of PyTorch's OpInfo. A :class:`Sample` is plain numpy data plus attributes, so it
can be fed to the device and to :mod:`conformance.reference` alike. Samples cover 0-d, empty,
broadcast, large and small magnitudes, NaN/inf where the contract defines the result, and
integer edge values. Each is also run from an offset view (a tensor that starts inside a larger
buffer), which is how kernels meet slices of other tensors.
"""

from __future__ import annotations

import numpy as np

from adapter_api import PRIMITIVES
from framework.testing import TOLERANCES, Tolerance, tolerance  # noqa: F401  (one table, re-exported)

from . import reference as R
from .op_samples import (
    arange_samples,
    arg_samples,
    argsort_samples,
    binary_samples,
    cast_samples,
    distinct_samples,
    full_samples,
    gather_samples,
    grad_from,
    layout_samples,
    matmul_samples,
    philox_samples,
    reduce_samples,
    scatter_samples,
    smooth,
    unary_samples,
    where_samples,
)
from .samples import (  # noqa: F401  (re-exported: the suite and tests import them from here)
    ALL,
    BF16,
    FLOATS,
    GRAD_MAX_ELEMENTS,
    HALF,
    INTS,
    LARGE_SAMPLES,
    NUMERIC,
    OpInfo,
    Sample,
    dtype_of,
    with_signed_zeros,
)

#: Unary ops whose result is exact in every float dtype, the sign of zero included.
SIGN_EXACT = ("neg", "abs", "floor", "ceil")
#: Ops computed exactly and rounded once: in half precision (computed in float32 and rounded
#: once, as a correct kernel does) they must match bit for bit; in float32 an OpenCL device
#: may take 2.5-3 ulp for div and sqrt, so there the dtype's tolerance applies.
HALF_EXACT = ("add", "sub", "mul", "div", "sqrt")


def _build() -> dict[str, OpInfo]:
    db: dict[str, OpInfo] = {}

    def add(info: OpInfo) -> None:
        db[info.name] = info

    unary_domain = {"log": "positive", "sqrt": "positive", "rsqrt": "positive"}
    for n in (
        "neg",
        "abs",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "tanh",
        "erf",
        "floor",
        "ceil",
        "sign",
    ):
        big = 1.0e3 if n in ("sin", "cos") else None
        g = () if n in ("floor", "ceil", "sign") else (0,)
        dom = unary_domain.get(n, "real")
        gen = unary_samples(n, dom, big=big)
        add(
            OpInfo(
                n,
                with_signed_zeros(gen) if n in SIGN_EXACT else gen,
                R.REFERENCES[n],
                grad_inputs=g,
                grad_samples=smooth("positive" if dom == "positive" else ("apart" if n == "abs" else "real")),
                exact=FLOATS if n in SIGN_EXACT else HALF if n in HALF_EXACT else (),
            )
        )
    add(OpInfo("logical_not", unary_samples("logical_not"), R.REFERENCES["logical_not"]))
    for n in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder"):
        kind = {"pow": "pow", "floor_divide": "nonzero_rhs", "remainder": "nonzero_rhs", "div": "real"}.get(
            n, "real"
        )
        nan_ok = n not in ("pow", "floor_divide", "remainder")
        edges = n in ("add", "sub", "mul", "maximum", "minimum")
        gsamp = smooth("apart" if n in ("maximum", "minimum") else ("pow" if n == "pow" else "positive"), 2)
        grad = (0, 1) if n not in ("floor_divide", "remainder") else ((0,) if n == "remainder" else ())
        add(
            OpInfo(
                n,
                binary_samples(kind, nan_ok, edges),
                R.REFERENCES[n],
                tol_scale=2.0 if n == "pow" else 1.0,
                grad_inputs=grad,
                grad_samples=gsamp,
                exact=HALF if n in HALF_EXACT else (),
            )
        )
    for n in ("eq", "ne", "lt", "le", "gt", "ge"):
        add(OpInfo(n, binary_samples(), R.REFERENCES[n]))
    for n in ("logical_and", "logical_or"):
        add(OpInfo(n, binary_samples(), R.REFERENCES[n]))
    add(
        OpInfo(
            "where",
            with_signed_zeros(where_samples),
            R.where,
            grad_inputs=(1, 2),
            exact=FLOATS,
            grad_samples=grad_from(where_samples, lambda s: s.label.startswith("shapes (3, 1)")),
        )
    )
    add(
        OpInfo(
            "cast",
            with_signed_zeros(cast_samples),
            R.cast,
            grad_inputs=(0,),
            exact=FLOATS,
            grad_samples=lambda d, rng: iter(
                [
                    Sample([rng.uniform(-2, 2, (3, 4)).astype(d)], {"dtype": d}, label="to itself"),
                    Sample(
                        [rng.uniform(-2, 2, (5,)).astype(d)],
                        {"dtype": np.dtype("float64" if d.name == "float32" else "float32")},
                        label="to another float",
                    ),
                ]
            ),
        )
    )
    for n in ("sum", "prod", "max", "min"):
        gs = (
            distinct_samples
            if n in ("max", "min")
            else grad_from(reduce_samples(n), lambda s: s.ins[0].size <= 64)
        )
        add(OpInfo(n, reduce_samples(n), R.REFERENCES[n], grad_inputs=(0,), grad_samples=gs))
    for n in ("argmax", "argmin"):
        add(OpInfo(n, arg_samples, R.REFERENCES[n]))
    add(OpInfo("argsort", argsort_samples, R.argsort))
    add(
        OpInfo(
            "matmul",
            matmul_samples,
            R.matmul,
            grad_inputs=(0, 1),
            grad_samples=grad_from(matmul_samples, lambda s: s.ins[0].size <= 24),
        )
    )
    for n in ("permute", "expand", "slice", "concat", "pad", "copy"):
        add(
            OpInfo(
                n,
                with_signed_zeros(layout_samples(n)),
                R.REFERENCES[n],
                grad_inputs=(0,) if n != "concat" else (0, 1, 2),
                grad_samples=grad_from(layout_samples(n)),
                exact=FLOATS,
            )
        )
    add(
        OpInfo(
            "gather",
            with_signed_zeros(gather_samples),
            R.gather,
            grad_inputs=(0,),
            grad_samples=grad_from(gather_samples),
            edge_checks=("index_out_of_range",),
            exact=FLOATS,
        )
    )
    add(
        OpInfo(
            "scatter_add",
            scatter_samples("scatter_add"),
            R.scatter_add,
            grad_inputs=(0, 2),
            grad_samples=grad_from(scatter_samples("scatter_add")),
            edge_checks=("index_out_of_range",),
        )
    )
    add(
        OpInfo(
            "scatter",
            with_signed_zeros(scatter_samples("scatter")),
            R.scatter,
            grad_inputs=(0, 2),
            grad_samples=grad_from(scatter_samples("scatter")),
            edge_checks=("index_out_of_range",),
            exact=FLOATS,
        )
    )
    add(OpInfo("full", full_samples, R.full, creation=True, exact=FLOATS))
    add(
        OpInfo(
            "arange",
            arange_samples,
            lambda n, start, step, dtype: R.arange(n, start, step, dtype),
            creation=True,
        )
    )
    add(OpInfo("philox_uniform", philox_samples, R.philox_uniform, creation=True, tol_scale=0.0))
    missing = set(PRIMITIVES) - set(db)
    assert not missing, f"op database misses primitives {sorted(missing)}"
    return db


OPDB: dict[str, OpInfo] = _build()
