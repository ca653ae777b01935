"""The checks the tiers use, from the public harness :mod:`framework.testing`.

Comparing device results with references (:func:`assert_close`: NaN matches NaN, infinities
exactly, floats within ``atol + rtol * |expected|``), putting numpy data on a device (offset
views with guard bytes), running one primitive through the dispatcher or the device's own
kernel with guarded outputs, and finite differences. A failed check raises
:class:`CheckFailure` carrying short "expected" and "got" texts that the reports show side by
side. Nothing here reaches into the core's private modules.
"""

from __future__ import annotations

from framework.testing import (
    GUARD_BYTE,
    CheckFailure,
    assert_close,
    fallback_stats,
    finite_difference,
    poison_outputs,
    put,
    run_kernel_guarded,
    run_primitive,
    unwritten,
)

__all__ = [
    "GUARD_BYTE",
    "CheckFailure",
    "assert_close",
    "fallback_stats",
    "finite_difference",
    "poison_outputs",
    "put",
    "run_kernel_guarded",
    "run_primitive",
    "unwritten",
]
