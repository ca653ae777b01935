"""``fw.amp``: mixed precision (Paddle's ``paddle.amp``).

- :func:`auto_cast` runs the ops on the allow list (matmul, linear, convolutions) in
  float16/bfloat16 and those on the deny list (exp, log, sums, softmax, norms) in float32;
- :class:`GradScaler` scales the loss, unscales the gradients, skips steps whose gradients
  hold inf/NaN and adapts the scale;
- :func:`decorate` (O2) casts parameters to the low dtype and keeps float32 master weights.

>>> import framework as fw
>>> net = fw.nn.Linear(4, 2)
>>> opt = fw.optimizer.AdamW(1e-3, parameters=net.parameters())
>>> scaler = fw.amp.GradScaler()
>>> with fw.amp.auto_cast(dtype="bfloat16"):
...     loss = net(fw.randn([8, 4])).astype("float32").mean()
>>> scaler.scale(loss).backward()
>>> scaler.step(opt); scaler.update(); opt.clear_grad()
"""

from __future__ import annotations

from .auto_cast import amp_guard, auto_cast, white_list
from .decorate import MasterWeightOptimizer, decorate
from .grad_scaler import AmpScaler, GradScaler

__all__ = [
    "AmpScaler",
    "GradScaler",
    "MasterWeightOptimizer",
    "amp_guard",
    "auto_cast",
    "decorate",
    "white_list",
]
