"""The primitive operator set: every op a plugin must implement to run every model.

Each entry names the op's tensor inputs, its attributes, what the kernel computes and the
dtypes a plugin is expected to register it for (``PrimitiveSpec.dtypes``; the conformance
suite runs exactly these and reports the others "not supported"). The core has already
checked arguments, promoted dtypes, normalised attributes (axes are sorted non-negative ints,
shapes are tuples of ints) and allocated the outputs; a kernel only fills ``outs``.

Dispatch dtype. Kernels are registered per the dtype of the input named by
``PrimitiveSpec.key_input``: the first tensor input, except ``where`` (``x``, its second: the
condition is always bool); for ``full``, ``arange`` and ``philox_uniform`` (no tensor input)
the output's. A dtype a plugin does not register runs on the cpu plugin.

Bool arithmetic. Where a numeric op is expected on bool it is the logical one, as in numpy:
``add`` and ``maximum`` are or, ``mul`` and ``minimum`` are and, ``max`` is any, ``min`` is
all, ``argmax``/``argmin`` give the first True/False; comparisons order False < True.

Gradients at ties (the core's rule, not a kernel's job; conformance checks it on every device).
``maximum``/``minimum`` give the incoming gradient to the operand they pick and split it evenly,
0.5 each, where ``x == y``. ``max``/``min`` over axes share each output's gradient evenly among
the tied elements it came from (``g / count``). ``amax``/``amin`` are ``max``/``min``, and
composites built on them (``max_pool2d``) inherit the rule; ``topk``, which picks by
``argmax``, gives the whole gradient to the index it returned (the lower one on a tie).

Integers. Integer results are exact modulo 2**bits of the output dtype (they wrap, never
saturate): sums and products accumulate in at least that width (an int64 sum past 2**31 must
not pass through an int32 accumulator), and integer matmul never goes through floating point
(int64 values past 2**53, int32 past 2**24 stay exact).

Floating point. Results are those of the exact operation rounded once to the output dtype,
to nearest even (transcendental functions, and div and sqrt in float32 and float64, within
the tolerances of docs/conformance.md, on their whole domain, not only near 0). Ops that
only move data (copy, permute, expand, slice, concat, pad, gather, scatter, where, full) and
neg, abs, floor, ceil and cast are exact bit for bit in every float dtype, the sign of zero
included: ``neg(+0.0)`` is -0.0, ``abs(-0.0)`` is +0.0, a copy keeps -0.0. In float16 and
bfloat16, add, sub, mul, div and sqrt are exact too (computed in float32 and rounded once),
results are rounded to nearest (not toward zero), and sums and matmuls accumulate in float32
and round once at the end (a half-precision accumulator is not accurate enough).

Errors. A kernel raises :class:`adapter_api.OpArgumentError` for bad input that only it can
see (an index out of range in ``gather``, ``scatter``, ``scatter_add``), naming the op, the
value and the allowed range; :class:`adapter_api.KernelNotFoundError` to decline attributes
it does not support (the core then falls back); anything else is reported as a failure of the
plugin ("report it to the plugin's vendor").

Elementwise ops: inputs have the output's shape, unless the kernel was registered with
``broadcast=True``; then inputs have the output's rank with each size equal to the
output's or 1 (numpy broadcasting). Binary ops get both inputs in one dtype.

The numpy reference of each op lives with the conformance suite
(``conformance/reference.py``); the CPU plugin is another reading of this table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "int16", "int32", "int64", "uint8")
NUMERIC = (*FLOATS, *INTS)
ALL = (*NUMERIC, "bool")


@dataclass(frozen=True)
class PrimitiveSpec:
    name: str
    inputs: tuple[str, ...]
    attrs: tuple[str, ...]
    doc: str
    family: str
    #: dispatch dtypes a plugin is expected to register (see the module docstring)
    dtypes: tuple[str, ...] = ALL
    #: which tensor input's dtype selects the kernel
    key_input: int = 0


def _specs(
    family: str, names: str, inputs: tuple[str, ...], attrs: tuple[str, ...], doc: str
) -> list[PrimitiveSpec]:
    return [PrimitiveSpec(n, inputs, attrs, doc.format(name=n), family) for n in names.split()]


_ALL = [
    *_specs(
        "unary",
        "neg abs exp log sqrt rsqrt sin cos tanh erf floor ceil sign",
        ("x",),
        (),
        "y = {name}(x), elementwise; y has x's dtype.",
    ),
    *_specs("unary", "logical_not", ("x",), (), "y = not x; x is bool, y is bool."),
    *_specs(
        "binary",
        "add sub mul div pow maximum minimum",
        ("x", "y"),
        (),
        "z = {name}(x, y), elementwise; x, y and z share one dtype. Integer div is not "
        "asked for (the core promotes '/' to float).",
    ),
    *_specs(
        "binary",
        "floor_divide remainder",
        ("x", "y"),
        (),
        "z = numpy.{name}(x, y) (sign of the result follows y, as in Python). Integers: a "
        "zero divisor is never asked for (the core raises first, as Paddle does); MIN // -1 "
        "wraps to MIN and MIN % -1 is 0 (numpy's rule), never a trap. Floats: IEEE (x // 0.0 "
        "is +-inf or NaN, x % 0.0 is NaN).",
    ),
    *_specs(
        "compare",
        "eq ne lt le gt ge",
        ("x", "y"),
        (),
        "z = x {name} y, elementwise; x and y share one dtype, z is bool.",
    ),
    *_specs("logical", "logical_and logical_or", ("x", "y"), (), "z = x {name} y; bool in, bool out."),
    PrimitiveSpec(
        "where",
        ("cond", "x", "y"),
        (),
        "z = cond ? x : y; cond is bool; x, y, z share one dtype; registered under x's dtype.",
        "select",
    ),
    PrimitiveSpec(
        "cast",
        ("x",),
        ("dtype",),
        "y = x converted to dtype (int->int wraps modulo "
        "2**bits of the target, never saturates: int32 300 -> int8 44, -1 -> uint8 255; "
        "float->int truncates toward zero and saturates to the target's range, NaN -> 0, on "
        "every device: 3e9 -> int32 2147483647, -inf -> int32 -2147483648, -1.5 -> uint8 0, "
        "300.7 -> uint8 255, 2.9 -> uint8 2 (OpenCL's convert_<type>_sat_rtz, CUDA's "
        "cvt.rzi.sat; plain C and numpy leave out-of-range values undefined). "
        "nonzero->bool is True (NaN too); bool->number is 0/1).",
        "convert",
    ),
    *_specs(
        "reduce",
        "sum prod max min",
        ("x",),
        ("axes", "keepdim"),
        "y = {name} of x over axes (a sorted tuple of distinct non-negative ints); "
        "keepdim keeps them as size 1. y has x's dtype. max/min of an empty axis is not asked for.",
    ),
    *_specs(
        "reduce",
        "argmax argmin",
        ("x",),
        ("axis", "keepdim"),
        "y = int64 index of the first {name} along one axis. NaN counts as the extreme of "
        "both: the index of the first NaN when there is one (numpy's rule).",
    ),
    PrimitiveSpec(
        "argsort",
        ("x",),
        ("descending",),
        "y = int64 indices that sort x along its last axis (a 0-d x is one row of one): "
        "stable (equal values, -0.0 and +0.0 included, keep their order), smallest first, or "
        "largest first when descending (equal values still in their order). NaN is greater "
        "than every number: last ascending, first descending, NaNs in their order (numpy's "
        "and Paddle's rule). Bool: False < True. O(n log n) per row: the core sorts with it.",
        "sort",
    ),
    PrimitiveSpec(
        "matmul",
        ("a", "b"),
        (),
        "c[..., i, j] = sum_k a[..., i, k] * b[..., k, j]; "
        "a is (B..., M, K), b is (B..., K, N) with equal batch dims (ndim >= 2).",
        "linalg",
    ),
    PrimitiveSpec("permute", ("x",), ("perm",), "y = x.transpose(perm).", "layout"),
    PrimitiveSpec(
        "expand",
        ("x",),
        ("shape",),
        "y = broadcast_to(x, shape); x has len(shape) dims, each equal to shape's or 1.",
        "layout",
    ),
    PrimitiveSpec(
        "slice",
        ("x",),
        ("starts", "stops", "steps"),
        "y = x[starts[d]:stops[d]:steps[d] for each d]; 0 <= start <= stop <= size, step >= 1.",
        "layout",
    ),
    PrimitiveSpec(
        "concat", ("*xs",), ("axis",), "y = concatenate(xs, axis); all xs share dtype and rank.", "layout"
    ),
    PrimitiveSpec(
        "pad",
        ("x",),
        ("pads", "value"),
        "y = x padded with the constant value; pads is ((before, after), ...) per dim, non-negative.",
        "layout",
    ),
    PrimitiveSpec(
        "gather",
        ("x", "index"),
        ("axis", "wrap"),
        "y = numpy.take(x, index, axis); index is "
        "int64; y.shape = x.shape[:axis] + index.shape + x.shape[axis+1:]. An index "
        "outside [0, x.shape[axis]) raises OpArgumentError, never reads out of bounds. "
        "With wrap=True (Paddle's rule for a user's index; the attr is absent when false, "
        "so a kernel takes it as a keyword defaulting to False) an index in "
        "[-x.shape[axis], 0) counts from the end and only one outside [-n, n) raises.",
        "index",
    ),
    PrimitiveSpec(
        "scatter_add",
        ("x", "index", "src"),
        ("axis",),
        "y = copy of x; then for "
        "every position of src, y[..., index[j], ...] += src[..., j, ...] (src laid "
        "out as gather's output). Duplicate indices accumulate. An index outside [0, "
        "x.shape[axis]) raises OpArgumentError, never writes out of bounds.",
        "index",
    ),
    PrimitiveSpec(
        "scatter",
        ("x", "index", "src"),
        ("axis",),
        "as scatter_add, but assigns; with duplicate indices any one of the values may win.",
        "index",
    ),
    PrimitiveSpec("full", (), ("shape", "value", "dtype"), "y = value everywhere.", "create"),
    PrimitiveSpec(
        "arange",
        (),
        ("start", "step", "dtype"),
        "y[i] = start + i * step, for the 1-d output's length.",
        "create",
    ),
    PrimitiveSpec(
        "philox_uniform",
        (),
        ("shape", "seed", "offset", "dtype"),
        "Counter-based uniform numbers in [0, 1), bitwise equal on every device. "
        "Element i: n = offset + i // 4; counter = (n mod 2**32, n >> 32, 0, 0); key = "
        "(seed mod 2**32, (seed >> 32) mod 2**32); bits = Philox4x32-10(counter, key)"
        "[i % 4]; y = (bits >> 8) * 2**-24, computed exactly in y's dtype (float32 or "
        "float64).",
        "random",
    ),
    PrimitiveSpec("copy", ("x",), (), "y = x.", "memory"),
]

#: Expected dtypes where they are not ``ALL``.
_DTYPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        "neg abs sign sub pow floor_divide remainder sum prod matmul scatter_add arange".split(), NUMERIC
    ),
    **dict.fromkeys("exp log sqrt rsqrt sin cos tanh erf floor ceil div".split(), FLOATS),
    **dict.fromkeys("logical_not logical_and logical_or".split(), ("bool",)),
    "philox_uniform": ("float32", "float64"),
}

#: The gradient at ties (see "Gradients at ties" above), added to those ops' docs.
_TIE_DOCS: dict[str, str] = {
    **dict.fromkeys(("maximum", "minimum"), " Gradient: to the operand picked; where x == y, 0.5 to each."),
    **dict.fromkeys(
        ("max", "min"), " Gradient: shared evenly among the elements equal to the result (g / count)."
    ),
}

#: name -> spec, in a stable order.
PRIMITIVES: dict[str, PrimitiveSpec] = {
    s.name: replace(
        s,
        doc=s.doc + _TIE_DOCS.get(s.name, ""),
        dtypes=_DTYPES.get(s.name, ALL),
        key_input=1 if s.name == "where" else 0,
    )
    for s in _ALL
}


# -- low-precision dtypes (optional) ------------------------------------------------------------
#: Wide unsigned integers: every primitive that takes the contract's integers takes them too, with
#: the integer rules above (results exact modulo 2**bits; uint64 values past 2**63 included, so
#: a kernel never routes them through int64 or float64; ``cast`` float -> uint saturates, NaN -> 0).
UINT_WIDE = ("uint16", "uint32", "uint64")
#: Float8 storage dtypes (ml_dtypes' names and encodings; e4m3fn/e5m2 per the OCP 8-bit
#: floating point spec, the fnuz variants with a single NaN and no negative zero). Only the ops
#: of ``FLOAT8_OPS`` take them: data movement (bit for bit) and ``cast``, which converts to a
#: float8 dtype by rounding once to nearest even, not saturating (past the largest finite value
#: the fn/fnuz types give NaN and e5m2 gives inf: ml_dtypes' conversion, and torch's), and from
#: one exactly (float8 -> int follows the float -> int rule). No arithmetic takes them.
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
FLOAT8_OPS = (
    "cast",
    "where",
    "permute",
    "expand",
    "slice",
    "concat",
    "pad",
    "gather",
    "scatter",
    "full",
    "copy",
)

#: primitive -> the low-precision dispatch dtypes it takes. Optional: a plugin registers the
#: ones its device supports (``Registry.add_kernel``) and lists the dtypes it can hold in
#: ``DeviceProperties.dtypes``; the conformance tier ``lowp`` checks what it registers and
#: reports the rest "not supported" (the core then runs them on the cpu plugin, or refuses
#: float8 arithmetic naming the op).
LOWP: dict[str, tuple[str, ...]] = {
    name: (UINT_WIDE if "uint8" in spec.dtypes else ()) + (FLOAT8 if name in FLOAT8_OPS else ())
    for name, spec in PRIMITIVES.items()
    if "uint8" in spec.dtypes or name in FLOAT8_OPS
}
