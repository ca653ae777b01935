"""Converters of ONNX's recurrent layers: ``RNN``, ``GRU`` and ``LSTM`` as composites.

Each direction is unrolled over the sequence (its length is the input's static dim): the
input projection of every step is one matmul before the loop, each step adds ``H @ R^T`` and
applies the gates as the ONNX operator spec writes them (``iofc`` gate order for LSTM, ``zrh``
for GRU, ``linear_before_reset``, peepholes, ``clip``, the ``activations`` named per direction,
``layout`` 0 or 1). ``sequence_lens`` may be computed at run time: a batch entry past its
length keeps its state and writes zeros to ``Y``, as ONNX Runtime does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import framework as fw
from framework.nn import functional as F

from ._registry import Node, converter

Act = Callable[[fw.Tensor], fw.Tensor]


def _const(x: fw.Tensor, v: float) -> fw.Tensor:
    return fw.full([], v, dtype=x.dtype, device=x.device)


def _activation(n: Node, name: str, alpha: float | None, beta: float | None) -> Act:
    """ONNX's activation functions for recurrent layers (``activations`` attribute)."""
    key = name.lower()
    if key == "sigmoid":
        return F.sigmoid
    if key == "tanh":
        return fw.tanh
    if key == "relu":
        return F.relu
    if key == "softsign":
        return F.softsign
    if key == "softplus":
        return lambda x: fw.log1p(fw.exp(x))
    if key == "leakyrelu":
        return lambda x: F.leaky_relu(x, 0.01 if alpha is None else alpha)
    if key == "elu":
        return lambda x: F.elu(x, 1.0 if alpha is None else alpha)
    if key == "thresholdedrelu":
        a = 1.0 if alpha is None else alpha
        return lambda x: fw.where(fw.greater_than(x, _const(x, a)), x, fw.zeros_like(x))
    if key == "affine":
        a, b = (1.0 if alpha is None else alpha), (0.0 if beta is None else beta)
        return lambda x: fw.add(fw.multiply(x, _const(x, a)), _const(x, b))
    if key == "scaledtanh":
        a, b = (1.0 if alpha is None else alpha), (1.0 if beta is None else beta)
        return lambda x: fw.multiply(_const(x, a), fw.tanh(fw.multiply(x, _const(x, b))))
    if key == "hardsigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda x: fw.clip(fw.add(fw.multiply(x, _const(x, a)), _const(x, b)), 0.0, 1.0)
    raise n.error(
        f"activation {name!r} is not one Oarlock imports",
        "use Sigmoid, Tanh, Relu, LeakyRelu, Elu, ThresholdedRelu, Affine, ScaledTanh, HardSigmoid, Softsign "
        "or Softplus",
    )


def _activations(n: Node, defaults: list[str], dirs: int) -> list[list[Act]]:
    """The activation functions of each direction: ``defaults`` unless the node names them."""
    k = len(defaults)
    names = list(n.attr("activations", [])) or defaults * dirs
    if len(names) == k and dirs == 2:
        names = names * 2
    if len(names) != k * dirs:
        raise n.error(f"it names {len(names)} activations; it takes {k} per direction ({k * dirs})")
    alphas, betas = list(n.attr("activation_alpha", [])), list(n.attr("activation_beta", []))
    fns = [
        _activation(n, a, alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None)
        for i, a in enumerate(names)
    ]
    return [fns[d * k : (d + 1) * k] for d in range(dirs)]


class _Spec:
    """What every recurrent op reads: the inputs in time-major layout, per direction."""

    def __init__(self, n: Node, gates: int, defaults: list[str]) -> None:
        self.n = n
        direction = n.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise n.error(f"direction {direction!r}; expected forward, reverse or bidirectional")
        self.dirs = 2 if direction == "bidirectional" else 1
        self.reverse = [False, True] if self.dirs == 2 else [direction == "reverse"]
        self.layout = int(n.attr("layout", 0))
        x = n.tensor(0)
        if self.layout:
            x = fw.transpose(x, [1, 0, 2])
        self.x = x
        self.steps, self.batch = int(x.shape[0]), x.shape[1]
        w, r = n.tensor(1), n.tensor(2)
        self.hidden = int(n.attr("hidden_size", r.shape[-1]))
        h = self.hidden
        if tuple(w.shape)[:2] != (self.dirs, gates * h) or tuple(r.shape) != (self.dirs, gates * h, h):
            raise n.error(
                f"W is {list(w.shape)} and R is {list(r.shape)}; expected [{self.dirs}, {gates * h}, input] and "
                f"[{self.dirs}, {gates * h}, {h}] ({gates} gates of hidden_size {h})"
            )
        self.w, self.r = w, r
        self.b = n.tensor(3) if n.has(3) else None
        self.lens = n.tensor(4, "int64") if n.has(4) else None
        self.clip = n.attr("clip")
        self.acts = _activations(n, defaults, self.dirs)

    def state(self, i: int) -> list[fw.Tensor]:
        """Initial state input ``i`` (``[dirs, batch, H]`` in time-major layout) per direction."""
        n = self.n
        if n.has(i):
            s = n.tensor(i)
            if self.layout:
                s = fw.transpose(s, [1, 0, 2])
            return [s[d] for d in range(self.dirs)]
        z = fw.zeros([self.batch, self.hidden], dtype=self.x.dtype, device=n.device)
        return [z] * self.dirs

    def projected(self, d: int) -> list[fw.Tensor]:
        """``X_t @ W^T + Wb + Rb`` for every step t of direction ``d`` (one matmul)."""
        xw = fw.matmul(self.x, fw.transpose(self.w[d], [1, 0]))
        if self.b is not None:
            wb, rb = fw.split(self.b[d], 2, axis=0)
            xw = fw.add(xw, fw.add(wb, rb))
        return [xw[t] for t in range(self.steps)]

    def clipped(self, x: fw.Tensor) -> fw.Tensor:
        return x if self.clip is None else fw.clip(x, -float(self.clip), float(self.clip))

    def run(self, d: int, step: Callable[..., list[fw.Tensor]], states: list[fw.Tensor]) -> tuple[Any, ...]:
        """Unroll direction ``d``: ``step(t, xw_t, *states) -> new states`` (the first is H).
        Returns Y of the direction ``[T, batch, H]`` and its final states."""
        xw = self.projected(d)
        order = range(self.steps - 1, -1, -1) if self.reverse[d] else range(self.steps)
        ys: list[fw.Tensor | None] = [None] * self.steps
        for t in order:
            new = step(xw[t], *states)
            if self.lens is not None:  # past its length, an entry keeps its state and writes 0
                live = fw.less_than(fw.full([], t, dtype="int64", device=self.n.device), self.lens)
                live = fw.reshape(live, [-1, 1])
                ys[t] = fw.where(live, new[0], fw.zeros_like(new[0]))
                new = [fw.where(live, a, b) for a, b in zip(new, states)]
            else:
                ys[t] = new[0]
            states = new
        return fw.stack(ys, axis=0), states

    def outputs(self, ys: list[fw.Tensor], finals: list[list[fw.Tensor]]) -> list[fw.Tensor]:
        """Y ``[T, dirs, batch, H]`` and each final state ``[dirs, batch, H]`` in the node's layout."""
        y = fw.stack(ys, axis=1)
        outs = [fw.stack([f[k] for f in finals], axis=0) for k in range(len(finals[0]))]
        if self.layout:
            y = fw.transpose(y, [2, 0, 1, 3])
            outs = [fw.transpose(o, [1, 0, 2]) for o in outs]
        return [y, *outs]


def _rt(r: fw.Tensor) -> fw.Tensor:
    return fw.transpose(r, [1, 0])


@converter("RNN")
def _rnn(n: Node) -> list[fw.Tensor]:
    s = _Spec(n, 1, ["Tanh"])
    ys, finals = [], []
    for d in range(s.dirs):
        (f,) = s.acts[d]
        rt = _rt(s.r[d])

        def step(xw: fw.Tensor, h: fw.Tensor) -> list[fw.Tensor]:
            return [f(s.clipped(fw.add(xw, fw.matmul(h, rt))))]  # noqa: B023

        y, st = s.run(d, step, s.state(5)[d : d + 1])
        ys.append(y)
        finals.append(st)
    return s.outputs(ys, finals)


@converter("GRU")
def _gru(n: Node) -> list[fw.Tensor]:
    s = _Spec(n, 3, ["Sigmoid", "Tanh"])
    before = bool(n.attr("linear_before_reset", 0))
    ys, finals = [], []
    h0 = s.state(5)
    for d in range(s.dirs):
        f, g = s.acts[d]
        rz, rr, rh = (_rt(m) for m in fw.split(s.r[d], 3, axis=0))
        rbh = fw.split(s.b[d], 6, axis=0)[5] if s.b is not None else None

        def step(xw: fw.Tensor, h: fw.Tensor) -> list[fw.Tensor]:
            xz, xr, xh = fw.split(xw, 3, axis=-1)
            z = f(s.clipped(fw.add(xz, fw.matmul(h, rz))))  # noqa: B023
            r = f(s.clipped(fw.add(xr, fw.matmul(h, rr))))  # noqa: B023
            if before:  # Rbh (in xh) moves inside the reset product
                hr = fw.matmul(h, rh)  # noqa: B023
                if rbh is not None:  # noqa: B023
                    xh, hr = fw.subtract(xh, rbh), fw.add(hr, rbh)  # noqa: B023
                hh = g(s.clipped(fw.add(xh, fw.multiply(r, hr))))  # noqa: B023
            else:
                hh = g(s.clipped(fw.add(xh, fw.matmul(fw.multiply(r, h), rh))))  # noqa: B023
            one = _const(z, 1.0)
            return [fw.add(fw.multiply(fw.subtract(one, z), hh), fw.multiply(z, h))]

        y, st = s.run(d, step, [h0[d]])
        ys.append(y)
        finals.append(st)
    return s.outputs(ys, finals)


@converter("LSTM")
def _lstm(n: Node) -> list[fw.Tensor]:
    s = _Spec(n, 4, ["Sigmoid", "Tanh", "Tanh"])
    if n.attr("input_forget", 0):
        raise n.error("input_forget=1 (coupled input and forget gates)", "Oarlock imports input_forget=0")
    p = n.tensor(7) if n.has(7) else None
    h0, c0 = s.state(5), s.state(6)
    ys, finals = [], []
    for d in range(s.dirs):
        f, g, hf = s.acts[d]
        rt = _rt(s.r[d])
        pi, po, pf = fw.split(p[d], 3, axis=0) if p is not None else (None, None, None)

        def step(xw: fw.Tensor, h: fw.Tensor, c: fw.Tensor) -> list[fw.Tensor]:
            gi, go, gf, gc = fw.split(fw.add(xw, fw.matmul(h, rt)), 4, axis=-1)  # noqa: B023
            if pi is not None:  # noqa: B023
                gi, gf = fw.add(gi, fw.multiply(pi, c)), fw.add(gf, fw.multiply(pf, c))  # noqa: B023
            i, fg, cc = f(s.clipped(gi)), f(s.clipped(gf)), g(s.clipped(gc))  # noqa: B023
            c2 = fw.add(fw.multiply(fg, c), fw.multiply(i, cc))
            if po is not None:  # noqa: B023
                go = fw.add(go, fw.multiply(po, c2))  # noqa: B023
            o = f(s.clipped(go))  # noqa: B023
            return [fw.multiply(o, hf(c2)), c2]  # noqa: B023

        y, st = s.run(d, step, [h0[d], c0[d]])
        ys.append(y)
        finals.append(st)
    return s.outputs(ys, finals)
