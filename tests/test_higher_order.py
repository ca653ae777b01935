"""Second-order gradients of every differentiable op, on every path its gradient can take.

For each op the conformance databases check a first-order gradient of (the primitives of
``conformance.opdb`` and the composites of the ``composites`` tier), a Hessian-vector product
taken by double backward (``grad(grad(sum(f(x)**2 * w), x, create_graph=True) . v, x)``) is
compared in float64 with central finite differences of the first-order gradient along ``v``:
``(g(x + h v) - g(x - h v)) / 2h``. A gradient whose graph lost its dependence on the inputs
(issue 40: ``_grad_by_decomposition`` under ``create_graph``) gives 0 or None there, where the
differences do not.

A composite's gradient can run in several ways, and each is checked:

* ``default``: whichever path the core picks on the CPU (a plugin's fused kernel, a generated
  kernel, or the decomposition);
* ``taped``: ``OARLOCK_COMPILE=0``: the decomposition on the tape, or one node with the op's own
  rule when it has one;
* ``fused``: the composite recorded as one node, as a plugin's fused kernel records it
  (:func:`_as_fused`), differentiated by its own rule or, without one, by its decomposition
  (``_grad_by_decomposition``);
* ``fused_decomposition``: that node differentiated by its decomposition although it has a
  rule (``testing.gradient_by_decomposition``).

Every gradient sample of every op on every path: about 420 cases, 10-25 s on two loaded cores.
``test_every_differentiable_op_is_checked`` fails for an op with a gradient rule that no case
reaches, unless its OpDef says why it is not differentiable (``no_grad``: integer or boolean
results, float8 storage, fake quantisation's straight-through estimator). Piecewise-constant
ops (floor, ceil, sign, floor_divide) are checked between their steps, times ``x``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import framework as fw
from conformance.opdb import OPDB
from conformance.tiers.composite_db import entries
from framework import testing
from framework._src import autograd
from framework._src.ops import base

H = 1e-5  # the finite-difference step along v (float64)
RTOL, ATOL = 1e-5, 1e-6


def _put(a: np.ndarray) -> fw.Tensor:
    return testing.put(a, "cpu")


def _floats(xs: list[np.ndarray], idx: tuple[int, ...]) -> list[int]:
    return [i for i in idx if i < len(xs) and xs[i].dtype.kind in "fc"]


def _squared(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(*xs) ** 2``: its Hessian has ``2 J^T diag(w) J`` beside ``2 f w . d2f``, so the
    rule's own backward (its dependence on the incoming gradient) is checked even for a
    linear op, whose Hessian is 0."""

    def sq(*ts: Any) -> Any:
        out = fn(*ts)
        return out * out

    return sq


def _first_grad(
    fn: Callable[..., Any], xs: list[np.ndarray], idx: list[int], w: np.ndarray
) -> list[np.ndarray]:
    ins = [_put(a) for a in xs]
    for i in idx:
        ins[i].stop_gradient = False
    out = fn(*ins)
    gs = fw.grad([out], [ins[i] for i in idx], grad_outputs=[_put(w)], allow_unused=True)
    return [np.zeros_like(xs[i]) if g is None else g.numpy() for i, g in zip(idx, gs)]


def _hvp(
    fn: Callable[..., Any], xs: list[np.ndarray], idx: list[int], w: np.ndarray, v: list[np.ndarray]
) -> list[np.ndarray]:
    ins = [_put(a) for a in xs]
    for i in idx:
        ins[i].stop_gradient = False
    out = fn(*ins)
    gs = fw.grad([out], [ins[i] for i in idx], grad_outputs=[_put(w)], create_graph=True, allow_unused=True)
    terms = [(g * _put(vi)).sum() for g, vi in zip(gs, v) if g is not None and not g.stop_gradient]
    if not terms:  # every first-order gradient is a constant: the Hessian is 0
        return [np.zeros_like(xs[i]) for i in idx]
    s = terms[0]
    for t in terms[1:]:
        s = s + t
    hs = fw.grad([s], [ins[i] for i in idx], allow_unused=True)
    return [np.zeros_like(xs[i]) if h is None else h.numpy() for i, h in zip(idx, hs)]


def check_second_order(
    what: str, fn: Callable[..., Any], xs: list[np.ndarray], grad_inputs: tuple[int, ...]
) -> None:
    """The Hessian-vector product of ``sum(fn(*xs) ** 2 * w)`` by double backward against
    central differences of its first-order gradient, in float64."""
    idx = _floats(xs, grad_inputs)
    assert idx, f"{what}: no float input to differentiate"
    fn = _squared(fn)
    rng = np.random.default_rng(7)
    with fw.no_grad():
        out = fn(*[_put(a) for a in xs])
    w = rng.standard_normal(out.shape).astype(out.numpy().dtype)
    v = [rng.standard_normal(xs[i].shape).astype(xs[i].dtype) for i in idx]
    got = _hvp(fn, xs, idx, w, v)

    def shifted(sign: float) -> list[np.ndarray]:
        ys = list(xs)
        for i, vi in zip(idx, v):
            ys[i] = xs[i] + sign * H * vi
        return _first_grad(fn, ys, idx, w)

    up, down = shifted(1.0), shifted(-1.0)
    for i, g, a, b in zip(idx, got, up, down):
        want = (a - b) / (2 * H)
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
        testing.assert_close(
            np.asarray(g, np.complex128 if np.iscomplexobj(g) else np.float64),
            want,
            RTOL,
            ATOL * scale,
            f"{what}: Hessian-vector product (double backward) for input {i} against finite "
            f"differences of the first-order gradient",
        )


# -- the cases ---------------------------------------------------------------------------------
def _primitive_cases() -> Iterator[Any]:
    for name, info in sorted(OPDB.items()):
        if not info.grad_inputs or info.grad_samples is None:
            continue
        d = np.dtype("float64")
        if "float64" not in info.dtypes:
            continue
        for k, sample in enumerate(info.grad_samples(d, np.random.default_rng(0))):
            yield pytest.param(name, sample, id=f"{name}-{k}")


def _composite_paths(op_name: str) -> list[str]:
    op = base.OPS.get(op_name)
    if op is None or op.kind != "composite":
        return ["default"]  # a function of primitives (mean, var, losses): one path
    paths = ["default", "taped"]
    if op.infer is not None:
        paths.append("fused")
        if op.grad is not base._grad_by_decomposition:
            paths.append("fused_decomposition")
    return paths


def _composite_cases() -> Iterator[Any]:
    for info in entries():
        if not info.grad:
            continue
        for path in _composite_paths(info.op):
            yield pytest.param(info, path, id=f"{info.name}-{path}")


def _spd(a: Any) -> Any:
    n = a.shape[-1]
    return fw.matmul(a, a.swapaxes(-1, -2)) + fw.eye(n, dtype=a.dtype) * float(n)


def _sym(a: Any) -> Any:
    return (a + a.swapaxes(-1, -2)) * 0.5


def _other_device() -> str | None:
    for name in ("opencl:0",):
        try:
            fw.zeros([1], dtype="float64", device=name)
            return name
        except Exception:  # noqa: BLE001 — no such device here, or no float64 on it
            continue
    return None


def _extra_cases() -> list[
    tuple[str, Callable[..., Any], Callable[[np.random.Generator], list[np.ndarray]], tuple[int, ...]]
]:
    """Differentiable ops outside the conformance databases (host linear algebra, FFTs,
    complex views, reshape, transfers): (op, fn through the public API, float64 inputs,
    inputs to differentiate). Each ``fn`` takes smooth, well-conditioned inputs."""
    L = fw.linalg
    mat = lambda r: [r.uniform(-1, 1, (3, 3)) + 2.0 * np.eye(3)]  # noqa: E731
    tri = lambda r: [np.tril(r.uniform(-1, 1, (3, 3))) + 2.0 * np.eye(3), r.uniform(-1, 1, (3, 2))]  # noqa: E731

    def eigh(a: Any) -> Any:
        lam, v = L.eigh(_sym(a))
        return fw.matmul(v * fw.exp(lam * 0.5).unsqueeze(-2), v.swapaxes(-1, -2))  # sign-free

    def svd(a: Any) -> Any:
        u, s, vh = L.svd(a, full_matrices=False)
        return fw.matmul(u * (s**3).unsqueeze(-2), vh)  # each singular pair's sign cancels

    def qr(a: Any) -> Any:
        q, r = L.qr(a)
        return fw.concat([q.flatten(), r.flatten()])

    def off_steps(r: np.random.Generator) -> list[np.ndarray]:  # 0.2 or more from an integer
        return [r.integers(-3, 3, (3, 4)) + r.uniform(0.2, 0.8, (3, 4))]

    def off_quotients(r: np.random.Generator) -> list[np.ndarray]:  # x / y 0.2 or more from one
        y = r.uniform(1.0, 2.0, (3, 4))
        return [y * (r.integers(-3, 3, (3, 4)) + r.uniform(0.2, 0.8, (3, 4))), y]

    def c2c(x: Any) -> Any:
        return fw.as_real(fw.fft.fft(fw.as_complex(fw.sin(x))))

    def moved(x: Any) -> Any:
        dev = _other_device()
        if dev is None:
            pytest.skip("no second device to move a tensor to")
        return fw.tanh(fw.sin(x).to(dev)).to("cpu")

    return [
        ("inverse", lambda a: L.inv(a), mat, (0,)),
        ("det", lambda a: L.det(a), mat, (0,)),
        ("solve", lambda a, b: L.solve(a, b), lambda r: mat(r) + [r.uniform(-1, 1, (3, 2))], (0, 1)),
        ("triangular_solve", lambda a, b: L.triangular_solve(a, b, upper=False), tri, (0, 1)),
        ("cholesky", lambda a: L.cholesky(_spd(a)), mat, (0,)),
        ("eigh", eigh, mat, (0,)),
        ("svd", svd, lambda r: [r.uniform(-1, 1, (4, 3)) + np.eye(4, 3) * np.array([3.0, 2.0, 1.0])], (0,)),
        ("qr", qr, lambda r: [r.uniform(-1, 1, (4, 3)) + np.eye(4, 3) * 2.0], (0,)),
        ("fft_c2c", c2c, lambda r: [r.uniform(-1, 1, (3, 4, 2))], (0,)),
        ("as_complex", c2c, lambda r: [r.uniform(-1, 1, (5, 2))], (0,)),
        ("as_real", lambda x: fw.as_real(fw.fft.rfft(fw.sin(x))), lambda r: [r.uniform(-1, 1, (3, 6))], (0,)),
        (
            "fft_r2c",
            lambda x: fw.as_real(fw.fft.rfft(fw.tanh(x))),
            lambda r: [r.uniform(-1, 1, (2, 7))],
            (0,),
        ),
        (
            "fft_c2r",
            lambda x: fw.fft.irfft(fw.as_complex(fw.sin(x)), n=6),
            lambda r: [r.uniform(-1, 1, (3, 4, 2))],
            (0,),
        ),
        ("reshape", lambda x: fw.sin(fw.sin(x).reshape([4, 3])), lambda r: [r.uniform(-2, 2, (3, 4))], (0,)),
        ("to_device", moved, lambda r: [r.uniform(-2, 2, (3, 4))], (0,)),
        # piecewise constant: a zero gradient, taken here between the steps, times x
        ("floor", lambda x: fw.floor(x) * x, off_steps, (0,)),
        ("ceil", lambda x: fw.ceil(x) * x, off_steps, (0,)),
        ("sign", lambda x: fw.sign(x) * x, off_steps, (0,)),
        ("floor_divide", lambda x, y: fw.floor_divide(x, y) * x, off_quotients, (0, 1)),
    ]


def _ops_in_graph(t: Any) -> set[str]:
    seen: set[int] = set()
    names: set[str] = set()
    stack = [t._node] if t._node is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen or node.inputs is None:
            continue
        seen.add(id(node))
        names.add(node.op.name)
        stack.extend(i._node for i in node.inputs if i._node is not None)
    return names


@contextlib.contextmanager
def _as_fused(op_name: str) -> Iterator[None]:
    """Inside, the composite ``op_name`` runs as a plugin's fused kernel would: its value (here
    its decomposition, untaped) recorded on the tape as one node of the op, so its gradient is
    the op's rule, or ``_grad_by_decomposition`` for an op without one."""

    def fused(op: Any, ins: list[Any], attrs: dict[str, Any]) -> list[Any] | None:
        if op.name != op_name:
            return None
        with autograd.no_grad():
            out = op.decomposition(*ins, **attrs)
        outs = [out] if isinstance(out, fw.Tensor) else list(out)
        if autograd.is_grad_enabled() and any(not t.stop_gradient for t in ins):
            autograd.record(op, list(ins), attrs, outs)
        return outs

    base.GENERATORS.insert(0, fused)
    try:
        yield
    finally:
        base.GENERATORS.remove(fused)


@contextlib.contextmanager
def _path(op_name: str, path: str) -> Iterator[None]:
    if path == "default":
        yield
    elif path == "taped":
        stack = contextlib.ExitStack()
        stack.enter_context(testing.kernels_removed(op_name))  # a plugin's fused kernel
        old = os.environ.get("OARLOCK_COMPILE")
        os.environ["OARLOCK_COMPILE"] = "0"
        try:
            with stack:
                yield
        finally:
            if old is None:
                del os.environ["OARLOCK_COMPILE"]
            else:
                os.environ["OARLOCK_COMPILE"] = old
    elif path == "fused":
        with testing.kernels_removed(op_name), _as_fused(op_name):
            yield
    else:
        with testing.kernels_removed(op_name), _as_fused(op_name), testing.gradient_by_decomposition(op_name):
            yield


def _path_count(op_name: str, path: str) -> int:
    stats = testing.op_path_stats().get(f"{op_name}@cpu", {})
    return stats.get(
        {"fused": "generated", "fused_decomposition": "generated", "taped": "decomposed"}.get(path, ""), 0
    )


# -- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name,sample", list(_primitive_cases()))
def test_primitive_second_order(name: str, sample: Any) -> None:
    info = OPDB[name]
    attrs = dict(sample.attrs)
    if "dtype" in attrs and np.dtype(attrs["dtype"]).kind == "f":
        attrs["dtype"] = np.dtype(np.float64)  # a cast to float64: no rounding noise
    check_second_order(
        f"{name} ({sample.label})",
        lambda *ts: testing.run_op(name, ts, attrs)[0],
        list(sample.ins),
        info.grad_inputs,
    )


@pytest.mark.parametrize("info,path", list(_composite_cases()))
def test_composite_second_order(info: Any, path: str) -> None:
    xs = [np.asarray(a) for a in (info.grad_inputs or info.inputs)(np.random.default_rng(0))]
    before = _path_count(info.op, path)
    with _path(info.op, path):
        check_second_order(f"{info.name} [{path}]", info.run, xs, info.grad)
    if path != "default":  # the run went the way it is named for
        assert _path_count(info.op, path) > before, f"{info.name}: the run never took the {path} path"


@pytest.mark.parametrize("case", _extra_cases(), ids=[c[0] for c in _extra_cases()])
def test_other_op_second_order(case: Any) -> None:
    name, fn, inputs, grad_inputs = case
    xs = inputs(np.random.default_rng(0))
    ins = [_put(a) for a in xs]
    for i in grad_inputs:
        ins[i].stop_gradient = False
    assert name in _ops_in_graph(fn(*ins)), f"the case for '{name}' does not run it"
    check_second_order(name, fn, xs, grad_inputs)


def test_every_differentiable_op_is_checked() -> None:
    """A new differentiable op (a gradient rule, no ``no_grad`` reason in its OpDef) fails here
    until a case above reaches it."""
    covered = (
        {n for n, i in OPDB.items() if i.grad_inputs}
        | {e.op for e in entries() if e.grad}
        | {c[0] for c in _extra_cases()}
    )
    missing = sorted(
        n for n, op in base.OPS.items() if op.grad is not None and not op.no_grad and n not in covered
    )
    assert not missing, f"differentiable ops no second-order case reaches: {missing}"


def test_grad_by_decomposition_keeps_the_input_dependence() -> None:
    """The mechanism itself: gelu recorded as one node differentiated by its decomposition gives
    d2/dx2 gelu(x) = (2 - x^2) phi(x), the closed form, not 0."""
    x0 = np.linspace(-2.0, 2.0, 9)
    with testing.kernels_removed("gelu"), _as_fused("gelu"):
        x = _put(x0)
        x.stop_gradient = False
        (g,) = fw.grad(fw.nn.functional.gelu(x).sum(), x, create_graph=True)
        (gg,) = fw.grad(g.sum(), x)
    phi = np.exp(-0.5 * x0 * x0) / np.sqrt(2 * np.pi)
    testing.assert_close(gg.numpy(), (2 - x0 * x0) * phi, 1e-10, 1e-12, "d2/dx2 gelu")


@pytest.mark.parametrize("path", ["default", "fused"])
def test_third_order_through_a_decomposition(path: str) -> None:
    """d3/dx3 gelu(x) = (x^3 - 4x) phi(x): the backward recorded under ``create_graph`` is
    itself differentiable twice more."""
    x0 = np.linspace(-2.0, 2.0, 9)
    with _path("gelu", path):
        x = _put(x0)
        x.stop_gradient = False
        (g,) = fw.grad(fw.nn.functional.gelu(x).sum(), x, create_graph=True)
        (gg,) = fw.grad(g.sum(), x, create_graph=True)
        (ggg,) = fw.grad(gg.sum(), x)
    phi = np.exp(-0.5 * x0 * x0) / np.sqrt(2 * np.pi)
    testing.assert_close(ggg.numpy(), (x0**3 - 4 * x0) * phi, 1e-10, 1e-12, "d3/dx3 gelu")


@pytest.mark.parametrize("path", ["default", "taped", "fused"])
def test_an_input_passed_twice(path: str) -> None:
    """``linear(x, x)``: one tensor at two places of a node differentiated by its
    decomposition gets the whole of its gradient once (not twice), at every order."""
    x0 = np.random.default_rng(3).uniform(-1, 1, (4, 4))
    before = _path_count("linear", path)
    with _path("linear", path):
        check_second_order("linear(x, x)", lambda x: fw.nn.functional.linear(x, x), [x0], (0,))
        x = _put(x0)
        x.stop_gradient = False
        (g,) = fw.grad(fw.nn.functional.linear(x, x).sum(), x)
    ones = np.ones((4, 4))
    testing.assert_close(g.numpy(), ones @ x0.T + x0.T @ ones, 1e-12, 1e-12, "d/dx sum(x @ x)")
    if path != "default":
        assert _path_count("linear", path) > before


@pytest.mark.parametrize("name", ["gelu", "softplus", "layer_norm", "rms_norm", "softmax", "silu"])
def test_float32_generated_kernels_second_order(name: str) -> None:
    """float32, where the compiler generates the composites' kernels on the CPU: the
    Hessian-vector product of the generated path against the float64 one of the taped path."""
    info = next(e for e in entries() if e.name == name)
    xs = [np.asarray(a) for a in (info.grad_inputs or info.inputs)(np.random.default_rng(0))]
    idx = _floats(xs, info.grad)
    rng = np.random.default_rng(7)
    with fw.no_grad():
        shape = info.run(*[_put(a) for a in xs]).shape
    w = rng.standard_normal(shape)
    v = [rng.standard_normal(xs[i].shape) for i in idx]
    f32 = [a.astype(np.float32) if a.dtype == np.float64 else a for a in xs]
    before = _path_count(info.op, "fused")  # the generated count
    got = _hvp(info.run, f32, idx, w.astype(np.float32), [a.astype(np.float32) for a in v])
    assert _path_count(info.op, "fused") > before, f"{name} did not run as a generated kernel"
    with _path(info.op, "taped"):
        want = _hvp(info.run, xs, idx, w, v)
    for i, g, r in zip(idx, got, want):
        tol = testing.gradient_tolerance("float32", 4.0)
        scale = max(1.0, float(np.abs(r).max()))
        testing.assert_close(
            g.astype(np.float64),
            r,
            tol.rtol,
            tol.atol * scale,
            f"{name} float32 Hessian-vector product, input {i}",
        )
