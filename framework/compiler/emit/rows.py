"""The "rows" layout: one thread or work-item per row and a plain loop along it, in chunks
that the compiler vectorises (the C emitter, and OpenCL C on CPU devices)."""

from __future__ import annotations

import numpy as np

from .. import loop_ir
from .base import Emitter, _flag


class _RowLoops(Emitter):
    """Passes along a row in chunks of :attr:`width` elements, for emitters of the "rows"
    layout (one thread or work-item per row, a plain loop along it that the compiler
    vectorises): each reduction keeps ``width`` partial results, so the vectorised loop
    holds several SIMD registers of them and its adds do not wait on one another (one
    accumulator leaves the loop bound by the add's latency), and the second pass over a row
    that fits in cache prefetches the next row while it computes."""

    #: the pragma that asks for SIMD code along a chunk
    simd: tuple[str, ...] = ()
    #: the type of the element index ``j``
    j_t = "int"

    #: elements of a row per chunk of a pass (the vector width): each reduction keeps this
    #: many partial results (several SIMD registers, so the adds do not wait on each other)
    #: and later passes prefetch the next row chunk by chunk; tuned per device and shape
    #: (tune.py), this when tuning is off
    width = 32
    #: bytes of a row's inputs up to which a later pass prefetches the next row (it stays in L2)
    PREFETCH_ROW_MAX = 64 << 10

    def lanes(self, prog: loop_ir.Program, reds: list[tuple[loop_ir.Node, str]]) -> int:
        if prog.n is None or self.width <= 1 or prog.n < self.width or not reds:
            return 1
        return 1 if any(r.attr in ("argmax", "argmin") for r, _ in reds) else self.width

    def lane_decl(self, r: loop_ir.Node, acc: str, lanes: int) -> list[str]:
        out = [f"{self._acc_type(r)} {acc}_l[{lanes}];"]
        init = [f"{acc}_l[l] = {self._red_init(r)};"]
        if _flag(r) == "nan":
            out.append(f"int nan{r.id}_l[{lanes}];")
            init.append(f"nan{r.id}_l[l] = 0;")
        return [*out, f"for (int l = 0; l < {lanes}; ++l) {{ {' '.join(init)} }}"]

    def _fold_lanes(self, reds: list[tuple[loop_ir.Node, str]], lanes: int) -> list[str]:
        """Each reduction's partial results into its accumulator, lane by lane."""
        out = []
        for r, acc in reds:
            part, src = f"{acc}_l[l]", r.args[0].dtype
            if r.attr in ("sum", "prod"):
                out.append(f"{acc} {'+' if r.attr == 'sum' else '*'}= {part};")
            elif src == loop_ir.BOOL:
                out.append(f"{acc} {'|' if r.attr == 'max' else '&'}= {part};")
            else:
                out.append(self.update(r.attr, acc, part))
                if _flag(r) == "nan":
                    out.append(f"nan{r.id} |= nan{r.id}_l[l];")
        return [f"for (int l = 0; l < {lanes}; ++l) {{", *("    " + s for s in out), "}"]

    def _prefetch(self, prog: loop_ir.Program, li: int) -> list[str]:
        """The second pass over a row that fits in cache fetches the next row (its inputs read
        along the row) into L2 while it computes: the first pass then finds it there."""
        if li != 1 or prog.n is None:
            return []
        ks = sorted(
            {
                n.attr
                for n in loop_ir.live_nodes(prog.outputs)
                if n.op == "input" and n.row and n.col and n.attr not in prog.loads
            }
        )
        size = sum(self.storage_size(prog.inputs[k][0]) for k in ks)
        if not ks or prog.n * size > self.PREFETCH_ROW_MAX:
            return []
        out = []
        for k in ks:
            step = max(64 // self.storage_size(prog.inputs[k][0]), 1)
            out += [self.prefetch(f"in{k} + (r + 1) * N + jj + {o}") for o in range(0, self.width, step)]
        return [f"if (r + 1 < rows) {{ {' '.join(out)} }}"] if out else []

    def storage_size(self, dt: np.dtype) -> int:
        return 1 if dt == loop_ir.BOOL else dt.itemsize

    def prefetch(self, at: str) -> str:
        """Fetch the cache line at address ``at`` into L2 (a hint: it never faults)."""
        return f"__builtin_prefetch({at}, 0, 2);"

    def loop(
        self,
        prog: loop_ir.Program,
        li: int,
        reds: list[tuple[loop_ir.Node, str]],
        inner: list[str],
        lanes: int,
    ) -> list[str]:
        """Chunks of :meth:`chunk` elements (full ones unrolled into SIMD registers, then the
        tail), when the pass keeps partial results per lane, prefetches, has a
        :meth:`chunk_suffix` or asks for chunks (:meth:`in_chunks`). The tail is under the
        SIMD pragma too: a row of 46 logits left 14 scalar ``expf`` calls a row, and
        cross-entropy's log-softmax over 1024 x 46 took 87-137 us; vectorised (8 + 4 lanes,
        then 2 scalar) 60 us (AMD Zen 5, one thread)."""
        pf = self._prefetch(prog, li) if prog.n is not None and prog.n >= self.width > 1 else []
        suffix = self.chunk_suffix(prog, li, str(self.chunk(prog, li)))
        if lanes <= 1 and not pf and not suffix and not self.in_chunks(prog, li):
            return super().loop(prog, li, reds, inner, lanes)
        assert prog.n is not None
        w = self.chunk(prog, li)
        main, tail = prog.n - prog.n % w, prog.n % w
        out = [
            f"for ({self.j_t} jj = 0; jj < {main}; jj += {w}) {{",
            *("    " + s for s in pf),
            *("    " + s for s in self.chunk_body(prog, li, inner, str(w), f"jj + {w}")),
            *("    " + s for s in suffix),
            "}",
        ]
        if tail:
            out += [
                "{",
                f"    const {self.j_t} jj = {main};",
                *("    " + s for s in self.chunk_body(prog, li, inner, "N - jj", "N", simd=True)),
                *("    " + s for s in self.chunk_suffix(prog, li, "N - jj")),
                "}",
            ]
        return out + (self._fold_lanes(reds, lanes) if lanes > 1 else [])

    def chunk_body(
        self, prog: loop_ir.Program, li: int, inner: list[str], count: str, bound: str, simd: bool = True
    ) -> list[str]:
        """One chunk of pass ``li``: ``inner`` for ``j`` from ``jj`` up to ``bound`` (``count``
        elements; ``simd``: a full chunk, under the SIMD pragma)."""
        return [
            *(self.simd if simd else ()),
            f"for ({self.j_t} j = jj; j < {bound}; ++j) {{",
            *("    " + s for s in inner),
            "}",
        ]

    def chunk(self, prog: loop_ir.Program, li: int) -> int:
        """Elements per chunk of pass ``li``: :attr:`width` (its lanes' count)."""
        return self.width

    def in_chunks(self, prog: loop_ir.Program, li: int) -> bool:
        """Whether pass ``li`` runs in chunks even with no lanes, prefetch or suffix."""
        return False
