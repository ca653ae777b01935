"""Passes over programs (framework.ir.passes): each pass and each rewrite rule on small
programs — op counts before and after, and values through the executor against numpy and
against the program before the pass — plus the pass manager (levels, statistics, IR printing,
verification) and to_static's pipeline on the MLP and a Llama block against eager."""

from __future__ import annotations

import io
import types

import numpy as np
import pytest

import framework as fw
from framework import ir
from framework.ir import passes
from framework.ir.passes import Attr, Pat, Res, Rule, Var

from .conftest import assert_close


def _prog(body: str, args: str, outs: str, device: str = "cpu") -> ir.Program:
    text = f"module @f({args}) -> ({outs}) {{\n{body}\n}}\n"
    return ir.parse_program(text.replace("DEV", device))


def _t(shape: str, dtype: str = "float32") -> str:
    return f"tensor<[{shape}], {dtype}, DEV>"


def _run(
    p: ir.Program, *arrays: np.ndarray, device: str = "cpu", constants: dict | None = None
) -> list[np.ndarray]:
    ins = [fw.to_tensor(a, dtype=a.dtype, device=device) for a in arrays]
    return [o.numpy() for o in ir.Executor(p, device, {}, constants or {})(*ins)]


def _names(p: ir.Program) -> list[str]:
    return [op.name for op in p.block.ops]


def _opt(p: ir.Program, names: str, constants: dict | None = None, **ctx) -> passes.PassContext:
    c = passes.PassContext(dict(constants or {}), **ctx)
    passes.PassManager.named(names, verify_each=True).run(p, c)
    return c


X = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)


# -- DCE, CSE, folding ----------------------------------------------------------------------------
def test_dce_removes_dead_chains_and_unread_constants():
    p = _prog(
        f"""  %1 = op.exp(%0) : {_t("2, 3")}
  %2 = op.neg(%1) : {_t("2, 3")}
  %3 = builtin.constant {{name = "big"}} : {_t("2, 3")}
  %4 = op.add(%0, %3) : {_t("2, 3")}
  %5 = op.sin(%0) : {_t("2, 3")}
  builtin.return(%5)""",
        f"%0: {_t('2, 3')}",
        _t("2, 3"),
    )
    assert len(p.block.ops) == 6
    ctx = _opt(p, "dce", {"big": np.ones((2, 3), np.float32)})
    assert _names(p) == ["op.sin", "builtin.return"]
    assert ctx.constants == {}
    np.testing.assert_array_equal(_run(p, X)[0], np.sin(X))


def test_cse_merges_equal_ops_commutative_ones_too_but_never_random_draws():
    p = _prog(
        f"""  %1 = op.exp(%0) : {_t("2, 3")}
  %2 = op.exp(%0) : {_t("2, 3")}
  %3 = op.add(%1, %0) : {_t("2, 3")}
  %4 = op.add(%0, %2) : {_t("2, 3")}
  %5 = op.mul(%3, %4) : {_t("2, 3")}
  %6 = op.philox_uniform {{dtype = float32, offset = 0, seed = 7, shape = (2, 3)}} : {_t("2, 3")}
  %7 = op.philox_uniform {{dtype = float32, offset = 0, seed = 7, shape = (2, 3)}} : {_t("2, 3")}
  %8 = op.add(%6, %7) : {_t("2, 3")}
  %9 = op.add(%5, %8) : {_t("2, 3")}
  builtin.return(%9)""",
        f"%0: {_t('2, 3')}",
        _t("2, 3"),
    )
    before = _run(p, X)[0]
    _opt(p, "cse")
    names = _names(p)
    assert names.count("op.exp") == 1 and names.count("op.philox_uniform") == 2
    assert names.count("op.add") == 3  # exp+x merged with x+exp; the draws' sum and the total stay
    np.testing.assert_array_equal(_run(p, X)[0], before)
    e = np.exp(X) + X
    assert_close(before - (e * e), _run(p, X)[0] - (e * e))


def test_cse_keeps_constants_that_differ_only_in_the_sign_of_zero_or_in_type():
    p = _prog(
        f"""  %1 = builtin.constant {{value = -0.0}} : {_t("1, 1")}
  %2 = builtin.constant {{value = 0.0}} : {_t("1, 1")}
  %3 = builtin.constant {{value = -0.0}} : {_t("1, 1")}
  %4 = op.mul(%0, %1) : {_t("2, 3")}
  %5 = op.mul(%0, %2) : {_t("2, 3")}
  %6 = op.mul(%0, %3) : {_t("2, 3")}
  %7 = op.add(%4, %5) : {_t("2, 3")}
  %8 = op.sub(%7, %6) : {_t("2, 3")}
  builtin.return(%8)""",
        f"%0: {_t('2, 3')}",
        _t("2, 3"),
    )
    x = -np.abs(X)
    before = _run(p, x)[0]
    _opt(p, "cse")
    assert _names(p).count("builtin.constant") == 2 and _names(p).count("op.mul") == 2
    got = _run(p, x)[0]
    np.testing.assert_array_equal(np.signbit(got), np.signbit(before))
    np.testing.assert_array_equal(got, before)


def test_fold_runs_constant_ops_once_inline_scalars_and_named_tensors():
    c = np.arange(6, dtype=np.float32).reshape(2, 3)
    p = _prog(
        f"""  %1 = builtin.constant {{value = 2.0}} : {_t("1, 1")}
  %2 = builtin.constant {{value = 3.0}} : {_t("1, 1")}
  %3 = op.mul(%1, %2) : {_t("1, 1")}
  %4 = builtin.constant {{name = "c"}} : {_t("2, 3")}
  %5 = op.exp(%4) : {_t("2, 3")}
  %6 = op.add(%5, %3) : {_t("2, 3")}
  %7 = op.add(%0, %6) : {_t("2, 3")}
  builtin.return(%7)""",
        f"%0: {_t('2, 3')}",
        _t("2, 3"),
    )
    before = _run(p, X, constants={"c": c})[0]
    ctx = _opt(p, "fold,dce", {"c": c})
    assert _names(p) == ["builtin.constant", "op.add", "builtin.return"]
    (folded,) = ctx.constants.values()
    assert_close(folded.numpy(), np.exp(c) + 6.0)
    got = _run(p, X, constants=ctx.constants)[0]
    np.testing.assert_array_equal(got, before)
    assert_close(got, X + np.exp(c) + 6.0)


def test_fold_keeps_random_draws_symbolic_shapes_and_large_fills():
    p = _prog(
        f"""  %1 = op.philox_uniform {{dtype = float32, offset = 0, seed = 1, shape = (2, 3)}} : {_t("2, 3")}
  %2 = op.full {{dtype = float32, shape = (2, 3), value = 1.5}} : {_t("2, 3")}
  %3 = op.full {{dtype = float32, shape = (1, 1), value = 1.5}} : {_t("1, 1")}
  %4 = op.add(%1, %2) : {_t("2, 3")}
  %5 = op.add(%4, %3) : {_t("2, 3")}
  %6 = op.add(%0, %5) : {_t("s0, 2, 3")}
  builtin.return(%6)""",
        f"%0: {_t('s0, 2, 3')}",
        _t("s0, 2, 3"),
    )
    ctx = _opt(p, "fold,dce")
    assert _names(p) == [
        "op.philox_uniform",
        "op.full",
        "builtin.constant",
        "op.add",
        "op.add",
        "op.add",
        "builtin.return",
    ]
    assert p.block.ops[2].attrs == {"value": 1.5} and ctx.constants == {}


# -- the rewrite rules ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "p1,p2,left", [((1, 2, 0), (2, 0, 1), 0), ((1, 0, 2), (0, 2, 1), 1), ((2, 0, 1), (2, 0, 1), 1)]
)
def test_permute_of_permute_is_one_permute_or_none(p1, p2, left):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    s1 = ", ".join(str(x.shape[i]) for i in p1)
    y = np.transpose(np.transpose(x, p1), p2)
    s2 = ", ".join(str(d) for d in y.shape)
    p = _prog(
        f"""  %1 = op.permute(%0) {{perm = {p1}}} : {_t(s1)}
  %2 = op.permute(%1) {{perm = {p2}}} : {_t(s2)}
  %3 = op.neg(%2) : {_t(s2)}
  builtin.return(%3)""",
        f"%0: {_t('2, 3, 4')}",
        _t(s2),
    )
    _opt(p, "canonicalize")
    assert _names(p).count("op.permute") == left
    np.testing.assert_array_equal(_run(p, x)[0], -y)


def test_handwritten_pattern_and_drr_rule_rewrite_alike():
    body = f"""  %1 = op.permute(%0) {{perm = (1, 2, 0)}} : {_t("3, 4, 2")}
  %2 = op.permute(%1) {{perm = (1, 0, 2)}} : {_t("4, 3, 2")}
  builtin.return(%2)"""
    a = _prog(body, f"%0: {_t('2, 3, 4')}", _t("4, 3, 2"))
    b = _prog(body, f"%0: {_t('2, 3, 4')}", _t("4, 3, 2"))
    passes.apply_patterns_greedily(a, [passes.PermuteOfPermute()])
    rule = Rule(
        "pp",
        source=Pat("permute", Pat("permute", Var("x"), perm=Attr("p")), perm=Attr("q")),
        result=Res("permute", "x", perm=lambda m: tuple(m["p"][i] for i in m["q"])),
    )
    passes.apply_patterns_greedily(b, [rule.pattern()])
    assert str(a) == str(b) and _names(a) == ["op.permute", "builtin.return"]
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(_run(a, x)[0], np.transpose(x, (2, 1, 0)))


def test_reshape_chain_expand_and_cast_to_the_same_type_vanish():
    p = _prog(
        f"""  %1 = op.reshape(%0) {{shape = (6,)}} : {_t("6")}
  %2 = op.reshape(%1) {{shape = (3, 2)}} : {_t("3, 2")}
  %3 = op.reshape(%2) {{shape = (2, 3)}} : {_t("2, 3")}
  %4 = op.expand(%3) {{shape = (2, 3)}} : {_t("2, 3")}
  %5 = op.cast(%4) {{dtype = float32}} : {_t("2, 3")}
  %6 = op.reshape(%5) {{shape = (3, 2)}} : {_t("3, 2")}
  %7 = op.reshape(%6) {{shape = (1, 6)}} : {_t("1, 6")}
  builtin.return(%7)""",
        f"%0: {_t('2, 3')}",
        _t("1, 6"),
    )
    _opt(p, "canonicalize")
    assert _names(p) == ["op.reshape", "builtin.return"] and p.block.ops[0].attrs["shape"] == (1, 6)
    np.testing.assert_array_equal(_run(p, X)[0], X.reshape(1, 6))


def test_expand_and_cast_that_change_the_type_stay():
    p = _prog(
        f"""  %1 = op.expand(%0) {{shape = (4, 2, 3)}} : {_t("4, 2, 3")}
  %2 = op.cast(%1) {{dtype = float64}} : {_t("4, 2, 3", "float64")}
  builtin.return(%2)""",
        f"%0: {_t('2, 3')}",
        _t("4, 2, 3", "float64"),
    )
    _opt(p, "canonicalize")
    assert _names(p) == ["op.expand", "op.cast", "builtin.return"]


SIGNED = np.array([[-0.0, 0.0, 1.5], [-2.0, np.nan, -np.inf]], np.float32)


@pytest.mark.parametrize(
    "op,value,drops",
    [
        ("mul", "1.0", True),
        ("div", "1.0", True),
        ("sub", "0.0", True),
        ("add", "-0.0", True),
        ("add", "0.0", False),
        ("mul", "-1.0", False),
        ("sub", "-0.0", False),
    ],
)
def test_arithmetic_identities_only_where_ieee_makes_them_exact(op, value, drops):
    p = _prog(
        f"""  %1 = builtin.constant {{value = {value}}} : {_t("1, 1")}
  %2 = op.{op}(%0, %1) : {_t("2, 3")}
  %3 = op.neg(%2) : {_t("2, 3")}
  builtin.return(%3)""",
        f"%0: {_t('2, 3')}",
        _t("2, 3"),
    )
    want = _run(p, SIGNED)[0]
    _opt(p, "canonicalize")
    assert (_names(p) == ["op.neg", "builtin.return"]) == drops
    got = _run(p, SIGNED)[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 stays -0.0


def test_add_zero_drops_with_no_signed_zeros_or_for_integers_and_is_commutative():
    p = _prog(
        f"""  %1 = builtin.constant {{value = 0.0}} : {_t("1, 1")}
  %2 = op.add(%1, %0) : {_t("2, 3")}
  %3 = op.neg(%2) : {_t("2, 3")}
  builtin.return(%3)""",
        f"%0: {_t('2, 3')}",
        _t("2, 3"),
    )
    _opt(p, "canonicalize", no_signed_zeros=True)
    assert _names(p) == ["op.neg", "builtin.return"]
    q = _prog(
        f"""  %1 = builtin.constant {{value = 0}} : {_t("1", "int64")}
  %2 = op.add(%0, %1) : {_t("3", "int64")}
  %3 = builtin.constant {{value = 1}} : {_t("1", "int64")}
  %4 = op.mul(%3, %2) : {_t("3", "int64")}
  %5 = op.neg(%4) : {_t("3", "int64")}
  builtin.return(%5)""",
        f"%0: {_t('3', 'int64')}",
        _t("3", "int64"),
    )
    _opt(q, "canonicalize")
    assert _names(q) == ["op.neg", "builtin.return"]
    np.testing.assert_array_equal(_run(q, np.array([4, -5, 6]))[0], [-4, 5, -6])


def test_identity_with_broadcast_is_kept():
    p = _prog(
        f"""  %1 = builtin.constant {{value = 1.0}} : {_t("2, 3")}
  %2 = op.mul(%0, %1) : {_t("2, 3")}
  builtin.return(%2)""",
        f"%0: {_t('3')}",
        _t("2, 3"),
    )
    _opt(p, "canonicalize")
    assert _names(p) == ["builtin.constant", "op.mul", "builtin.return"]


# -- matmul + add -> linear where the plugin has a fused kernel ------------------------------------
def _linfuse_plugin() -> types.ModuleType:
    """The cpu plugin's kernels under a device type 'linfuse', plus a fused 'linear' kernel."""
    mod = types.ModuleType("linfuse_plugin")
    mod.CONTRACT = (1, 0)

    def _linear(ctx, outs, ins):  # type: ignore[no-untyped-def]
        y = np.matmul(ins[0], ins[1])
        outs[0][...] = y + ins[2] if len(ins) == 3 else y

    def oarlock_register(registry):  # type: ignore[no-untyped-def]
        from plugins.cpu.runtime import CPURuntime

        registry.add_runtime("linfuse", CPURuntime)
        for (op, typ, dtype), entry in list(registry.kernels.items()):
            if typ == "cpu":
                registry.add_kernel(op, "linfuse", [dtype], entry.fn, broadcast=entry.broadcast)
        registry.add_kernel("linear", "linfuse", ["float32", "float64"], _linear)

    mod.oarlock_register = oarlock_register
    return mod


@pytest.fixture(scope="module")
def linfuse() -> str:
    fw.register_plugin(_linfuse_plugin(), name="linfuse")
    return "linfuse:0"


def _matmul_add(device: str) -> ir.Program:
    return _prog(
        f"""  %1 = builtin.constant {{name = "w"}} : {_t("3, 4")}
  %2 = builtin.constant {{name = "b"}} : {_t("4")}
  %3 = op.matmul(%0, %1) : {_t("s0, 4")}
  %4 = op.add(%2, %3) : {_t("s0, 4")}
  builtin.return(%4)""",
        f"%0: {_t('s0, 3')}",
        _t("s0, 4"),
        device,
    )


def test_matmul_add_becomes_linear_only_where_the_plugin_has_a_kernel(linfuse):
    rng = np.random.default_rng(3)
    w, b, x = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4,), (5, 3)))
    consts = {"w": w, "b": b}
    cpu = _matmul_add("cpu")
    _opt(cpu, "fuse", consts, device="cpu")
    assert "op.linear" not in _names(cpu)
    p = _matmul_add("linfuse:0")
    _opt(p, "fuse", consts, device=linfuse)
    assert _names(p) == ["builtin.constant", "builtin.constant", "op.linear", "builtin.return"]
    got = _run(p, x, device=linfuse, constants=consts)[0]
    assert_close(got, x @ w + b)


# -- the driver and the manager ----------------------------------------------------------------------
def test_greedy_driver_orders_by_benefit_and_stops_patterns_that_undo_each_other():
    body = f"""  %1 = op.exp(%0) : {_t("2, 3")}
  builtin.return(%1)"""
    p = _prog(body, f"%0: {_t('2, 3')}", _t("2, 3"))
    to_sin = Rule("to_sin", source=Pat("exp", Var("x")), result=Res("sin", "x"), benefit=1)
    to_cos = Rule("to_cos", source=Pat("exp", Var("x")), result=Res("cos", "x"), benefit=5)
    rw = passes.apply_patterns_greedily(p, [to_sin.pattern(), to_cos.pattern()])
    assert _names(p) == ["op.cos", "builtin.return"] and rw.applied == {"to_cos": 1}
    ping = Rule("ping", source=Pat("exp", Var("x")), result=Res("neg", Res("neg", Res("exp", "x"))))
    pong = Rule("pong", source=Pat("neg", Pat("neg", Var("x"))), result="x")
    q = _prog(body, f"%0: {_t('2, 3')}", _t("2, 3"))
    with pytest.raises(fw.OarlockError, match=r"did not reach a fixpoint .*undo each other"):
        passes.apply_patterns_greedily(q, [ping.pattern(), pong.pattern()])


def test_pass_manager_levels_statistics_and_printing(monkeypatch):
    assert [p.name for p in passes.PassManager.level("O1").passes] == ["canonicalize", "cse", "dce"]
    assert passes.PassManager.level("O0").passes == []
    with pytest.raises(fw.OarlockError, match=r"unknown level 'O9'"):
        passes.PassManager.level("O9")
    with pytest.raises(fw.OarlockError, match=r"unknown pass 'nope'"):
        passes.PassManager.named("nope")
    monkeypatch.setenv("OARLOCK_PRINT_IR", "cse")
    out = io.StringIO()
    pm = passes.PassManager.level("O2", stream=out)
    p = _prog(
        f"""  %1 = op.exp(%0) : {_t("2, 3")}
  %2 = op.exp(%0) : {_t("2, 3")}
  %3 = builtin.constant {{value = 1.0}} : {_t("1, 1")}
  %4 = op.mul(%1, %3) : {_t("2, 3")}
  %5 = op.add(%4, %2) : {_t("2, 3")}
  builtin.return(%5)""",
        f"%0: {_t('2, 3')}",
        _t("2, 3"),
    )
    stats = {s.name: s for s in pm.run(p)}
    assert (
        stats["canonicalize"].ops_before,
        stats["canonicalize"].removed,
        stats["canonicalize"].rewritten,
    ) == (6, 2, 1)
    assert (stats["cse"].ops_before, stats["cse"].ops_after) == (4, 3)
    assert all(s.seconds >= 0 for s in stats.values()) and "cse" in pm.report()
    text = out.getvalue()
    assert "IR before pass 'cse'" in text and "IR after pass 'cse'" in text and "pass 'fold'" not in text
    assert text.count("op.exp") == 3  # two before CSE, one after
    monkeypatch.setenv("OARLOCK_PRINT_IR", "1")  # the switch form, as the reshard log reads it
    assert passes.PassManager.level("O2").print_ir == {"all"}
    monkeypatch.setenv("OARLOCK_PRINT_IR", "csee")
    with pytest.raises(fw.OarlockError, match=r"OARLOCK_PRINT_IR names \['csee'\]"):
        passes.PassManager.level("O2")


def test_debug_mode_names_the_pass_that_broke_the_program():
    def breaks(program, ctx):  # type: ignore[no-untyped-def]
        op = program.block.ops[0]
        program.block.ops.remove(op)  # leaves its reader dangling
        return 1

    passes.register_pass("breaks", lambda: passes.FunctionPass("breaks", breaks))
    p = _prog(
        f"""  %1 = op.exp(%0) : {_t("2, 3")}
  builtin.return(%1)""",
        f"%0: {_t('2, 3')}",
        _t("2, 3"),
    )
    with pytest.raises(ir.VerifyError, match=r"broken after pass 'breaks'(.|\n)*dangling"):
        passes.PassManager.named(["dce", "breaks"], verify_each=True).run(p)
    del passes.PASSES["breaks"]


# -- to_static runs the pipeline ----------------------------------------------------------------------
def _count(sf) -> int:
    return len(sf.programs[-1].program.block.ops)


def test_to_static_mlp_before_and_after_passes_equals_eager(device):
    from conformance.models import MLP

    fw.seed(0)
    net = MLP((8, 16, 16, 4)).to(device)
    x = fw.to_tensor(np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32), device=device)
    with fw.no_grad():
        want = net(x).numpy()
        raw = fw.jit.to_static(net.forward, passes=None)
        opt = fw.jit.to_static(net.forward)
        a, b = raw(x).numpy(), opt(x).numpy()
    print(raw.programs[0].program, opt.programs[0].program, sep="\n")
    assert _count(opt) <= _count(raw)
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(b, want)


def test_to_static_llama_block_passes_remove_ops_and_keep_values(device):
    from conformance.models import LlamaBlock

    fw.seed(1)
    blk = LlamaBlock(16, 2, 24).to(device)
    rng = np.random.default_rng(5)
    h = fw.to_tensor(rng.standard_normal((2, 5, 16)).astype(np.float32), device=device)
    cos, sin = (
        fw.to_tensor(a[:5], device=device) for a in (t.numpy() for t in fw.nn.functional.rotary_cos_sin(8, 8))
    )
    with fw.no_grad():
        want = blk(h, cos, sin).numpy()
        raw = fw.jit.to_static(blk.forward, passes=None)
        opt = fw.jit.to_static(blk.forward)
        a, b = raw(h, cos, sin).numpy(), opt(h, cos, sin).numpy()
    before, after = _count(raw), _count(opt)
    print(f"Llama block on {device}: {before} ops traced, {after} after O2")
    assert after < before
    assert_close(a, want)
    assert_close(b, want)
    np.testing.assert_array_equal(b, a)


def test_to_static_fuses_matmul_add_on_a_plugin_with_a_linear_kernel(linfuse):
    rng = np.random.default_rng(6)
    x, w, b = (
        fw.to_tensor(rng.standard_normal(s).astype(np.float32), device=linfuse)
        for s in ((5, 3), (3, 4), (4,))
    )

    def affine(x, w, b):  # type: ignore[no-untyped-def]
        return fw.matmul(x, w) + b

    with fw.no_grad():
        sf = fw.jit.to_static(affine)
        got = sf(x, w, b)
    assert "op.linear" in _names(sf.programs[0].program) and "op.matmul" not in _names(sf.programs[0].program)
    assert_close(got, x.numpy() @ w.numpy() + b.numpy())


# -- the conformance static tier catches a wrong rewrite ---------------------------------------------
def test_static_tier_fails_a_wrong_rule_and_passes_the_shipped_ones(monkeypatch):
    from conformance.checks import CheckFailure
    from conformance.tiers import static

    with np.errstate(all="ignore"):  # the samples multiply inf by 0 on purpose
        assert static.primitive_case("mul", "float32", "cpu")["samples"] > 0
        wrong = Rule("mul_is_add", source=Pat("mul", Var("x"), Var("y")), result=Res("add", "x", "y"))
        monkeypatch.setattr(passes.Canonicalize, "rules", [*passes.rules.CANONICAL, wrong])
        with pytest.raises(CheckFailure, match=r"mul\[float32\] .* as a program"):
            static.primitive_case("mul", "float32", "cpu")


def test_outputs_stay_fresh_tensors_never_the_input_or_a_program_constant():
    p = _prog(
        f"""  %1 = builtin.constant {{value = 1.0}} : {_t("1, 1")}
  %2 = op.mul(%0, %1) : {_t("2, 3")}
  %3 = builtin.constant {{value = 2.0}} : {_t("1, 1")}
  %4 = op.add(%1, %3) : {_t("1, 1")}
  builtin.return(%2, %4)""",
        f"%0: {_t('2, 3')}",
        f"{_t('2, 3')}, {_t('1, 1')}",
    )
    _opt(p, "fold,canonicalize,cse,dce")
    assert _names(p).count("op.mul") == 1 and _names(p).count("op.add") == 1

    def scale(x):  # type: ignore[no-untyped-def]
        return x * 1.0

    x = fw.to_tensor(X)
    with fw.no_grad():
        sf = fw.jit.to_static(scale)
        y1, y2 = sf(x), sf(x)
    assert y1 is not x and y1 is not y2
    np.testing.assert_array_equal(y1.numpy(), X)


def _split_grad(dtype: str = "float32", pads: tuple = ((0, 3), (1, 2), (2, 0))) -> ir.Program:
    """The gradient of a tensor split along axis 0 (``x[0:1]``, ``x[1:2]``, ``x[2:4]``):
    zero-pads of the three slices' gradients, summed."""
    sizes = [4 - b - e for b, e in pads]
    body, args = [], []
    for k, ((b, e), n) in enumerate(zip(pads, sizes)):
        args.append(f"%{k}: {_t(f'{n}, 3', dtype)}")
        zero = "0.0" if dtype == "float32" else "0"
        body.append(
            f"  %{3 + k} = op.pad(%{k}) {{pads = (({b}, {e}), (0, 0)), value = {zero}}} : {_t('4, 3', dtype)}"
        )
    body.append(f"  %6 = op.add(%3, %4) : {_t('4, 3', dtype)}")
    body.append(f"  %7 = op.add(%6, %5) : {_t('4, 3', dtype)}")
    body.append("  builtin.return(%7)")
    return _prog("\n".join(body), ", ".join(args), _t("4, 3", dtype))


def test_a_sum_of_zero_pads_that_tile_an_axis_is_a_concat_bit_for_bit():
    a = np.array([[1.0, -0.0, np.nan]], np.float32)
    b = np.array([[-2.0, 0.0, -0.0]], np.float32)
    c = np.array([[3.0, np.inf, -1.5], [-0.0, 5.0, 7.0]], np.float32)
    want = _run(_split_grad(), a, b, c)[0]  # the pads and adds, unrewritten
    p = _split_grad()
    _opt(p, "canonicalize")
    names = _names(p)
    assert "op.pad" not in names and names.count("op.concat") == 1
    got = _run(p, a, b, c)[0]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))  # -0.0 became +0.0 in both
    assert not np.signbit(got[0, 1])
    q = _split_grad()
    _opt(q, "canonicalize", no_signed_zeros=True)  # no + 0.0 needed
    assert _names(q) == ["op.concat", "builtin.return"]
    np.testing.assert_array_equal(_run(q, a, b, c)[0], np.concatenate([a, b, c]))
    ints = _split_grad("int64")
    _opt(ints, "canonicalize")
    assert _names(ints) == ["op.concat", "builtin.return"]
    ia, ib, ic = (np.arange(3)[None] + 10 * k for k in range(3))
    ic = np.concatenate([ic, ic + 1])
    np.testing.assert_array_equal(_run(ints, ia, ib, ic)[0], np.concatenate([ia, ib, ic]))


@pytest.mark.parametrize("pads", [((0, 3), (1, 2), (1, 1)), ((0, 3), (2, 1), (2, 0))])
def test_pads_that_overlap_or_leave_a_gap_stay(pads):
    p = _split_grad(pads=pads)
    _opt(p, "canonicalize")
    assert _names(p).count("op.pad") == 3
