"""Every primitive is one complete definition: adding one without a floor fails here, naming
the op and the floor. The floors: the contract's schema (adapter_api), the OpDef (shape rule;
gradient rule or a stated reason for none; lowering to the loop IR for element-wise ops and row
reductions), each emitter's spelling of that lowering, the conformance reference and samples,
and a kernel in each first-party plugin (cpu, opencl, cuda: registered without a GPU)."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

import framework  # noqa: F401  (defines the ops)
from adapter_api import PRIMITIVES, Registry
from conformance.opdb import OPDB
from conformance.reference import REFERENCES
from framework._src.ops.base import OPS

emit = importlib.import_module("framework.compiler.emit")
NAMES = sorted(PRIMITIVES)
_LOWERED_REDUCTIONS = {"sum", "max", "min"}


def _plugin_ops(module: str) -> set[str]:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - in-tree plugins import without their SDKs
        pytest.fail(f"{module} does not import without its SDK: {exc}")
    reg = Registry(plugin=module)
    mod.oarlock_register(reg)
    return {k[0] for k in reg.kernels}


PLUGIN_OPS = {m: _plugin_ops(m) for m in ("plugins.cpu", "plugins.opencl", "plugins.cuda")}


def test_every_opdef_is_a_contract_primitive_and_back():
    defined = {n for n, d in OPS.items() if d.kind == "primitive"}
    assert defined == set(PRIMITIVES), (
        f"in the contract without an OpDef: {sorted(set(PRIMITIVES) - defined)}; "
        f"OpDefs not in the contract: {sorted(defined - set(PRIMITIVES))}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_each_floor_has_an_entry(name):
    d = OPS[name]
    missing = []
    if d.infer is None:
        missing.append("shape/dtype rule (OpDef.infer)")
    if d.grad is None and not d.no_grad:
        missing.append("gradient rule, or no_grad='why'")
    if (d.elementwise or name in _LOWERED_REDUCTIONS) and d.lower is None:
        missing.append("lowering to the loop IR (OpDef.lower)")
    if name not in REFERENCES:
        missing.append("conformance reference (conformance/reference.py REFERENCES)")
    if name not in OPDB:
        missing.append("conformance samples (conformance/opdb.py OPDB)")
    for plugin, ops in PLUGIN_OPS.items():
        if name not in ops:
            missing.append(f"a kernel in {plugin}")
    assert not missing, f"primitive '{name}' lacks: " + "; ".join(missing)


@pytest.mark.parametrize("language", sorted(emit.EMITTERS))
def test_every_emitter_spells_every_lowering(language):
    """Each element-wise lowering renders in each language with every field filled."""
    em = emit.EMITTERS[language](emit.LOCAL_SIZE[language])
    for name in NAMES:
        low = OPS[name].lower
        if low is None or low.role != "expr":
            continue
        template = em.native.get(name) or low.c
        n_args = len(PRIMITIVES[name].inputs)
        for dt in (np.dtype(np.float32), np.dtype(np.float64)):
            text = em.render(template, [f"a{i}" for i in range(n_args)], dt)
            assert not re.search(r"[{}]", text), f"{language}: '{name}' renders as {text!r}"
            assert all(f"a{i}" in text for i in range(n_args)), (
                f"{language}: '{name}' drops an operand: {text!r}"
            )


def test_a_primitive_without_a_gradient_or_a_reason_is_refused():
    from framework._src.ops.base import primitive

    with pytest.raises(ValueError, match="give a gradient rule or no_grad"):
        primitive("neg", lambda ins, a: [], None, elementwise=True, lower="(-{0})")
    with pytest.raises(ValueError, match="give its lowering"):
        primitive("neg", lambda ins, a: [], lambda n, g: g, elementwise=True)
    assert OPS["neg"].lower.c == "(-{0})"  # the refused definitions replaced nothing


def test_every_composite_is_in_the_conformance_composites_tier():
    """Each registered composite has an entry in conformance/tiers/composites.py (a run through
    the public API, an independent numpy reference, samples), and one with a gradient check
    unless the op declares it has no gradient."""
    from conformance.tiers.composites import gradient_checked_ops, listed_ops

    composites = {n: d for n, d in OPS.items() if d.kind == "composite"}
    listed, with_grad = listed_ops(), gradient_checked_ops()
    unlisted = sorted(set(composites) - listed)
    no_grad_check = sorted(
        n for n, d in composites.items() if n in listed and n not in with_grad and not d.no_grad
    )
    assert not unlisted and not no_grad_check, (
        f"registered composites not listed in the conformance composites tier: {unlisted}; "
        f"listed without a gradient check: {no_grad_check}. Add a CompositeInfo to "
        "conformance/tiers/composites.py (public call, numpy reference in conformance/composite_reference.py, "
        "samples on the op's edges, grad=(...) for its differentiable inputs)"
    )


# -- the OpDef's other fields: each consumer's need, named where an op lacks it ---------------
ALL_OPS = sorted(n for n, d in OPS.items() if d.kind in ("primitive", "composite"))


@pytest.mark.parametrize("name", ALL_OPS)
def test_each_op_states_what_auto_parallel_amp_and_the_ir_read(name):
    """Auto-parallel reads ``sharding`` (or ``no_sharding``: why replicated or decomposed is
    right); AMP reads ``amp``; the IR's canonical rules and the loop IR read ``identity``;
    the planner and cost models read ``flops``: every product (AMP class "allow") has one."""
    from framework._src.opdef import AMP_CLASSES, Identity

    d = OPS[name]
    missing = []
    if d.sharding is None and not d.no_sharding:
        missing.append("a sharding rule (OpDef.sharding) or no_sharding='why it needs none'")
    if d.amp not in AMP_CLASSES:
        missing.append(f"an AMP class in {AMP_CLASSES} (OpDef.amp), not {d.amp!r}")
    if d.amp == "allow" and d.flops is None:
        missing.append("a FLOP count (OpDef.flops): it is a product, whose time is its arithmetic")
    if d.identity is not None and not isinstance(d.identity, Identity):
        missing.append("an Identity (OpDef.identity)")
    if d.identity is not None and d.identity.both and not d.commutative:
        missing.append("commutative=True (an identity on both sides of an op that is not commutative)")
    assert not missing, f"op '{name}' lacks: " + "; ".join(missing)


_INTEGER_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


@pytest.mark.parametrize("name", [n for n in NAMES if OPS[n].elementwise])
def test_each_integer_lowering_is_spelled_for_integers(name):
    """The C emitter spells an element-wise op for integer operands from ``Lowering.c_int``;
    a float spelling (a math function, float literals) cannot serve for them."""
    d = OPS[name]
    ints = _INTEGER_DTYPES & set(PRIMITIVES[name].dtypes)
    if not ints or d.lower.spelling(np.dtype("int32")) != d.lower.c:
        return
    assert not re.search(r"\{(fn:\w+|one|zero)\}", d.lower.c), (
        f"primitive '{name}' takes {sorted(ints)} but its lowering {d.lower.c!r} is a float spelling: "
        "give Lowering(c_int=...)"
    )


def test_the_generated_families_and_the_ir_traits_come_from_the_opdefs():
    """No second table: the compiler's families, the IR's commutative and random traits and
    AMP's lists are the OpDefs' fields, read back."""
    from framework._src import amp
    from framework.compiler import primitives as gen
    from framework.ir.dialects import lookup

    for name, d in OPS.items():
        if d.family:
            assert name in gen.FAMILIES[d.family]
        info = lookup("op." + name)
        assert info.has("commutative") == d.commutative, name
        assert info.has("random") == d.random, name
    assert amp.op_class("allow") == {n for n, d in OPS.items() if d.amp == "allow"}
    assert {"matmul", "linear", "attention"} <= amp.op_class("allow")
    assert {"softmax", "exp", "sum"} <= amp.op_class("deny")
    assert {n for n, d in OPS.items() if d.random} == {"philox_uniform"}


def test_an_unknown_or_invalid_fact_is_refused():
    from framework._src.ops.base import with_facts

    with pytest.raises(ValueError, match="unknown OpDef field 'comutative'"):
        with_facts(OPS["add"], comutative=True)
    with pytest.raises(ValueError, match="amp='low' is not valid"):
        with_facts(OPS["add"], amp="low")
    assert OPS["add"].amp == ""
