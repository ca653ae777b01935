"""Every public name documents itself: a one-line summary and an example that runs (issue 34).

The rule, for each name in ``framework.__all__``:

- a module, class or function of this repository (``framework``, ``adapter_api``) carries a
  docstring whose first line is a summary on its own (then a blank line) and which holds a
  ``>>>`` example;
- a name bound to anything else cannot carry a docstring of its own (a numpy dtype such as
  ``fw.float32``, ``fw.dtype``, the ``CONTRACT_VERSION`` tuple: their ``__doc__`` is their
  type's): the ``framework`` module docstring documents it, with an example line that names
  ``fw.<name>``.

The examples run with ``doctest`` on the cpu device, one case per name, so a failure names the
function; they are skipped when ``OARLOCK_DEVICE`` names another device (they print
``device=cpu:0``).
"""

from __future__ import annotations

import contextvars
import doctest
import inspect
import os
import re

import numpy as np
import pytest

import framework as fw

OURS = ("framework", "adapter_api")
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
#: numpy's default print options: tensors print through numpy, and a test elsewhere may have
#: called ``fw.set_printoptions``
NUMPY_PRINT = dict(
    precision=8,
    threshold=1000,
    edgeitems=3,
    linewidth=75,
    suppress=False,
    nanstr="nan",
    infstr="inf",
    formatter=None,
    sign="-",
    floatmode="maxprec",
)


def _carries_doc(obj: object) -> bool:
    """Whether ``obj``'s docstring is ours to write: a module, class or function of this repository."""
    if inspect.ismodule(obj):
        return obj.__name__.split(".")[0] in OURS
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return (getattr(obj, "__module__", None) or "").split(".")[0] in OURS
    return False  # a plain value: its __doc__ is its type's


OWN = [n for n in fw.__all__ if _carries_doc(getattr(fw, n))]
IN_MODULE_DOC = [n for n in fw.__all__ if n not in OWN]


def _missing(doc: str | None) -> str | None:
    """What a docstring lacks (``None``: nothing)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    if not lines or not lines[0].strip():
        return "no docstring"
    if len(lines) > 1 and lines[1].strip():
        return "no one-line summary (the first line must stand alone, then a blank line)"
    if ">>>" not in doc:
        return "no >>> example"
    return None


def test_every_public_name_has_a_summary_and_an_example() -> None:
    bad = {n: why for n in OWN if (why := _missing(getattr(fw, n).__doc__))}
    assert not bad, "public names whose docstring falls short:\n" + "\n".join(
        f"  fw.{n}: {why}" for n, why in sorted(bad.items())
    )


def test_names_that_cannot_carry_a_docstring_have_an_example_in_the_module_docstring() -> None:
    assert _missing(fw.__doc__) is None
    examples = "\n".join(
        ln for ln in (fw.__doc__ or "").splitlines() if ln.lstrip().startswith((">>>", "..."))
    )
    absent = [n for n in IN_MODULE_DOC if not re.search(rf"\bfw\.{re.escape(n)}\b", examples)]
    assert not absent, (
        "these names cannot carry a docstring (their __doc__ is their type's); "
        "document them with an example in framework/__init__.py's docstring: " + ", ".join(absent)
    )


def _on_cpu() -> None:
    want = os.environ.get("OARLOCK_DEVICE", "cpu").split(":")[0]
    if want not in ("", "cpu"):
        pytest.skip(f"the examples print cpu tensors; OARLOCK_DEVICE={want}")


def _run(obj: object, name: str) -> None:
    _on_cpu()
    tests = doctest.DocTestFinder(recurse=False, exclude_empty=True).find(
        obj, name, globs={"fw": fw, "np": np}
    )
    assert tests and tests[0].examples, f"fw.{name} has no example to run"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []

    def run_all() -> None:
        with fw.device("cpu"):
            for t in tests:
                runner.run(t, out=report.append)

    # the examples may set context variables (grad mode, strict kernels), the default dtype,
    # the random state and numpy's print options: each runs in a copy of the context, and the
    # rest is put back
    dtype, rng, printing = fw.get_default_dtype(), fw.get_rng_state(), np.get_printoptions()
    try:
        np.set_printoptions(**NUMPY_PRINT)
        contextvars.copy_context().run(run_all)
    finally:
        np.set_printoptions(**printing)
        fw.set_default_dtype(dtype)
        fw.set_rng_state(rng)
    assert not runner.failures, f"fw.{name}: {runner.failures} example(s) failed\n" + "".join(report)


@pytest.mark.parametrize("name", OWN)
def test_example_runs(name: str) -> None:
    _run(getattr(fw, name), name)


def test_module_docstring_examples_run() -> None:
    _run(fw, "framework")
