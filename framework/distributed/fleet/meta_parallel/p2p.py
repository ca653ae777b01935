"""Activations and their gradients between neighbouring pipeline stages, over the pipe
group's communicator. The shapes and dtypes of what a stage sends forward travel once per
batch in a small header (the first micro-batch), so the receiver can allocate; a gradient has
the shape of the activation it belongs to. A tensor may carry ``layout_words`` (a list of
ints: the auto-parallel pipeline puts a distributed activation's placements and global shape
there); they travel in the header and are set on the tensor the receiver allocates. Sends and receives that pair up with the same
neighbour go out as one :func:`batch_isend_irecv` (no deadlock whatever the message size).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adapter_api import OpArgumentError

from ...._src import dtypes as _dtypes
from ...._src.ops import creation as _creation
from ...._src.tensor import Tensor, to_tensor
from ... import collective

_HEADER = 64  # int64 words: [count, (dtype code, ndim, *dims, n, *layout words) per tensor]
_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "bool", "uint8", "int8", "int16"]


def as_list(x: Any) -> list[Tensor]:
    """The tensors a stage passes on (a tensor or a tuple of them)."""
    xs = list(x) if isinstance(x, (tuple, list)) else [x]
    for t in xs:
        if not isinstance(t, Tensor):
            raise OpArgumentError(
                f"[PipelineParallel] a stage must output a tensor or a tuple of tensors, got {type(t).__name__}"
            )
    return xs


def wants_grad(t: Tensor) -> bool:
    return t.dtype.kind == "f"


class P2P:
    """Point-to-point traffic of one stage with its two neighbours in the pipe ``group``."""

    def __init__(self, group: collective.Group, stage: int, num_stages: int, device: Any) -> None:
        self.group, self.stage, self.n, self.device = group, stage, num_stages, device
        self.prev = group.ranks[stage - 1] if stage > 0 else None
        self.next = group.ranks[stage + 1] if stage < num_stages - 1 else None
        self.meta_in: list[tuple[Any, tuple[int, ...]]] | None = None  # what recv_forward gets
        self.layouts_in: list[list[int]] = []  # the layout words of what recv_forward gets
        self.meta_out: list[tuple[Any, tuple[int, ...]]] | None = None  # what this stage sends
        self.sent_meta = self.got_meta = False  # the header of this batch, each way

    def new_batch(self) -> None:
        self.sent_meta = self.got_meta = False

    # -- the header ---------------------------------------------------------------------
    def _send_meta(self, xs: list[Tensor]) -> None:
        words = [len(xs)]
        for t in xs:
            layout = list(getattr(t, "layout_words", ()))
            words += [_DTYPES.index(t.dtype.name), len(t.shape), *t.shape, len(layout), *layout]
        if len(words) > _HEADER:
            raise OpArgumentError(
                f"[PipelineParallel] too many or too deep tensors between stages: {len(xs)}"
            )
        h = to_tensor(np.array(words + [0] * (_HEADER - len(words)), np.int64), place=self.device)
        collective.send(h, self.next, group=self.group)
        self.meta_out = [(t.dtype, tuple(t.shape)) for t in xs]

    def _recv_meta(self) -> None:
        h = _creation.zeros([_HEADER], dtype="int64", device=self.device)
        collective.recv(h, self.prev, group=self.group)
        w, at, meta, layouts = h.numpy().tolist(), 1, [], []
        for _ in range(w[0]):
            code, nd = w[at], w[at + 1]
            meta.append((_dtypes.as_dtype(_DTYPES[code]), tuple(w[at + 2 : at + 2 + nd])))
            at += 2 + nd
            layouts.append(w[at + 1 : at + 1 + w[at]])
            at += 1 + w[at]
        self.meta_in, self.layouts_in = meta, layouts

    # -- the four transfers -------------------------------------------------------------
    def _empty_in(self) -> list[Tensor]:
        assert self.meta_in is not None
        xs = [_creation.zeros(list(s), dtype=d, device=self.device) for d, s in self.meta_in]
        for x, layout in zip(xs, self.layouts_in):
            if layout:
                x.layout_words = layout
        return xs

    def _grads_of(self, meta: list[tuple[Any, tuple[int, ...]]]) -> list[Tensor]:
        return [_creation.zeros(list(s), dtype=d, device=self.device) for d, s in meta if d.kind == "f"]

    def _run(self, sends: list[tuple[Tensor, int]], recvs: list[tuple[Tensor, int]]) -> None:
        ops = [collective.P2POp(collective.isend, t, p, self.group) for t, p in sends]
        ops += [collective.P2POp(collective.irecv, t, p, self.group) for t, p in recvs]
        collective.batch_isend_irecv(ops)

    def _header(self, xs: list[Tensor] | None, incoming: bool) -> None:
        """The first transfer of a batch in each direction carries the header (alone)."""
        if incoming and not self.got_meta and self.prev is not None:
            self._recv_meta()
            self.got_meta = True
        if not incoming and not self.sent_meta and self.next is not None and xs is not None:
            self._send_meta(xs)
            self.sent_meta = True

    def recv_forward(self) -> list[Tensor] | None:
        if self.prev is None:
            return None
        self._header(None, True)
        xs = self._empty_in()
        self._run([], [(t, self.prev) for t in xs])
        return xs

    def send_forward(self, ys: list[Tensor]) -> None:
        if self.next is None:
            return
        self._header(ys, False)
        self._run([(y.detach(), self.next) for y in ys], [])

    def recv_backward(self) -> list[Tensor] | None:
        if self.next is None:
            return None
        assert self.meta_out is not None
        gs = self._grads_of(self.meta_out)
        self._run([], [(g, self.next) for g in gs])
        return gs

    def send_backward(self, gs: list[Tensor]) -> None:
        if self.prev is None:
            return
        self._run([(g, self.prev) for g in gs], [])

    def send_forward_recv_backward(self, ys: list[Tensor]) -> list[Tensor] | None:
        if self.next is None:
            return None
        self._header(ys, False)
        assert self.meta_out is not None
        gs = self._grads_of(self.meta_out)
        self._run([(y.detach(), self.next) for y in ys], [(g, self.next) for g in gs])
        return gs

    def send_backward_recv_forward(self, gs: list[Tensor]) -> list[Tensor] | None:
        if self.prev is None:
            return None
        self._header(None, True)
        xs = self._empty_in()
        self._run([(g, self.prev) for g in gs], [(x, self.prev) for x in xs])
        return xs
