"""Several generated C kernels as one translation unit: one compiler process instead of one each.

On a cold kernel cache the first training step of a small model builds ~20 generated kernels;
each build is a compiler process whose fixed part (the driver, ``cc1`` reading the precompiled
intrinsics header, the link of a shared library) cost about as much CPU as compiling the kernel
itself (2-core AMD EPYC, GCC: 0.07 of 0.12 s per kernel, docs/benchmarks.md). The prebuild
(``fused.prebuild``) therefore hands the C compiler a program's kernels in a few units, one per
core. Each kernel's source goes in as it is, its names made its own: the entry and every
``static`` name get the suffix ``__u<i>``, and the macros it defines are undefined after it.
The unit is one entry of the kernel cache (keyed by its whole text), so a warm process
that prebuilds the same program loads the same library; each kernel gets its program from it,
and the cache gives that program to the kernel's own lookup (``ProgramCache.remember``: a
merged kernel that ``dispatch.find_kernel`` makes again later builds nothing).
A unit that does not build falls back to building its kernels one by one.
"""

from __future__ import annotations

import os
import re
from typing import Any

from adapter_api import CompileError

_ATTRIBUTE = re.compile(r"__attribute__\s*\(\(.*?\)\)")
_STATIC = re.compile(r"\s*static\b[^;{=(]*?\b([A-Za-z_]\w*)\s*[(\[=;]")
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
#: macros a kernel defines that stay defined: an identical redefinition is no error, and
#: ``__FAST_MATH__`` only matters before the first ``<math.h>``
_KEEP = frozenset({"__FAST_MATH__"})


def enabled() -> bool:
    """``OARLOCK_PREBUILD_UNITS`` (default on): whether the prebuild builds a program's C
    kernels in shared translation units."""
    return os.environ.get("OARLOCK_PREBUILD_UNITS", "1").strip().lower() not in ("0", "false", "off", "no")


def one_unit(kernels: list[tuple[str, str]]) -> tuple[str, list[str]]:
    """The translation unit of ``kernels`` (``(source, entry)`` pairs) and the entry each has
    in it.

    Example::

        src, entries = one_unit([(k.source, k.entry) for k in kernels])
        progs = CACHE.get_batch(comp, src, tuple(entries), kernels[0].options)
    """
    parts, entries = [], []
    for i, (source, entry) in enumerate(kernels):
        names = {entry}
        for line in source.splitlines():
            m = _STATIC.match(_ATTRIBUTE.sub("", line))
            if m:
                names.add(m.group(1))
        suffix = f"__u{i}"
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b")
        text = pattern.sub(rf"\g<1>{suffix}", source)
        undef = sorted(set(_MACRO.findall(text)) - _KEEP)
        parts.append(f"/* unit part {i}: {entry} */\n{text}\n" + "".join(f"#undef {n}\n" for n in undef))
        entries.append(entry + suffix)
    return "\n".join(parts), entries


def shares(kernels: list[Any], n: int) -> list[list[Any]]:
    """``kernels`` dealt into at most ``n`` lists of about equal source length (largest first),
    each in the order given (the unit's text, hence its cache key, does not depend on timing)."""
    n = max(1, min(n, len(kernels)))
    load = [0] * n
    out: list[list[int]] = [[] for _ in range(n)]
    for i in sorted(range(len(kernels)), key=lambda i: -len(kernels[i].source)):
        j = load.index(min(load))
        out[j].append(i)
        load[j] += len(kernels[i].source)
    return [[kernels[i] for i in sorted(idx)] for idx in out if idx]


class Unit:
    """The build of ``kernels`` (one language, one option set) as one unit through ``cache``,
    a call of the prebuild: ``unit()`` builds it (:func:`build_unit`), ``unit.cached()`` says
    whether ``cache`` holds it (it would compile nothing); its text is made once for both."""

    def __init__(self, kernels: list[Any], comp: Any, cache: Any) -> None:
        self.members, self.comp, self.cache = kernels, comp, cache
        self.kernels = len(kernels)  # for the progress line
        self._text: tuple[str, list[str]] | None = None

    def text(self) -> tuple[str, list[str]]:
        if self._text is None:
            self._text = one_unit([(k.source, k.entry) for k in self.members])
        return self._text

    def cached(self) -> bool:
        source, entries = self.text()
        return bool(self.cache.has_batch(self.comp, source, tuple(entries), tuple(self.members[0].options)))

    def __call__(self) -> None:
        build_unit(self.members, self.comp, self.cache, self.text())


def build_unit(kernels: list[Any], comp: Any, cache: Any, text: tuple[str, list[str]] | None = None) -> None:
    """Build ``kernels`` (one language, one option set) as one unit through ``cache`` and give
    each its program; when the unit does not build, each kernel builds alone (a kernel that
    fails then is left to the executor's lookup, which warns and falls back). ``text``: the
    unit's :func:`one_unit`, when made already."""
    source, entries = text if text is not None else one_unit([(k.source, k.entry) for k in kernels])
    try:
        progs = cache.get_batch(comp, source, tuple(entries), kernels[0].options)
    except CompileError:
        progs = None
    for k, e in zip(kernels, entries):
        if progs is not None:
            k.programs.setdefault(id(comp), progs[e])
            cache.remember(comp, k.source, k.entry, k.options, progs[e])  # its own lookup finds it
        else:
            try:
                k.build(comp)
            except CompileError:
                pass
