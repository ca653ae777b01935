"""Recurrent layers (Paddle names and weight layout): SimpleRNNCell, LSTMCell, GRUCell and the
multi-layer, optionally bidirectional SimpleRNN, LSTM and GRU built from them.

A step is two ``matmul`` (input and hidden projections) and elementwise gates; the sequence
is a Python loop over time, so the gradient is autograd through the steps. Weights are
``weight_ih`` (gates*hidden, input) and ``weight_hh`` (gates*hidden, hidden), gates in Paddle's
order (LSTM: i, f, g, o; GRU: r, z, c), all drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)).

>>> import framework as fw
>>> _ = fw.seed(0)
>>> lstm = fw.nn.LSTM(4, 8, num_layers=2)
>>> y, (h, c) = lstm(fw.randn([3, 5, 4]))
>>> y.shape, h.shape
((3, 5, 8), (2, 3, 8))
"""

from __future__ import annotations

import math
from typing import Any

from adapter_api import OpArgumentError

from .._src.ops import creation as _C
from .._src.ops import math as M
from .._src.ops import shape as S
from .._src.ops.indexing import take_along_axis
from .._src.tensor import Tensor, to_tensor
from . import functional as F
from . import initializer as I
from .layer import Layer


def _sigmoid(x: Tensor) -> Tensor:
    return F.sigmoid(x)


class _Cell(Layer):
    _gates = 1

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        for what, v in (("input_size", input_size), ("hidden_size", hidden_size)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise OpArgumentError(f"[{type(self).__name__}] {what} must be a positive int, got {v!r}")
        self.input_size, self.hidden_size = input_size, hidden_size
        k = 1.0 / math.sqrt(hidden_size)
        g = self._gates * hidden_size
        u = I.Uniform(-k, k)
        self.weight_ih = self.create_parameter((g, input_size), weight_ih_attr, default_initializer=u)
        self.weight_hh = self.create_parameter((g, hidden_size), weight_hh_attr, default_initializer=u)
        self.bias_ih = self.create_parameter((g,), bias_ih_attr, is_bias=True, default_initializer=u)
        self.bias_hh = self.create_parameter((g,), bias_hh_attr, is_bias=True, default_initializer=u)

    def _proj(self, x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
        y = M.matmul(x, w, transpose_y=True)
        return y + b if b is not None else y

    def _zeros(self, x: Tensor) -> Tensor:
        return _C.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)

    @property
    def state_shape(self) -> Any:
        return (self.hidden_size,)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


class SimpleRNNCell(_Cell):
    """h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh), act tanh or relu."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        activation: str = "tanh",
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        name: str | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, weight_ih_attr, weight_hh_attr, bias_ih_attr, bias_hh_attr)
        if activation not in ("tanh", "relu"):
            raise OpArgumentError(f"[SimpleRNNCell] activation must be 'tanh' or 'relu', got {activation!r}")
        self.activation = activation

    def forward(self, inputs: Tensor, states: Tensor | None = None) -> tuple[Tensor, Tensor]:
        h = self._zeros(inputs) if states is None else states
        z = self._proj(inputs, self.weight_ih, self.bias_ih) + self._proj(h, self.weight_hh, self.bias_hh)
        h = M.tanh(z) if self.activation == "tanh" else F.relu(z)
        return h, h


class LSTMCell(_Cell):
    """i, f, g, o = split(x W_ih^T + b_ih + h W_hh^T + b_hh); c' = sig(f) c + sig(i) tanh(g);
    h' = sig(o) tanh(c'). ``states`` is (h, c); returns (h', (h', c'))."""

    _gates = 4

    def forward(
        self, inputs: Tensor, states: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        h, c = (self._zeros(inputs), self._zeros(inputs)) if states is None else states
        gates = self._proj(inputs, self.weight_ih, self.bias_ih) + self._proj(h, self.weight_hh, self.bias_hh)
        i, f, g, o = S.split(gates, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * M.tanh(g)
        h = _sigmoid(o) * M.tanh(c)
        return h, (h, c)

    @property
    def state_shape(self) -> Any:
        return ((self.hidden_size,), (self.hidden_size,))


class GRUCell(_Cell):
    """r = sig(x_r + h_r); z = sig(x_z + h_z); c = tanh(x_c + r h_c); h' = (h - c) z + c, with
    x_* and h_* the input and hidden projections (Paddle's form)."""

    _gates = 3

    def forward(self, inputs: Tensor, states: Tensor | None = None) -> tuple[Tensor, Tensor]:
        h = self._zeros(inputs) if states is None else states
        xr, xz, xc = S.split(self._proj(inputs, self.weight_ih, self.bias_ih), 3, axis=-1)
        hr, hz, hc = S.split(self._proj(h, self.weight_hh, self.bias_hh), 3, axis=-1)
        r = _sigmoid(xr + hr)
        z = _sigmoid(xz + hz)
        c = M.tanh(xc + r * hc)
        h = (h - c) * z + c
        return h, h


def _reverse_within(x: Tensor, lengths: list[int] | None) -> Tensor:
    """Reverse the time axis (1) of (B, T, ...) x, each sequence only within its length."""
    b, t = x.shape[:2]
    if lengths is None:
        return S.flip(x, [1])
    idx = [[(n - 1 - i) if i < n else i for i in range(t)] for n in lengths]
    ix = to_tensor(idx, dtype="int64", device=x.device).reshape((b, t) + (1,) * (x.ndim - 2))
    return take_along_axis(x, ix.expand(x.shape), 1)


class _CellHolder(Layer):
    """One layer of an RNN's cells under Paddle's names: ``cell``, or ``cell_fw`` and ``cell_bw``."""

    def __init__(self, *cells: _Cell) -> None:
        super().__init__()
        if len(cells) == 1:
            self.cell = cells[0]
        else:
            self.cell_fw, self.cell_bw = cells


class _RNNBase(Layer):
    _cell: type[_Cell] = SimpleRNNCell
    _lstm = False

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        direction: str = "forward",
        time_major: bool = False,
        dropout: float = 0.0,
        weight_ih_attr: Any = None,
        weight_hh_attr: Any = None,
        bias_ih_attr: Any = None,
        bias_hh_attr: Any = None,
        name: str | None = None,
        **cell_kw: Any,
    ) -> None:
        super().__init__()
        name_ = type(self).__name__
        if direction not in ("forward", "bidirect", "bidirectional"):
            raise OpArgumentError(
                f"[{name_}] direction must be 'forward', 'bidirect' or 'bidirectional', got {direction!r}"
            )
        if not isinstance(num_layers, int) or num_layers < 1:
            raise OpArgumentError(f"[{name_}] num_layers must be a positive int, got {num_layers!r}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.num_directions = 1 if direction == "forward" else 2
        self.time_major, self.dropout = time_major, dropout
        cells = []
        for layer in range(num_layers):
            in_size = input_size if layer == 0 else hidden_size * self.num_directions
            for _ in range(self.num_directions):
                cells.append(
                    self._cell(
                        in_size,
                        hidden_size,
                        weight_ih_attr=weight_ih_attr,
                        weight_hh_attr=weight_hh_attr,
                        bias_ih_attr=bias_ih_attr,
                        bias_hh_attr=bias_hh_attr,
                        **cell_kw,
                    )
                )
        # Paddle's names: each cell's parameters on the RNN as weight_ih_l{layer}[_reverse]..., and
        # the cells as sublayers "{layer}.cell" ("{layer}.cell_fw"/".cell_bw" when bidirectional);
        # the state dict lists both names for one parameter, as Paddle's does.
        self.cells = cells
        for layer in range(num_layers):
            pair = cells[layer * self.num_directions : (layer + 1) * self.num_directions]
            for cell, suffix in zip(pair, ("", "_reverse")):
                for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    if getattr(cell, n) is not None:
                        self.add_parameter(f"{n}_l{layer}{suffix}", getattr(cell, n))
            self.add_sublayer(str(layer), _CellHolder(*pair))

    def _run(self, cell: _Cell, x: Tensor, state: Any, mask: Tensor | None) -> tuple[Tensor, Any]:
        outs = []
        for t in range(x.shape[1]):
            y, new = cell(x[:, t], state)
            if mask is not None:
                m = mask[:, t : t + 1]
                y = y * m
                new = (
                    tuple(M.where(m > 0, a, b) for a, b in zip(new, state))
                    if self._lstm
                    else M.where(m > 0, new, state)
                )
            state = new
            outs.append(y)
        return S.stack(outs, axis=1), state

    def forward(
        self, inputs: Tensor, initial_states: Any = None, sequence_length: Tensor | None = None
    ) -> tuple[Tensor, Any]:
        x = inputs.transpose((1, 0, 2)) if self.time_major else inputs
        name_ = type(self).__name__
        if x.ndim != 3 or x.shape[2] != self.input_size:
            raise OpArgumentError(
                f"[{name_}] inputs must be (batch, time, {self.input_size}) ({'time, batch' if self.time_major else 'batch, time'} first), got shape {inputs.shape}"
            )
        b, t = x.shape[:2]
        lengths = None
        mask = None
        if sequence_length is not None:
            lengths = [
                int(v)
                for v in (
                    sequence_length.tolist() if isinstance(sequence_length, Tensor) else sequence_length
                )
            ]
            if len(lengths) != b or min(lengths) < 1 or max(lengths) > t:
                raise OpArgumentError(
                    f"[{name_}] sequence_length must hold {b} lengths in [1, {t}], got {lengths}"
                )
            mask = to_tensor(
                [[1.0 if i < n else 0.0 for i in range(t)] for n in lengths], dtype=x.dtype, device=x.device
            )
        nstates = self.num_layers * self.num_directions
        if initial_states is None:
            zero = _C.zeros((nstates, b, self.hidden_size), dtype=x.dtype, device=x.device)
            initial_states = (zero, zero) if self._lstm else zero
        init = [
            tuple(s[i] for s in initial_states) if self._lstm else initial_states[i] for i in range(nstates)
        ]
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(self.num_directions):
                k = layer * self.num_directions + d
                xi = x if d == 0 else _reverse_within(x, lengths)
                y, st = self._run(self.cells[k], xi, init[k], mask)
                outs.append(y if d == 0 else _reverse_within(y, lengths))
                finals.append(st)
            x = outs[0] if len(outs) == 1 else S.concat(outs, axis=-1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout)
        y = x.transpose((1, 0, 2)) if self.time_major else x
        if self._lstm:
            return y, (S.stack([h for h, _ in finals], axis=0), S.stack([c for _, c in finals], axis=0))
        return y, S.stack(finals, axis=0)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, directions={self.num_directions}"


class SimpleRNN(_RNNBase):
    """Elman RNN over (batch, time, input) (``time_major``: time first); returns
    (outputs (B, T, D*H), final h (L*D, B, H)). ``activation`` tanh or relu."""

    _cell = SimpleRNNCell

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        direction: str = "forward",
        time_major: bool = False,
        dropout: float = 0.0,
        activation: str = "tanh",
        **kw: Any,
    ) -> None:
        super().__init__(
            input_size, hidden_size, num_layers, direction, time_major, dropout, activation=activation, **kw
        )


class LSTM(_RNNBase):
    """LSTM over (batch, time, input); returns (outputs (B, T, D*H), (h, c) each (L*D, B, H))."""

    _cell = LSTMCell
    _lstm = True


class GRU(_RNNBase):
    """GRU over (batch, time, input); returns (outputs (B, T, D*H), final h (L*D, B, H))."""

    _cell = GRUCell
