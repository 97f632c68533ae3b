"""Elemwise scalar ops: arithmetic, comparisons, logic, casts and mixed-dtype operands.

Transcendental functions, rounding, division and Composite are in ``elemwise_math``.
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar.basic as ps
import pytensor.tensor as pt
from hypothesis import strategies as st
from pytensor.tensor.elemwise import Elemwise

from conformance.accuracy import (
    CORRECTLY_ROUNDED,
    NUMBA_RECIPROCAL_QUOTIENT,
    SUM3_ULPS,
)
from conformance.jax_records import (
    dtype_differs,
    elemwise_dtype,
    int_to_float32,
    subnormal_intermediate,
    without_jax,
)
from conformance.registry import (
    C_BACKENDS,
    NOT_REFERENCE,
    NUMBA_BACKENDS,
    ORT_BACKENDS,
    Blame,
    Case,
    Composes,
    Row,
)
from conformance.strategies import ANY, Domain, arrays, broadcast_shapes, dtypes, elemwise, fixed

FLOATS, NUMERIC, ALL = dtypes.FLOATS, dtypes.NUMERIC, dtypes.ALL
LOGIC = dtypes.BOOL + dtypes.INTS
WIDE_INTS = ("int64", "uint64")

# PyTensor's C maximum/minimum go through double, so 64-bit integers above 2**53 round.
C_MINMAX_ROUNDS = {
    "backends": C_BACKENDS, "dtypes": WIDE_INTS, "blame": Blame.PYTENSOR,
    "reason": "C maximum/minimum compute 64-bit integers through double, losing low bits",
    "cause": "maximum-minimum-c-double",
    "match": "exact match required",
}
# ONNX Runtime's vectorised int64 Max/Min compares only the low 32 bits of each element.
ORT_MINMAX_INT64 = {
    "backends": ORT_BACKENDS, "dtypes": ("int64",), "blame": Blame.ONNXRUNTIME,
    "reason": "Max/Min on int64 tensors of 2+ elements return wrong elements above 2**31",
    "cause": "eigen-sse2-int64-compare",
    "match": "exact match required", "versions": "onnxruntime<1.32",
}
ALL_BACKENDS = NOT_REFERENCE


def rounds_as_float32(quotient):
    """A ``when`` predicate: some element of ``quotient(values)`` (in double) is not a
    float32 number, so computing it in float32 gives another value."""

    def when(case) -> bool:
        with np.errstate(all="ignore"):
            exact = quotient(*(v.astype(np.float64) for v in case.values))
        finite = exact[np.isfinite(exact)]
        return bool((finite.astype(np.float32).astype(np.float64) != finite).any())

    return when


# PyTensor's Numba kernels divide integers in float32 (reciprocal as the C code's
# np.float32(1) / x, true_div of narrow ints through float32) and store it as float64.
NUMBA_DIVIDES_IN_FLOAT32 = {
    "backends": NUMBA_BACKENDS, "blame": Blame.PYTENSOR, "cause": "numba-int-division-float32",
    "reason": "Numba divides integers in float32 and returns the float32 value as float64",
    "match": r"abs err",
}


def pairs_opposite_zeros(case) -> bool:
    """True when some element pairs +0.0 with -0.0 (maximum/minimum may return either)."""
    a, b = np.broadcast_arrays(*case.values)
    return bool(((a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))).any())


# Which of two equal zeros maximum/minimum return: numpy documents where(x1 >= x2, x1, x2),
# so x1; PyTensor's C code gives x1, its Python linker numpy's loops (float16: x1; float32 and
# float64: x2), ONNX Runtime x1 or x2 by the element's position in its vectorised loop.
ORT_MINMAX_ZERO = {
    "backends": ORT_BACKENDS, "dtypes": ("float16",), "blame": Blame.ONNXRUNTIME,
    "reason": "Max/Min return x1 or x2 of two opposite zeros by position (numpy: x1)",
    "match": r"\(sign of zero differs\)", "when": pairs_opposite_zeros,
    "example": fixed(0.0, -0.0),
}
PY_MINMAX_ZERO = {
    "backends": (*C_BACKENDS, *ORT_BACKENDS), "dtypes": ("float32", "float64"),
    "blame": Blame.PYTENSOR, "cause": "numpy-minmax-opposite-zeros",
    "reason": "Python linker's float32/64 maximum/minimum (numpy's SIMD loops) return x2 of "
              "two opposite zeros; C code and numpy's docs x1",
    "match": r"\(sign of zero differs\)", "when": pairs_opposite_zeros,
    "example": fixed([0.0] * 5, [-0.0] * 5),
}
# Random graphs judge no zero signs: floats compose despite the two records above.
MINMAX_COMPOSES = Composes(domains=(ANY, ANY), dtypes=tuple(d for d in ALL if d not in WIDE_INTS))
# ONNX Runtime's Where merges its two selections by taking X's where it is nonzero, so a
# -0.0 selected from X comes back as Y's +0.0 (microsoft/onnxruntime#32191; the grid found it).
ORT_WHERE_ZERO_SIGN = {
    "backends": ORT_BACKENDS, "dtypes": FLOATS, "blame": Blame.ONNXRUNTIME,
    "cause": "ort-where-negative-zero",
    "reason": "Where returns +0.0 where it selects a -0.0 (its merge skips zeros)",
    "match": r"=0\.0 but pytensor-py=-0\.0 \(sign of zero differs\)",
    "when": lambda case: any(bool(((v == 0) & np.signbit(v)).any()) for v in case.values),
}


def all_negative_zero(case) -> bool:
    """Some element is -0.0 in every operand."""
    found = [(v == 0) & np.signbit(v) for v in np.broadcast_arrays(*case.values)]
    return bool(np.logical_and.reduce(found).any())


# Random graphs judge no zero signs where a node's row has a record on the graph's dtype,
# so float16 and float64 graphs may add three operands (float32's record is no sign).
# In graphs, a zero from an earlier node may carry either sign where that node's row does not
# judge zero signs (a dot product's, say), and 1/x makes the sign an infinity: divisors there
# are kept off zero. The rows' own cases divide by both zeros.
NONZERO = Domain(nonzero=True)
NONZERO_DIVISOR = Composes(domains=(ANY, NONZERO))
VARIADIC_ADD_COMPOSES = Composes(domains=(ANY, ANY, ANY), dtypes=("bool", "float16", "float64"))


def product_leaves_int64(case) -> bool:
    """True when some elementwise product of the operands leaves the int64 range."""
    columns = np.broadcast_arrays(*case.values)
    return any(abs(int(np.prod([int(v) for v in vs], dtype=object))) >= 2**63
               for vs in zip(*(c.ravel() for c in columns), strict=True))


def overflows_unlike_double(fold):
    """A ``when`` predicate: folding the operands in their dtype gives inf or nan where
    folding them as Python floats (double precision) and casting back does not."""

    def when(case) -> bool:
        values = np.broadcast_arrays(*case.values)
        with np.errstate(all="ignore"):
            narrow = fold(values)
            wide = fold([v.astype(np.float64) for v in values]).astype(narrow.dtype)
        return bool((~np.isfinite(narrow) & ~((narrow == wide) | np.isnan(wide))).any())

    return when


def overflows_in_one_order(fold):
    """A ``when`` predicate: folding the float operands left to right gives inf or nan where
    another order of the same operands gives a finite result, or the other way round."""

    def when(case) -> bool:
        values = np.broadcast_arrays(*case.values)
        if values[0].dtype.kind != "f":
            return False
        with np.errstate(all="ignore"):
            finite = [np.isfinite(fold([values[i] for i in order]))
                      for order in ((0, 1, 2), (1, 2, 0), (0, 2, 1))]
        return bool(((finite[0] != finite[1]) | (finite[0] != finite[2])).any())

    return when


def numba_reassociates(fold, example) -> dict:
    """PyTensor compiles Numba with fast-math (numba__fastmath), which lets LLVM reorder a
    3-operand product or sum (a factor that is constant along the inner loop is computed
    before it): where one order overflows and another does not, the result's finiteness
    depends on the order chosen."""
    # measured on PyTensor 3.3.8 with numba 0.68, float32 and float64: the reordered code is
    # what Numba's disk cache serves; the function compiled in the process keeps numpy's
    # order (3.0.7 with numba 0.65 keeps it both ways)
    return {"backends": NUMBA_BACKENDS, "dtypes": ("float32", "float64"), "blame": Blame.PYTENSOR,
            "cause": "numba-fastmath-reassociates", "versions": "pytensor>=3.3",
            "reason": "Numba's fast-math reorders a 3-operand float fold: where folding left to "
                      "right overflows and another order does not, it returns a finite value "
                      "(or inf where numpy's order is finite)",
            "match": "abs err inf|but pytensor-py=-?inf|=-?inf but pytensor-py",
            "when": overflows_in_one_order(fold), "example": example,
            # Numba compiles for the host CPU: LLVM's loop code may differ on another
            "cpu": "LLVM's code for the host CPU, loaded from Numba's disk cache (seen with "
                   "AVX-512)"}


# PyTensor's Python Add/Mul with 3+ inputs run the scalar op on Python numbers (sum, np.prod);
# the result raises when it is a Python int out of range (1-d inputs, not 0-d ones).
def variadic_overflows(int_dtypes, example) -> dict:
    return {"backends": ALL_BACKENDS, "dtypes": int_dtypes, "blame": Blame.PYTENSOR,
            "reason": "Python linker raises OverflowError where 3+ integer operands wrap",
            "cause": "elemwise-py-frompyfunc", "versions": "pytensor<3.3",
            "match": "OverflowError", "example": example}


MUL_VARIADIC_UINT64 = {
    "backends": ALL_BACKENDS, "dtypes": ("uint64",), "blame": Blame.PYTENSOR,
    "reason": "Python linker's np.prod of 3+ uint64 operands leaves uint64 above 2**63",
    "cause": "elemwise-py-frompyfunc", "versions": "pytensor<3.3",
    "match": "exact match required", "when": product_leaves_int64,
    "example": fixed(1, 1, 2**63 + 1),
}
def variadic_in_double(fold, example) -> dict:
    return {"backends": ALL_BACKENDS, "dtypes": ("float32",), "blame": Blame.PYTENSOR,
            "reason": "Python linker computes 3+ float32 operands as Python floats (double)",
            "cause": "elemwise-py-frompyfunc", "versions": "pytensor<3.3",
            "match": "out(\\[[0-9, ]*\\])?=(nan|-?inf)", "when": overflows_unlike_double(fold),
            "example": example}


def mixed(first_dtype: str, *domains: Domain):
    """Like ``elemwise``, but operand 0 has ``first_dtype`` and the others the test's dtype,
    so PyTensor's implicit upcast becomes explicit Casts in the model."""

    def factory(dtype: str):
        @st.composite
        def cases(draw):
            shapes, static = draw(broadcast_shapes(len(domains)))
            kinds = [first_dtype] + [dtype] * (len(domains) - 1)
            values = tuple(draw(arrays(k, s, d))
                           for k, s, d in zip(kinds, shapes, domains, strict=True))
            return Case(values, static)

        return cases()

    return factory


def mixed_graphs(first_dtype: str, count: int, *, dtypes: tuple[str, ...] | None = None,
                 others: str | None = None):
    """How a mixed-dtype row composes: operand 0 is guarded into ``first_dtype``'s range
    (whole and finite, so the cast is exact) and cast to it; the others are cast to
    ``others`` (None: kept as they come)."""
    if first_dtype == "bool":
        first = Domain(0, 1, integral=True, allow_nan=False, allow_inf=False)
    else:
        info = np.iinfo(first_dtype)
        first = Domain(int(info.min), int(info.max), integral=True, allow_nan=False,
                       allow_inf=False)
    return Composes(domains=(first,) + (ANY,) * (count - 1), dtypes=dtypes,
                    operand_dtypes=(first_dtype,) + (others,) * (count - 1))


def beyond_int32(case) -> bool:
    return bool((np.abs(case.values[0].astype(np.float64)) >= 2**31).any())


def fixed_mixed(first_dtype: str, first, *rest):
    """``fixed`` with operand 0 of ``first_dtype`` and the others of the test's dtype."""

    def make(dtype: str) -> Case:
        case = fixed(*rest)(dtype)
        value = np.asarray(first, dtype=first_dtype)
        return Case((value, *case.values), ((None,) * value.ndim, *case.static))

    return make


def quotient_by_a_column(dtype: str) -> Case:
    """int16 [[5, 5]] / [[3]]: a divisor constant along the inner loop, the layout whose
    reciprocal Numba hoists whether it compiles the function or loads it from its cache (a
    divisor that varies along the loop showed the bug only from the cache)."""
    return Case((np.array([[5, 5]], np.int16), np.array([[3.0]], dtype)),
                ((1, None), (None, 1)))


def float32_product_differs(case) -> bool:
    """The product rounded to float32 (as C computes int32 * float32) is not the float64
    product PyTensor's output dtype promises."""
    x, y = (v.astype(np.float64) for v in case.values)
    with np.errstate(all="ignore"):
        narrow = (x.astype(np.float32) * y.astype(np.float32)).astype(np.float64)
        return bool((~((narrow == x * y) | (np.isnan(narrow) & np.isnan(x * y)))).any())


def cast_values(target: str):
    """The values whose cast to ``target`` is defined, per source dtype: float -> integer needs
    finite values that fit (C and ONNX leave the rest undefined); the rest takes any value."""

    def domain(dtype: str) -> Domain:
        src, dst = np.dtype(dtype), np.dtype(target)
        if src.kind != "f" or dst.kind not in "iu":
            return ANY
        info = np.iinfo(dst)
        # The largest float of src below info.max + 1 (info.min is a power of two, exact);
        # float16 has no 2**32 or 2**64 (inf, whose nextafter is its largest finite value)
        with np.errstate(over="ignore"):
            top = float(np.nextafter(src.type(float(info.max) + 1), src.type(0)))
        return Domain(min_value=float(info.min), max_value=top, allow_nan=False,
                      allow_inf=False)

    return domain


def cast_domain(target: str):
    """One operand of the values ``cast_values`` allows."""
    return lambda dtype: elemwise(cast_values(target)(dtype))(dtype)


def out_of_range(target: str):
    """A ``when`` predicate: some integer input does not fit in ``target``."""

    def when(case) -> bool:
        (x,) = case.values
        info = np.iinfo(target)
        return x.dtype.kind in "iu" and bool(((x < info.min) | (x > info.max)).any())

    return when


def _cast_graphs(target: str) -> Composes | bool:
    """Casts in random graphs: to bool, integers (operands clipped to half the target's
    range, so no record's overflow shows and float -> int stays defined), float32 and
    float64 (a graph is judged with the tolerance of the narrowest float it computes). Not
    to float16: ONNX Runtime computes chains of float16 nodes in float32 (a record of
    float16 graphs only), so float16 nodes in a graph of another dtype differ beyond
    float16's tolerance, e.g. exp(exp(x))."""
    kind = np.dtype(target).kind
    if target == "float16":
        return False
    domain = ANY
    if kind in "iu":
        info = np.iinfo(target)
        domain = Domain(info.min / 2, info.max / 2, allow_nan=False, allow_inf=False)
    return Composes(domains=(domain,), dtypes=tuple(d for d in ALL if d != "bool"))


def cast_row(target: str) -> Row:
    """Cast to ``target`` from every dtype. PyTensor's Python Cast calls np.int8(x) and the
    like on Python ints, which raises where C (and ONNX) wrap around."""
    row = Row(f"cast_{target}", lambda x: pt.cast(x, target), cast_domain(target), ALL,
              tol=CORRECTLY_ROUNDED, compose=_cast_graphs(target), grid=(cast_values(target),))
    if np.dtype(target).kind not in "iu":
        return row
    info = np.iinfo(target)
    narrowing = [d for d in dtypes.INTS
                 if np.iinfo(d).min < info.min or np.iinfo(d).max > info.max]
    if not narrowing:
        return row

    def example(dtype: str) -> Case:
        src = np.iinfo(dtype)
        return fixed(src.max if src.max > info.max else src.min)(dtype)

    return row.xfail(backends=ALL_BACKENDS, dtypes=narrowing, blame=Blame.PYTENSOR,
                     reason="Python linker's Cast raises OverflowError where C and ONNX wrap",
                     match="OverflowError", when=out_of_range(target), example=example,
                     cause="elemwise-py-frompyfunc", versions="pytensor<3.3")


def identity(x):
    return Elemwise(ps.identity)(x)


def all_0d(case: Case) -> bool:
    return all(v.ndim == 0 for v in case.values)


# PyTensor's JAX dispatch adds and multiplies operands that are all 0-d with Python's sum()
# and reduce(mul, ..., 1), which start from an int; 3+ operands otherwise with jnp.sum and
# jnp.prod of their stack, which widen bools and narrow integers to (u)int64.
JAX_BOOL_0D = {**elemwise_dtype(True, True, dtypes=("bool",),
                                what="add and mul of 0-d bools (Python's sum and * from an int)"),
               "when": all_0d}
JAX_VARIADIC = elemwise_dtype(
    [1], [1], [1], dtypes=("bool", "int8", "int16", "int32", "uint8", "uint16", "uint32"),
    what="3+ operands of add and mul (jnp.sum and jnp.prod of their stack)")


def subnormal_partial_product(case: Case) -> bool:
    """Some product of two of the three operands is a nonzero subnormal number."""
    x, y, z = np.broadcast_arrays(*case.values)
    if x.dtype.kind != "f":
        return False
    tiny = np.finfo(x.dtype).smallest_normal
    with np.errstate(all="ignore"):
        return any(bool(((p != 0) & (np.abs(p) < tiny)).any()) for p in (x * y, y * z, x * z))


ROWS = [
    Row("add", pt.add, elemwise(ANY, ANY), ALL, tol=CORRECTLY_ROUNDED, compose=True)
    .xfail(**JAX_BOOL_0D),
    Row("add_variadic", lambda x, y, z: pt.add(x, y, z), elemwise(ANY, ANY, ANY), ALL,
        tol=SUM3_ULPS, compose=VARIADIC_ADD_COMPOSES)
    .xfail(**variadic_overflows(dtypes.INTS, lambda d: fixed([1], [1], [np.iinfo(d).max])(d)))
    .xfail(**variadic_in_double(lambda v: v[0] + v[1] + v[2], fixed(3e38, 3e38, -3e38)))
    # C has no float16 code for it and runs the same Python sum (2.38 and 3.0.7)
    .xfail_apart(dict(backends=without_jax(ALL_BACKENDS), dtypes=FLOATS, blame=Blame.PYTENSOR,
                      cause="scalar-add-impl-sum", versions="pytensor<3.3",
                      reason="Python linker adds 3+ operands with sum(inputs), which starts "
                             "from int 0: three -0.0 give +0.0",
                      match=r"=-0\.0 but pytensor-py=0\.0 \(sign of zero",
                      when=all_negative_zero, example=fixed(-0.0, -0.0, -0.0)),
                 backends=C_BACKENDS, before=None, dtypes=("float16",), shared=True)
    .xfail(**JAX_VARIADIC),
    Row("sub", pt.sub, elemwise(ANY, ANY), NUMERIC, tol=CORRECTLY_ROUNDED, compose=True),
    Row("mul", pt.mul, elemwise(ANY, ANY), ALL, tol=CORRECTLY_ROUNDED, compose=True)
    .xfail(**JAX_BOOL_0D),
    # relative: where a partial product underflows (Numba reorders the factors, PyTensor before
    # 3.3 multiplies in double) the orders share no correct bit, though all are below a normal
    Row("mul_variadic", lambda x, y, z: pt.mul(x, y, z), elemwise(ANY, ANY, ANY), ALL, compose=True)
    .xfail(**variadic_overflows(dtypes.SIGNED[:3],
                                lambda d: fixed([1], [-1], [np.iinfo(d).min])(d)))
    .xfail(**MUL_VARIADIC_UINT64)
    .xfail(**variadic_in_double(lambda v: v[0] * v[1] * v[2], fixed(1.5, 3e38, 0.0)))
    # y * z varies along axis 1 only: LLVM computes it outside the loop over axis 0
    .xfail(**numba_reassociates(lambda v: v[0] * v[1] * v[2], lambda d: fixed(
        [[np.finfo(d).max]], [[1e10]], [[1e-20]], static=((None, 1), (1, None), (1, None)))(d)))
    .xfail(**JAX_VARIADIC)
    .xfail(**subnormal_intermediate(
        "a partial product that is subnormal is zero, so times inf it is nan",
        lambda d: fixed([np.finfo(d).smallest_normal], [0.5], [-np.inf])(d),
        when=subnormal_partial_product, dtypes=("float32", "float64"))),
    Row("true_div", pt.true_div, elemwise(ANY, ANY), ALL, tol=CORRECTLY_ROUNDED,
        compose=NONZERO_DIVISOR)
    .xfail(**NUMBA_RECIPROCAL_QUOTIENT)
    .xfail(**NUMBA_DIVIDES_IN_FLOAT32, dtypes=("int8", "int16", "uint8", "uint16"),
           when=rounds_as_float32(np.true_divide), example=fixed([1], [3]))
    .xfail(**int_to_float32([1], [3], dtypes=("bool", "int8", "int16", "int32", "uint8",
                                              "uint16", "uint32"))),
    Row("neg", pt.neg, elemwise(ANY), NUMERIC, tol=CORRECTLY_ROUNDED, compose=True),
    Row("abs", pt.abs, elemwise(ANY), ALL, tol=CORRECTLY_ROUNDED, compose=True),
    Row("sign", pt.sign, elemwise(ANY), NUMERIC, compose=True)
    .xfail(backends=ORT_BACKENDS, dtypes=("int64",), blame=Blame.ONNXRUNTIME,
           reason="Sign on int64 tensors of 2+ elements looks at the low 32 bits only",
           match="exact match required", when=beyond_int32, example=fixed([2**31, 2**31]),
           versions="onnxruntime<1.32", cause="eigen-sse2-int64-compare")
    .xfail(backends=ORT_BACKENDS, dtypes=("float16",), blame=Blame.ONNXRUNTIME,
           reason="Sign of a float16 nan is 0, not nan (float32 and float64 keep nan)",
           match=r"=0\.0 but pytensor-py=nan", example=fixed(np.nan),
           when=lambda case: bool(np.isnan(case.values[0]).any()))
    .xfail(backends=NUMBA_BACKENDS, dtypes=dtypes.UNSIGNED, blame=Blame.PYTENSOR,
           cause="numba-sign-unsigned", versions="pytensor<3.3",
           reason="Numba's sign of an unsigned integer with the top bit set is the dtype's "
                  "maximum (-1 wrapped), not 1", match="exact match required",
           when=lambda case: bool((case.values[0] >> (case.values[0].dtype.itemsize * 8 - 1)
                                   ).any()),
           example=lambda d: fixed([np.iinfo(d).max])(d)),
    Row("sqr", pt.sqr, elemwise(ANY), ALL, tol=CORRECTLY_ROUNDED, compose=True)
    .xfail(**elemwise_dtype([True], dtypes=("bool",), what="sqr of bools (jnp.square)")),
    Row("reciprocal", pt.reciprocal, elemwise(ANY), ALL, tol=CORRECTLY_ROUNDED,
        compose=Composes(domains=(NONZERO,)))
    .xfail(**NUMBA_DIVIDES_IN_FLOAT32, dtypes=("int32", "int64", "uint32", "uint64"),
           when=rounds_as_float32(np.reciprocal), example=fixed(3))
    .xfail(**int_to_float32([1])),
    Row("identity", identity, elemwise(ANY), ALL, compose=True),
    Row("second", pt.second, elemwise(ANY, ANY), ALL, compose=True),
    Row("maximum", pt.maximum, elemwise(ANY, ANY), ALL, tol=CORRECTLY_ROUNDED,
        compose=MINMAX_COMPOSES)
    .xfail(**C_MINMAX_ROUNDS, example=fixed(2**53 + 1, 0))
    .xfail(**ORT_MINMAX_INT64, example=fixed([0, 0], [2**31, 2**31]))
    .xfail(**ORT_MINMAX_ZERO).xfail(**PY_MINMAX_ZERO),
    Row("minimum", pt.minimum, elemwise(ANY, ANY), ALL, tol=CORRECTLY_ROUNDED,
        compose=MINMAX_COMPOSES)
    .xfail(**C_MINMAX_ROUNDS, example=fixed(2**53 + 1, 2**62))
    .xfail(**ORT_MINMAX_INT64, example=fixed([0, 0], [2**31, 2**31]))
    .xfail(**ORT_MINMAX_ZERO).xfail(**PY_MINMAX_ZERO),
    Row("clip", pt.clip, elemwise(ANY, ANY, ANY), ALL, compose=True)
    .xfail(**ORT_WHERE_ZERO_SIGN, example=fixed([-1.0], [-0.0], [0.5])),
    Row("eq", pt.eq, elemwise(ANY, ANY), ALL, compose=True),
    Row("neq", pt.neq, elemwise(ANY, ANY), ALL, compose=True),
    Row("lt", pt.lt, elemwise(ANY, ANY), ALL, compose=True),
    Row("le", pt.le, elemwise(ANY, ANY), ALL, compose=True),
    Row("gt", pt.gt, elemwise(ANY, ANY), ALL, compose=True),
    Row("ge", pt.ge, elemwise(ANY, ANY), ALL, compose=True),
    Row("switch", pt.switch, elemwise(ANY, ANY, ANY), ALL, compose=True)
    .xfail(**ORT_WHERE_ZERO_SIGN, example=fixed([-0.0], [0.0], [-0.0])),
    Row("bitwise_and", pt.and_, elemwise(ANY, ANY), LOGIC, compose=True),
    Row("bitwise_or", pt.or_, elemwise(ANY, ANY), LOGIC, compose=True),
    Row("bitwise_xor", pt.xor, elemwise(ANY, ANY), LOGIC, compose=True),
    Row("invert", pt.invert, elemwise(ANY), LOGIC, compose=True),
    Row("isnan", pt.isnan, elemwise(ANY), ALL, compose=True),
    Row("isinf", pt.isinf, elemwise(ANY), ALL, compose=True),
    *(cast_row(target) for target in ALL),
    # Mixed operand dtypes: the row's dtype is the second operand's.
    # the integer operand converts exactly: as add, correctly rounded on every backend
    Row("add_int8_and", pt.add, mixed("int8", ANY, ANY), FLOATS, tol=CORRECTLY_ROUNDED,
        compose=mixed_graphs("int8", 2), grid=(ANY, ANY)),
    # Graphs choose a row by operand 0, which the cast replaces: operand 1 is cast to float64
    # too, or a float32 one would show the C record below.
    Row("mul_int32_and", pt.mul, mixed("int32", ANY, ANY), FLOATS, tol=CORRECTLY_ROUNDED,
        compose=mixed_graphs("int32", 2, dtypes=("float64",), others="float64"), grid=(ANY, ANY))
    .xfail(backends=C_BACKENDS, dtypes=("float32",), blame=Blame.PYTENSOR,
           reason="C multiplies int32 by float32 in float32, not in the float64 result dtype",
           match="abs err", when=float32_product_differs,
           example=fixed_mixed("int32", 2, 3e38))
    .xfail(**dtype_differs(fixed_mixed("int32", [1], [1]), ("float16", "float32"),
                           cause="jax-elemwise-dtype",
                           reason="JAX returns jax.numpy's dtype for int32 times a float16 or "
                                  "float32 (the float's), not the graph's float64")),
    Row("sub_uint8_and", pt.sub, mixed("uint8", ANY, ANY), dtypes.SIGNED,
        compose=mixed_graphs("uint8", 2), grid=(ANY, ANY)),
    Row("true_div_int16_and", pt.true_div, mixed("int16", ANY, ANY), ("uint8", "float32"),
        tol=CORRECTLY_ROUNDED, compose=mixed_graphs("int16", 2), grid=(ANY, ANY))
    .xfail(**{**NUMBA_RECIPROCAL_QUOTIENT, "dtypes": ("float32",),
              "example": quotient_by_a_column})
    .xfail(**NUMBA_DIVIDES_IN_FLOAT32, dtypes=("uint8",), when=rounds_as_float32(np.true_divide),
           example=fixed_mixed("int16", [1], [3]))
    .xfail(**int_to_float32(fixed_mixed("int16", [1], [3]), dtypes=("uint8",))),
    Row("maximum_uint8_and", pt.maximum, mixed("uint8", ANY, ANY), ("int8", "float16"),
        tol=CORRECTLY_ROUNDED, compose=mixed_graphs("uint8", 2), grid=(ANY, ANY))
    .xfail(**{**ORT_MINMAX_ZERO, "example": fixed_mixed("uint8", 0, -0.0)}),
    # The guard clips a uint8 or uint32 operand 0 into [0, 127]: no negative int8 meets a
    # uint32, so the C record below cannot show.
    Row("lt_int8_and", pt.lt, mixed("int8", ANY, ANY), ("uint8", "uint32", "float32"),
        compose=mixed_graphs("int8", 2, dtypes=("uint8", "uint32", "float32")), grid=(ANY, ANY))
    .xfail(backends=C_BACKENDS, dtypes=("uint32",), blame=Blame.PYTENSOR,
           reason="C compares int8 with uint32 as unsigned (C's promotion), not as int64",
           match="exact match required", when=lambda case: bool((case.values[0] < 0).any()),
           example=fixed_mixed("int8", -1, 0)),
    Row("eq_bool_and", pt.eq, mixed("bool", ANY, ANY), ("int8", "float64"),
        compose=mixed_graphs("bool", 2), grid=(ANY, ANY)),
    Row("switch_int8_cond", pt.switch, mixed("int8", ANY, ANY, ANY), ("float32",),
        compose=mixed_graphs("int8", 3), grid=(ANY, ANY, ANY))
    .xfail(**{**ORT_WHERE_ZERO_SIGN, "dtypes": ("float32",)},
           example=fixed_mixed("int8", 0, 0.0, -0.0)),
]
