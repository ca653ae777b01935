"""The fusion pass never makes two groups that read each other (issue 40): a group must stay
convex with every other group counted as one node, since a fused op runs whole. The minimal
case below made groups A and B with A reading B and B reading A, though no single op path
left either group and came back; an imported ONNX ResNet's gradient program did the same."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort

import framework as fw
from framework.ir.passes import fusion

from .onnx_models import resnet


def _two_groups(x, y):  # type: ignore[no-untyped-def]
    a1 = fw.exp(x)  # group A: rows of 16
    a1s = a1.sum(axis=-1, keepdim=True)
    b1 = y * 2.0  # group B: rows of 4 (cannot share A's kernel)
    b2 = b1 * a1s  # B reads A
    b1s = b1.sum(axis=-1, keepdim=True)
    a3 = a1 * b1s  # A would read B: a cycle between the two fused ops
    return a3, b2


def _groups_read_each_other(program) -> bool:  # type: ignore[no-untyped-def]
    """Whether some fused op depends on itself through the program (a cycle of fused ops)."""
    ops = program.block.ops
    before: dict = {}
    for op in ops:
        deps = set()
        for v in op.operands:
            d = v.defining_op
            if d is not None:
                deps |= before.get(d, set()) | {d}
        before[op] = deps
    return any(op in before[op] for op in ops)


def test_two_groups_that_would_read_each_other(dev: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 16)).astype("float32")
    y = rng.standard_normal((6, 4)).astype("float32")
    sf = fw.jit.to_static(_two_groups)
    with fw.no_grad():
        a3, b2 = sf(fw.to_tensor(x, device=dev), fw.to_tensor(y, device=dev))
    prog = sf.programs[-1].executor.program
    fw.ir.verify(prog)
    assert not _groups_read_each_other(prog)
    assert sum(op.name.startswith("fused.") for op in prog.block.ops) >= 2, prog
    e = np.exp(x.astype(np.float64))
    np.testing.assert_allclose(a3.numpy(), e * (2 * y).sum(-1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(b2.numpy(), 2 * y * e.sum(-1, keepdims=True), rtol=1e-5)
    # the two reductions are computed once each (no op is put in two groups)
    seen = [
        m for op in prog.block.ops if op.name in fusion.GROUPS for m in fusion.GROUPS[op.name].body.block.ops
    ]
    assert sum(m.name == "op.sum" for m in seen) <= 2


def _ort(model, x):  # type: ignore[no-untyped-def]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def test_onnx_resnet_gradients_under_the_compiler(dev: str) -> None:
    """The four-stage ResNet's backward made a fused-op cycle ('[fusion] a group made a
    cycle'); now its output equals onnxruntime's and its gradients the unfused program's."""
    model = resnet(channels=(16, 32, 64, 128))
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    out, grads = {}, {}
    for compiled in (False, True):
        m = fw.onnx.load(model, device=dev, compile=compiled)
        y = m(fw.to_tensor(x, device=dev))
        (y * y).mean().backward()
        out[compiled] = y.numpy()
        grads[compiled] = {n: p.grad.numpy() for n, p in m.named_parameters() if not p.stop_gradient}
    np.testing.assert_allclose(out[True], _ort(model, x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[False], _ort(model, x), rtol=1e-4, atol=1e-5)
    assert grads[True].keys() == grads[False].keys() and len(grads[True]) > 20
    for n, g in grads[False].items():
        assert np.abs(g).max() > 0, n
        np.testing.assert_allclose(grads[True][n], g, rtol=1e-4, atol=1e-6, err_msg=n)
