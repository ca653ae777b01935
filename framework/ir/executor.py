"""The executor: a program lowered once to a flat instruction list and run with no shape
inference, dispatch or autograd on the way.

The program is first lowered to the kernel dialect for the device, once per executor
(:func:`framework.ir.passes.lower.lower`): every op's kernel is chosen there (the dispatcher's
kernel table, ``(op, device type, dtype)``), an op the device has no kernel for becomes a
``kernel.eager`` step (it runs through the dispatcher as in eager mode: decomposition, CPU
fallback with its warning) and broadcasting for kernels that do not broadcast is made explicit
(``kernel.expand``). The instruction list is built from that program once per binding of its
symbols (one per batch size seen); for every op it

- reads the kernel from the op's ``kernel.name`` (no choice is made here);
- pads element-wise operands to the result's rank (a view) for the kernels that broadcast;
- assigns every value a slot. Intermediates get buffers planned by liveness: a buffer is
  handed back to a pool after the last instruction that reads it and reused by a later value
  of the same byte size, so the plan holds the peak of live values, not their sum. Program
  outputs get fresh buffers on every run (the caller keeps them); inputs, parameters (read
  from the Layer's tensors on every run, so an optimizer step is seen) and eager-step results
  are patched into the instructions that read them.

A run is then ``for fn, ctx, outs, ins, attrs in instrs: fn(ctx, outs, ins, **attrs)``.

The instruction list, its buffers and its run are :mod:`.memory_plan`; in-place outputs,
:mod:`.in_place`; the steps that are not kernel calls, :mod:`.steps`; a run replayed as one
captured graph, :mod:`.graph_replay`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from adapter_api import OpArgumentError

from .._src import device as _dev
from .._src import env
from .._src.tensor import Tensor
from .core import IRError, Program, SymDim, TensorType
from .graph_replay import _offers_graphs, _worthwhile
from .memory_plan import _Plan
from .passes.lower import StaleKernelError, lower
from .verify import verify

#: graph replay where the runtime offers it (``OARLOCK_GRAPHS=0`` turns it off everywhere)
GRAPHS_DEFAULT = env.flag("OARLOCK_GRAPHS", True)


class Builds:
    """Kernel builds running in the background (``framework.compiler`` counts them): batches
    ``in_flight`` and how many have ``landed``. A plan made while some were in flight binds
    stand-ins for the kernels not built yet (their ops unfused, a plugin's numpy path); its
    executor plans again at its first call after one more batch has landed, binding the built
    kernels' fast paths."""

    in_flight = 0
    landed = 0


BUILDS = Builds()


@contextlib.contextmanager
def _shallow(program: Program, doing: str) -> Iterator[None]:
    """Turn Python's RecursionError (regions nested hundreds deep) into an :class:`IRError`."""
    try:
        yield
    except RecursionError:
        raise IRError(
            f"[executor] @{program.name} nests control flow (cf.cond / cf.while regions) deeper than Python can "
            f"follow while {doing}; flatten the program (fewer nested conds or loops)"
        ) from None


class Executor:
    """Runs a :class:`Program` on one device.

    ``params`` maps each ``builtin.parameter`` name to its tensor (shared, not copied);
    ``constants`` maps each named ``builtin.constant`` to a tensor or array.

    ``inplace`` maps output indices to input indices: output ``k`` is written into the
    storage of input ``inplace[k]`` (of the same type) and the run returns that input tensor
    for it, as an in-place update (``p.add_(...)``) would; the caller's storage stays where
    it is, so a repeated call binds nothing anew (an optimizer's update of its parameters and
    states). The kernel that computes the output writes straight into the input when nothing
    reads the input after it and it reads the input element-wise only (the same index it
    writes); otherwise the output is computed into a buffer of the plan and copied into the
    input at the end of the run. An input given for an in-place output must not share storage
    with another input."""

    def __init__(
        self,
        program: Program,
        device: Any,
        params: Mapping[str, Tensor] | None = None,
        constants: Mapping[str, Any] | None = None,
        graphs: bool | None = None,
        inplace: Mapping[int, int] | None = None,
    ) -> None:
        self.device = _dev.parse(device) if not isinstance(device, _dev.Device) else device
        with _shallow(program, "verifying and lowering it"):
            verify(program)
            #: the program in the kernel dialect for this device: every kernel chosen once, here
            self.lowered = lower(program, self.device)
        #: replay a whole run as one captured graph where the device runtime offers capture
        #: (None: the ``OARLOCK_GRAPHS`` default, on); False runs the instruction list always
        self.graphs = GRAPHS_DEFAULT if graphs is None else bool(graphs)
        self.program = program
        self.params = dict(params or {})
        self.constants = dict(constants or {})
        self.symbols = program.symbols()
        self._plans: dict[tuple[int, ...], _Plan] = {}
        #: the inputs' (shape, dtype, device) of the last call and its plan: a call with the
        #: same metadata skips the checks and the binding
        self._last: tuple[tuple[tuple[Any, ...], ...], _Plan] | None = None
        #: ``BUILDS.landed`` when a plan was made while builds were in flight (None: none were)
        self._landed: int | None = None
        self.inplace = self._check_inplace(program, dict(inplace or {}))
        self.inplace_inputs = frozenset(self.inplace.values())
        for op in program.block.ops:
            if op.name == "builtin.parameter" and op.attrs["name"] not in self.params:
                raise IRError(
                    f"[executor] @{program.name} reads parameter '{op.attrs['name']}', which was not given; "
                    f"pass every parameter of the program (got {sorted(self.params)[:5]})"
                )

    @staticmethod
    def _check_inplace(program: Program, inplace: dict[int, int]) -> dict[int, int]:
        n_in, outs = len(program.inputs), program.outputs
        where = f"[executor] inplace of @{program.name}"
        for k, j in inplace.items():
            if not (isinstance(k, int) and 0 <= k < len(outs)):
                raise OpArgumentError(
                    f"{where}: output index {k!r} out of range; the program has {len(outs)} outputs"
                )
            if not (isinstance(j, int) and 0 <= j < n_in):
                raise OpArgumentError(
                    f"{where}: input index {j!r} out of range; the program has {n_in} inputs"
                )
            if outs[k].type != program.inputs[j].type:
                raise OpArgumentError(
                    f"{where}: output {k} is {outs[k].type}, input {j} is {program.inputs[j].type}; an "
                    f"output written in place needs an input of the same type"
                )
        if len(set(inplace.values())) != len(inplace):
            raise OpArgumentError(f"{where}: an input is given for two outputs ({inplace}); one each")
        if len({outs[k] for k in inplace}) != len(inplace):
            raise OpArgumentError(f"{where}: two outputs given in place are the same value; one each")
        return inplace

    def bind(self, inputs: Sequence[Tensor]) -> dict[str, int]:
        """The value of each symbol, read from the inputs' shapes; checks every static dim."""
        p = self.program
        if len(inputs) != len(p.inputs):
            raise OpArgumentError(f"[executor] @{p.name} takes {len(p.inputs)} inputs, got {len(inputs)}")
        binding: dict[str, int] = {}
        for k, (t, v) in enumerate(zip(inputs, p.inputs)):
            ty = v.type
            assert isinstance(ty, TensorType)
            if not isinstance(t, Tensor):
                raise OpArgumentError(
                    f"[executor] input {k} of @{p.name} must be a Tensor, got {type(t).__name__}"
                )
            if len(t.shape) != ty.rank or t.dtype != ty.dtype:
                raise OpArgumentError(
                    f"[executor] input {k} of @{p.name} is {t.dtype}{list(t.shape)}, the program "
                    f"takes {ty.dtype}{[str(d) for d in ty.shape]}"
                )
            if t.device != self.device:
                raise OpArgumentError(
                    f"[executor] input {k} of @{p.name} is on {t.device}, the program runs on "
                    f"{self.device}; move it with x.to('{self.device}')"
                )
            for j, (d, n) in enumerate(zip(ty.shape, t.shape)):
                if isinstance(d, SymDim) and d.is_symbol:
                    name = d.terms[0][0]
                    if binding.setdefault(name, n) != n:
                        raise OpArgumentError(
                            f"[executor] dim {j} of input {k} of @{p.name} is {n}, but symbol "
                            f"{name} is {binding[name]} from an earlier dim; they must be equal"
                        )
        for k, (t, v) in enumerate(zip(inputs, p.inputs)):
            for j, (d, n) in enumerate(zip(v.type.shape, t.shape)):
                want = d.evaluate(binding) if isinstance(d, SymDim) else d
                if want != -1 and want != n:
                    raise OpArgumentError(
                        f"[executor] dim {j} of input {k} of @{p.name} is {n}, expected {d} = {want}"
                    )
        return binding

    def plan(self, binding: Mapping[str, int]) -> _Plan:
        key = tuple(binding[s] for s in self.symbols)
        pl = self._plans.get(key)
        if pl is None:
            with _shallow(self.program, "planning it"):
                pl = self._plans[key] = self._new_plan(binding)
        return pl

    def _new_plan(self, binding: Mapping[str, int]) -> _Plan:
        if BUILDS.in_flight and self._landed is None:
            self._landed = BUILDS.landed
        try:
            return _Plan(self, dict(binding))
        except StaleKernelError:
            if self.lowered is self.program:  # given lowered: the caller lowers again
                raise
            # the plugins changed since the lowering (a kernel registered, a source
            # added): lower again, once, and drop the plans built from the old choice
            self.lowered = lower(self.program, self.device)
            self._plans.clear()
            self._last = None
            return _Plan(self, dict(binding))

    def __call__(self, *inputs: Tensor) -> list[Tensor]:
        if self._landed is not None and self._landed != BUILDS.landed:
            self._plans.clear()  # kernels built in the background since: plan again
            self._last = self._landed = None
        last = self._last
        if last is not None and len(inputs) == len(last[0]):
            for t, (shape, dtype, dev) in zip(inputs, last[0]):  # the same metadata as last call
                if (
                    not isinstance(t, Tensor)
                    or t.shape != shape
                    or t.dtype is not dtype
                    or t.device is not dev
                ):
                    break
            else:
                return last[1].run(inputs)
        binding = self.bind(inputs)
        pl = self._plans.get(tuple(binding[s] for s in self.symbols)) or self.plan(binding)
        self._last = (tuple((t.shape, t.dtype, t.device) for t in inputs), pl)
        with _shallow(self.program, "running it"):
            return pl.run(inputs)

    def memory_stats(self, binding: Mapping[str, int]) -> dict[str, Any]:
        """Bytes of intermediates: ``planned`` (the buffers the plan holds after reuse),
        ``unplanned`` (what one buffer per value would take) and ``held`` (what the plan
        keeps allocated between runs as the allocator counts it: planned buffers rounded,
        plus a captured graph's input and output buffers); ``graph`` says whether runs are
        replayed as one captured graph and, if not, ``graph_off`` says why."""
        pl = self.plan(binding)
        return {
            "planned": pl.planned_bytes,
            "unplanned": pl.unplanned_bytes,
            "held": pl.held_bytes(),
            "instructions": len(pl.instrs),
            "graph": pl.graph is not None,
            "graph_off": pl.graph_failed,
            "graph_offered": self.graphs and _offers_graphs(pl.ctx.runtime, self.device.index),
        }

    def held_bytes(self) -> int:
        """Bytes every plan of this executor keeps allocated between runs."""
        return sum(pl.held_bytes() for pl in self._plans.values())

    def use_graphs(self, plan: _Plan) -> bool:
        """Whether ``plan`` is to be captured: graphs on, no eager step inside, and the
        device runtime offers capture (:meth:`adapter_api.DeviceRuntime.supports_graphs`)."""
        if not self.graphs:
            return False
        if plan.has_eager:
            plan.graph_failed = "the program has eager steps (ops without a kernel on the device)"
            return False
        rt, idx = plan.ctx.runtime, self.device.index
        if not _offers_graphs(rt, idx):
            plan.graph_failed = "the device runtime offers no graph capture"
            return False
        return _worthwhile(plan, plan.copy_bytes())
