"""Mixed-precision state read by op dispatch (``fw.amp.auto_cast`` sets it).

While a policy is set, :func:`framework._src.ops.base.apply` (primitives) and ``call``
(composites) pass their inputs through :func:`cast_inputs` first:

- ops of AMP class "allow" (``OpDef.amp``: matmul, linear, convolutions, attention) run in
  the low dtype (float16/bfloat16);
- ops of class "deny" (exp, log, pow, sums, softmax, norms) run in float32;
- other ops run in the dtype of their inputs (O1), or in the low dtype too (O2).

Only floating inputs are cast; casts are ops like any other, so gradients flow back to the
float32 leaves in float32.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dtypes as _dt
from .opdef import OPS

if TYPE_CHECKING:
    from .tensor import Tensor


def op_class(cls: str) -> frozenset[str]:
    """The ops in AMP class ``cls`` ("allow": run in the low dtype under O1 and O2; "deny":
    kept in float32, precision-sensitive), read from their OpDefs (``OpDef.amp``).

    >>> import framework
    >>> from framework._src import amp
    >>> sorted(amp.op_class("allow"))[:3]
    ['attention', 'conv2d', 'conv2d_transpose']
    """
    return frozenset(name for name, d in OPS.items() if d.amp == cls)


@dataclass(frozen=True)
class AmpPolicy:
    """What ``auto_cast`` asked for: the level, the low dtype and the op lists in force."""

    level: str
    dtype: np.dtype
    allow: frozenset[str]
    deny: frozenset[str]


#: the policy in force (None: no mixed precision)
POLICY: ContextVar[AmpPolicy | None] = ContextVar("oarlock_amp_policy", default=None)


def cast_inputs(op_name: str, ins: list[Tensor]) -> list[Tensor]:
    """``ins`` cast for ``op_name`` under the policy in force (unchanged when none applies)."""
    pol = POLICY.get()
    if pol is None or op_name == "cast":
        return ins
    if op_name in pol.deny:
        want: Any = _dt.float32
    elif op_name in pol.allow or pol.level == "O2":
        want = pol.dtype
    else:
        return ins
    if all(t.dtype == want or not _dt.is_floating(t.dtype) or t.dtype == _dt.float64 for t in ins):
        return ins
    token = POLICY.set(None)  # the casts themselves run outside the policy
    try:  # NOTE: Tensor.astype (attached by the ops floor): this floor imports no op
        return [
            t.astype(want) if _dt.is_floating(t.dtype) and t.dtype not in (want, _dt.float64) else t
            for t in ins
        ]
    finally:
        POLICY.reset(token)
