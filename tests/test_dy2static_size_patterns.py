"""to_static with ``None`` dims where the code does more than polynomials of the sizes:
``arange`` of a dynamic length (positions), Python branches on a size (guards: one program per
outcome), floor division and modulo of a size, a size squared.

Each case counts the programs traced and compares with eager (NumPy or the same code run
eagerly) at several sizes; the training cases compare gradients too."""

import warnings

import numpy as np
import pytest

import framework as fw
from framework.static import InputSpec


def _run(sf, eager, shapes, *, device="cpu", tol=1e-6, rng=None):
    """``sf`` equals ``eager`` at every list of input shapes, with no 'specialised' warning."""
    rng = rng or np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=r"\[to_static\]")  # a specialisation, a variant bound
        for shp in shapes:
            arrs = [rng.standard_normal(s).astype(np.float32) for s in shp]
            with fw.no_grad():
                want = eager(*[fw.to_tensor(a, device=device) for a in arrs])
                got = sf(*[fw.to_tensor(a, device=device) for a in arrs])
            want = want if isinstance(want, (tuple, list)) else [want]
            got = got if isinstance(got, (tuple, list)) else [got]
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert list(g.shape) == list(w.shape), shp
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)


def _same_training(step, sf, params, shapes, *, device="cpu", seed=0):
    """The loss and the gradients of ``params`` from ``sf`` equal the eager ``step``'s at
    every input shape; returns the gradients of the last shape (eager's)."""
    rng = np.random.default_rng(seed)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        got = []
        for fn in (step, sf):
            for p in params:
                p.clear_gradient()
            loss = fn(fw.to_tensor(x, device=device))
            loss.backward()
            got.append([loss.numpy()] + [p.grad.numpy() for p in params])
        for g, w in zip(got[1], got[0]):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return got[0][1:]


# -- arange of a dynamic length ------------------------------------------------------------
def test_positions_by_arange_of_the_length(device):
    def f(x):
        t = x.shape[1]
        pos = fw.arange(t, dtype="float32", device=x.device)  # [t]
        shifted = fw.arange(3, t + 3, device=x.device)  # int64, a start of 3
        return x + pos.unsqueeze(-1) * 0.5, shifted * 2, fw.arange(t, device=x.device).unsqueeze(0) + 1

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, None, 4])])
    _run(sf, f, [[(b, t, 4)] for b, t in [(2, 3), (1, 7), (3, 5), (2, 16)]], device=device)
    assert len(sf.programs) == 1
    text = str(sf.programs[0].program)
    assert "op.arange" in text and "s0_1" in text
    # against NumPy, not only against the same code run eagerly
    x = np.zeros((1, 6, 4), np.float32)
    with fw.no_grad():
        a, s, u = sf(fw.to_tensor(x, device=device))
    np.testing.assert_array_equal(a.numpy()[0, :, 0], np.arange(6) * 0.5)
    np.testing.assert_array_equal(s.numpy(), (np.arange(3, 9) * 2))
    np.testing.assert_array_equal(u.numpy(), np.arange(6)[None] + 1)


def test_rotary_embedding_with_positions_from_arange(device):
    """Rotary position embedding computed from ``arange(t)`` inside the traced function."""
    d = 8
    inv = 1.0 / (10000 ** (np.arange(0, d, 2, dtype=np.float32) / d))

    def rotary(x):  # x: [b, t, d]
        t = x.shape[1]
        freqs = fw.arange(t, dtype="float32", device=x.device).unsqueeze(1) * fw.to_tensor(
            inv, device=x.device
        ).unsqueeze(0)
        emb = fw.concat([freqs, freqs], axis=-1)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return x * fw.cos(emb) + fw.concat([-x2, x1], axis=-1) * fw.sin(emb)

    sf = fw.jit.to_static(rotary, input_spec=[InputSpec([None, None, d])])
    _run(sf, rotary, [[(b, t, d)] for b, t in [(2, 3), (1, 9), (3, 5)]], device=device, tol=1e-5)
    assert len(sf.programs) == 1
    x = np.random.default_rng(1).standard_normal((2, 5, d)).astype(np.float32)
    ang = np.arange(5, dtype=np.float32)[:, None] * inv[None]
    emb = np.concatenate([ang, ang], -1)
    want = x * np.cos(emb) + np.concatenate([-x[..., 4:], x[..., :4]], -1) * np.sin(emb)
    with fw.no_grad():
        got = sf(fw.to_tensor(x, device=device)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_training_step_with_learned_positions_from_arange(device):
    """GPT-style learned positions: ``pos_emb(arange(t))``; one program, gradients as eager."""
    fw.seed(0)
    emb = fw.nn.Embedding(32, 4).to(device)
    lin = fw.nn.Linear(4, 4).to(device)

    def loss_of(x):
        h = x + emb(fw.arange(x.shape[1], device=x.device))
        return (lin(h) ** 2).mean()

    sf = fw.jit.to_static(loss_of, input_spec=[InputSpec([None, None, 4])])
    for b, t in [(2, 3), (1, 7), (3, 5)]:
        g_emb, _ = _same_training(loss_of, sf, [emb.weight, lin.weight], [(b, t, 4)], device=device)
        assert np.abs(g_emb[t:]).max() == 0 and np.abs(g_emb[:t]).max() > 0
    assert len(sf.programs) == 1


# -- branches on a size: guards ------------------------------------------------------------
def test_branch_on_a_size_one_program_per_outcome(device):
    def f(x):
        if x.shape[0] > 4:
            y = x * 2.0
        else:
            y = x - 1.0
        return y

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 3])])
    sizes = [6, 2, 9, 3, 1, 30, 4, 5]
    _run(sf, f, [[(n, 3)] for n in sizes], device=device)
    assert len(sf.programs) == 2  # one per outcome of `n > 4`, not one per size
    guards = sorted(str(g) for cp in sf.programs for g in cp.size_guards)
    assert "s0_0 > 4 is False" in guards[0] and "s0_0 > 4 is True" in guards[1]
    with fw.no_grad():  # and the right branch at each size, against NumPy
        for n in sizes:
            got = sf(fw.ones([n, 3], device=device)).numpy()
            np.testing.assert_array_equal(got, np.full((n, 3), 2.0 if n > 4 else 0.0, np.float32))


def test_branches_on_sizes_in_a_layer_forward_and_nested_conditions(device):
    """A branch on the length (a decode step of one token vs a prompt) and one on the parity of
    the batch: each combination of outcomes is one program."""

    class Block(fw.nn.Layer):
        def __init__(self):
            super().__init__()
            self.proj = fw.nn.Linear(4, 4)

        def forward(self, x):
            b, t = x.shape[0], x.shape[1]
            h = self.proj(x)
            if t == 1:  # one token: no mixing over the length
                out = h
            else:
                out = h + h.mean(axis=1, keepdim=True)
            if b % 2 == 0:
                out = out * 0.5
            return out

    fw.seed(0)
    m = Block().to(device)
    eager = m.forward
    sm = fw.jit.to_static(m, input_spec=[InputSpec([None, None, 4])])
    shapes = [(2, 5), (4, 3), (3, 5), (5, 2), (2, 1), (6, 1), (3, 1), (8, 9)]
    _run(sm.forward, eager, [[(b, t, 4)] for b, t in shapes], device=device, tol=1e-5)
    # outcomes: (t == 1, b even) -> 4 programs for 8 shapes
    assert len(sm.forward.programs) == 4


def test_a_decode_step_of_one_token_keeps_the_batch_dynamic(device):
    """``if t > 1`` false only at t = 1: no probe of several sizes takes it, so t is fixed at
    1 and the batch stays dynamic (two programs for every batch size and length)."""

    def f(x):
        if x.shape[1] > 1:
            x = x + x.mean(1, keepdim=True)
        return x * 2.0

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, None, 4])])
    shapes = [(2, 5), (3, 1), (4, 7), (5, 1), (2, 9), (7, 1)]
    _run(sf, f, [[(b, t, 4)] for b, t in shapes], device=device)
    assert len(sf.programs) == 2
    (decode,) = [cp for cp in sf.programs if not cp.size_guards]
    assert (
        str(decode.program.inputs[0].type.shape[0]) == "s0_0" and decode.program.inputs[0].type.shape[1] == 1
    )


def test_a_whole_shape_compared_is_a_guard(device):
    """``x.shape == [4, 3]`` compares the dims inside Size: still the user's branch."""

    def f(x):
        if x.shape == [4, 3]:
            return x * 10.0
        return x + 1.0

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 3])])
    _run(sf, f, [[(n, 3)] for n in (5, 4, 2, 4, 7)], device=device)
    with fw.no_grad():
        np.testing.assert_array_equal(sf(fw.ones([4, 3], device=device)).numpy(), np.full((4, 3), 10.0))
        np.testing.assert_array_equal(sf(fw.ones([6, 3], device=device)).numpy(), np.full((6, 3), 2.0))
    assert len(sf.programs) == 2


def test_a_size_returned_as_a_python_value_is_the_calls():
    def f(x):
        b = x.shape[0]
        return {"y": x * 2.0, "n": b, "half": b // 2, "area": b * x.shape[1]}

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, None])])
    with fw.no_grad():
        for b, t in [(2, 3), (5, 4), (8, 1)]:
            got = sf(fw.ones([b, t]))
            assert (got["n"], got["half"], got["area"]) == (b, b // 2, b * t)
            assert type(got["n"]) is int and got["y"].shape == [b, t]
    assert len(sf.programs) == 1


def test_training_through_a_branch_on_a_size():
    fw.seed(0)
    lin = fw.nn.Linear(3, 2)

    def step(x):
        h = lin(x)
        if x.shape[0] >= 4:
            h = fw.tanh(h)
        return (h**2).sum()

    sf = fw.jit.to_static(step, input_spec=[InputSpec([None, 3])])
    _same_training(step, sf, [lin.weight, lin.bias], [(n, 3) for n in (5, 2, 8, 3)], seed=3)
    assert len(sf.programs) == 2


def test_an_equality_on_a_size_fixes_that_size():
    """``if n == 5``: no probe of several sizes takes the branch, so that one size gets its
    own program; every other size shares the first."""

    def f(x):
        return x * 2.0 if x.shape[0] == 5 else x + 1.0

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 2])])
    with fw.no_grad():
        for n in (3, 5, 7, 5, 1):
            want = np.full((n, 2), 2.0)  # ones * 2 and ones + 1 alike: check the shapes too
            got = sf(fw.ones([n, 2]) * (1.5 if n == 5 else 1.0)).numpy()
            np.testing.assert_array_equal(got, want * (1.5 if n == 5 else 1.0))
    assert len(sf.programs) == 2
    fixed = [cp for cp in sf.programs if not cp.size_guards]
    assert len(fixed) == 1 and fixed[0].program.inputs[0].type.shape == (5, 2)


def _two_branches_on(first, second):
    """A function whose result says which way it branched on ``first(x).shape[0]`` (> 5)
    and on ``second(x).shape[0]`` (> 8)."""

    def f(x):
        y, z = first(x), second(x)
        return (2.0 if y.shape[0] > 5 else 3.0) + (5.0 if z.shape[0] > 8 else 7.0) + x * 0.0

    return f


@pytest.mark.parametrize(
    "first, second",
    [
        (lambda x: x.unsqueeze(0)[0], lambda x: (x.unsqueeze(0) + fw.zeros([3]))[0]),  # a view; a broadcast
        (lambda x: fw.zeros([x.shape[0], 3]) + x, lambda x: x.unsqueeze(0).expand([2, x.shape[0], 3])[0]),
    ],
    ids=["view-broadcast", "zeros-expand"],
)
def test_a_branch_on_the_size_of_a_view_a_broadcast_or_a_made_tensor_is_guarded(first, second):
    """The dynamic dim of a view, a broadcast, ``zeros([n, 3])`` and ``expand([2, n, 3])``
    must stay symbolic while traced, or a branch on it is no guard (a batch of 3 took the
    branch of 11): shapes were shared by value with eager tensors of the probe sizes (kept
    here), broadcasts cached, and ``int(d)`` made the others plain. Nothing of the trace
    leaks into shapes made eagerly afterwards."""
    keep = [fw.zeros([1, n, 3]) + fw.zeros([3]) for n in range(1, 48)]
    f = _two_branches_on(first, second)
    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 3])])
    for n in (7, 3, 9, 2, 12):
        x = fw.ones([n, 3])
        got = sf(x).numpy()
        np.testing.assert_array_equal(got, f(x).numpy())
        assert got[0, 0] == (2.0 if n > 5 else 3.0) + (5.0 if n > 8 else 7.0)
    assert len(sf.programs) == 3
    later = [fw.zeros([1, n, 3]) + fw.zeros([3]) for n in (11, 13, 22)] + [fw.zeros([n, 3]) for n in (11, 13)]
    assert all(type(d) is int for t in later + keep for d in t.shape)


def test_a_branch_the_validation_sizes_take_the_other_way_keeps_one_program_per_outcome():
    """``n * n`` needs two validation traces (sizes 30 and 36), which take ``n > 25`` the
    other way from the probes: probes on the call's side of it are found (it was traced per
    size, with a warning)."""

    def f(x):
        n = x.shape[0]
        return (fw.zeros([n * n, 3]) + x.sum()) * (2.0 if n > 25 else 3.0)

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 3])])
    _run(sf, f, [[(n, 3)] for n in (4, 5, 7, 30, 31)])
    assert len(sf.programs) == 2


# -- a size squared; parity ----------------------------------------------------------------
def test_a_size_squared_in_one_program(device):
    def f(x):  # x: [n, n]
        n = x.shape[0]
        flat = x.reshape([1, n * n])
        pad = fw.zeros([n * n + 2 * n, 2], device=x.device) + x.sum()
        return flat * 2.0, pad, fw.arange(n**2, dtype="float32", device=x.device)

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, None])])
    _run(sf, f, [[(n, n)] for n in (3, 4, 6, 1)], device=device, tol=1e-5)
    assert len(sf.programs) == 1
    text = str(sf.programs[0].program)
    assert "s0_0*s0_0" in text
    from framework import ir

    assert ir.print_program(ir.parse_program(text)) == text  # the text form reads back
    with fw.no_grad():
        a, p, r = sf(fw.ones([5, 5], device=device))
    assert a.shape == [1, 25] and p.shape == [35, 2]
    np.testing.assert_array_equal(r.numpy(), np.arange(25, dtype=np.float32))


def test_a_value_that_depends_on_parity_is_never_fitted_wrong():
    """``2 * (b // 2)`` equals ``b - 1`` at every odd size: the checking trace's sizes are
    even, so it is refused as a polynomial (specialised, with a warning) instead of being
    fitted as ``b - 1`` and wrong for even sizes."""

    def f(x):
        b = x.shape[0]
        return fw.zeros([2 * (b // 2), 3], device=x.device) + x.sum()

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 3])])
    with fw.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (3, 4, 7, 8):
            out = sf(fw.ones([n, 3]))
            assert out.shape == [2 * (n // 2), 3]
            np.testing.assert_array_equal(out.numpy(), np.full((2 * (n // 2), 3), 3.0 * n))


# -- floor division and remainder of a size -------------------------------------------------
def _halves(x):
    b = x.shape[0]
    h = b // 2
    first, rest = fw.split(x, [h, b - h])
    return fw.zeros([h, 3], device=x.device) + x.sum(), x[:h] * 2.0, rest + 1.0, x[: b % 3]


def test_floor_division_and_remainder_of_a_size_in_one_program(device):
    sf = fw.jit.to_static(_halves, input_spec=[InputSpec([None, 3])])
    _run(sf, _halves, [[(n, 3)] for n in (3, 4, 7, 8, 2, 11)], device=device)
    assert len(sf.programs) == 1
    text = str(sf.programs[0].program)
    assert "s0_0__div2" in text and "s0_0-s0_0__div2" in text and "s0_0__mod3" in text
    from framework import ir

    assert ir.print_program(ir.parse_program(text)) == text
    x = np.arange(24, dtype=np.float32).reshape(8, 3)  # against NumPy at an even size
    with fw.no_grad():
        z, a, r, f = sf(fw.to_tensor(x, device=device))
    np.testing.assert_array_equal(a.numpy(), x[:4] * 2)
    np.testing.assert_array_equal(r.numpy(), x[4:] + 1)
    assert z.shape == [4, 3] and f.shape == [2, 3]  # 8 % 3


def _view_rows(x):
    b = x.shape[0]
    return (
        x[None][:, : b % 3 + 10] * 2.0,
        x.reshape([1, -1])[:, : (b % 3) * 5] + 1.0,
        x.flatten()[b % 3 - 3 :],
    )


def test_a_clamped_slice_of_a_view_along_a_remainder(device):
    """Slices of views whose bound follows ``b % 3`` and is clamped at some sizes (``b % 3 +
    10`` rows of a batch of 11 are 11; at a batch of 1, ``(b % 3) * 5`` entries of a view of
    3 gave 5): one program per side of each clamp, every size as NumPy."""
    sf = fw.jit.to_static(_view_rows, input_spec=[InputSpec([None, 3])])
    sizes = (11, 12, 13, 14, 7, 8, 3, 2, 1, 0)
    _run(sf, _view_rows, [[(n, 3)] for n in sizes], device=device)
    for n in sizes:
        a = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        with fw.no_grad():
            got = sf(fw.to_tensor(a, device=device))
        np.testing.assert_array_equal(got[0].numpy(), a[None][:, : n % 3 + 10] * 2.0)
        np.testing.assert_array_equal(got[1].numpy(), a.reshape(1, -1)[:, : (n % 3) * 5] + 1.0)
        np.testing.assert_array_equal(got[2].numpy(), a.reshape(-1)[n % 3 - 3 :])
    assert len(sf.programs) < len(sizes)


def test_training_step_on_the_two_halves_of_a_batch(device):
    """A contrastive-style loss between the first and second half of the batch."""
    fw.seed(0)
    lin = fw.nn.Linear(3, 4).to(device)

    def step(x):
        h = x.shape[0] // 2
        z = lin(x)
        return ((z[:h] - z[h : 2 * h]) ** 2).mean()

    sf = fw.jit.to_static(step, input_spec=[InputSpec([None, 3])])
    _same_training(step, sf, [lin.weight, lin.bias], [(n, 3) for n in (4, 7, 10, 5)], device=device, seed=4)
    assert len(sf.programs) == 1


def test_a_mean_over_half_the_batch_counts_the_right_elements(device):
    """The mean's ``1 / (16 * t * (b // 2))``: a product of a derived symbol and another
    symbol (the odd probes alone would fit ``8 * t * (b - 1)``, wrong at every even size)."""

    def f(x):
        h = x.shape[0] // 2
        return (x[:h] - x[h : 2 * h]).pow(2).mean()

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, None, 16])])
    _run(sf, f, [[(b, t, 16)] for b, t in [(4, 3), (6, 3), (9, 5), (2, 1)]], device=device, tol=1e-5)
    assert len(sf.programs) == 1
    assert "16*s0_0__div2*s0_1" in str(sf.programs[0].program)


def test_floor_division_exports_to_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")

    def f(x):
        h = x.shape[0] // 2
        return x[:h] * 2.0 + x[h : 2 * h]

    sf = fw.jit.to_static(f, input_spec=[InputSpec([None, 3], "float32", "x")])
    fw.onnx.export(sf, str(tmp_path / "f"))
    sess = ort.InferenceSession(str(tmp_path / "f.onnx"), providers=["CPUExecutionProvider"])
    for n in (4, 7, 2):
        a = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        (got,) = sess.run(None, {"x": a})
        np.testing.assert_allclose(got, a[: n // 2] * 2 + a[n // 2 : 2 * (n // 2)], rtol=1e-6)


class _Halves(fw.nn.Layer):
    def forward(self, x):
        return fw.zeros([x.shape[0] // 2, 3]) + x.sum(), fw.zeros([x.shape[0] % 3 + 1, 3]) + 1.0


# -- Paddle-format export ------------------------------------------------------------------
class _Positions(fw.nn.Layer):
    def __init__(self):
        super().__init__()
        self.emb = fw.nn.Embedding(40, 4)

    def forward(self, x):
        t = x.shape[1]
        return x + self.emb(fw.arange(t)) + fw.arange(2, t + 2, dtype="float32").unsqueeze(-1) * 0.5


class _Square(fw.nn.Layer):
    def forward(self, x):
        n = x.shape[0]
        return x.reshape([1, n * n]) * 2.0


@pytest.mark.parametrize(
    "make, spec, shapes",
    [
        (_Positions, [None, None, 4], [(2, 3, 4), (1, 7, 4), (3, 12, 4)]),
        (_Square, [None, None], [(3, 3), (5, 5), (1, 1)]),
        (_Halves, [None, 3], [(4, 3), (7, 3), (2, 3)]),
    ],
    ids=["arange", "square", "floor_division"],
)
def test_paddle_format_export_of_dynamic_sizes(make, spec, shapes, tmp_path):
    """The files serve every size: Oarlock's loader, and real Paddle's jit.load and Predictor
    where Paddle is installed (``roundtrip_many``)."""
    from tests.test_paddle_format_export import rand, roundtrip_many

    fw.seed(0)
    roundtrip_many(make(), [InputSpec(spec, "float32", "x")], [[rand(*s)] for s in shapes], tmp_path)


def test_paddle_format_export_refuses_a_slice_at_a_derived_size_naming_the_op(tmp_path):
    from framework.jit.paddle_format.export import PaddleExportError

    class FirstHalf(fw.nn.Layer):
        def forward(self, x):
            return x[: x.shape[0] // 2] * 2.0

    with pytest.raises(PaddleExportError, match=r"'op.slice'.*s0_0__div2"):
        fw.jit.save(FirstHalf(), str(tmp_path / "m"), [InputSpec([None, 3], "float32", "x")], format="paddle")
