"""Factorisations and solvers ONNX has no operator for, built from a ``Loop``: Cholesky,
SolveTriangular, CholeskySolve, Solve, MatrixInverse, Det (float64) and SLogDet.

Every rule takes ``[..., n, n]`` matrices (a bare core op or a Blockwise over one) and runs
one ``Loop`` over the n columns whose carried value is the whole batch of matrices; a step
writes one row or column (``ScatterElements``, values copied with their zero signs), so
batch axes and symbolic n need no special case. Unrolling would only apply to static n,
which PyTensor types rarely carry (the conformance rows have none), so there is one
formulation, the one that is tested.
Work is in PyTensor's declared output dtype (float32 or float64).

Where LAPACK reports failure PyTensor returns nan for the whole matrix (Cholesky: a pivot
that is not > 0; SolveTriangular: an exact zero on the diagonal; Solve: an exact zero pivot
of the LU factorisation); the rules do the same per batch entry. ``np.linalg.inv`` raises
on a singular matrix where the model returns nan: ONNX cannot raise.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from converter import compat
from converter._core import Context, convert_op, onnx_dtype
from converter.errors import UnsupportedOpError
from converter.ops.linalg import blockwise_rule

Cholesky, CholeskySolve, Det, MatrixInverse, SLogDet, Solve, SolveTriangular = map(
    compat.lookup,
    ("Cholesky", "CholeskySolve", "Det", "MatrixInverse", "SLogDet", "Solve", "SolveTriangular"))


def _i64(ctx: Context, value) -> str:
    return ctx.constant(np.asarray(value, dtype=np.int64), hint="i64")


def _scalar(ctx: Context, value, dtype: str) -> str:
    return ctx.constant(np.asarray(value, dtype=dtype))


def _reduce(ctx: Context, op: str, x: str, axis: int, rank: int, **attrs) -> str:
    """``op`` over one axis of the rank-``rank`` tensor ``x``, the axis given as a
    non-negative number: onnxruntime before 1.32 returns an empty input unchanged from a
    reduction (ArgMax included) over a negative axis."""
    axis %= rank
    if op.startswith("Arg"):
        return ctx.add(op, [x], axis=axis, **attrs)
    return ctx.add(op, [x, _i64(ctx, [axis])], **attrs)


def _loop(ctx: Context, trip: str, init: list[tuple[str, str]], step) -> list[str]:
    """A ``Loop`` of ``trip`` iterations carrying ``init`` ((name, dtype) pairs);
    ``step(i, carried)`` emits the body's nodes and returns the next carried names."""
    mark = len(ctx.nodes)
    i, cond = ctx.fresh("i"), ctx.fresh("cond")
    carried = [ctx.fresh("carried") for _ in init]
    nexts = [ctx.add("Identity", [n]) for n in (cond, *step(i, carried))]
    nodes, ctx.nodes[mark:] = ctx.nodes[mark:], []
    types = [dtype for _, dtype in init]

    def info(name, dtype, shape=None):
        return helper.make_tensor_value_info(name, onnx_dtype(dtype), shape)

    body = helper.make_graph(
        nodes, ctx.fresh("loop_body"),
        [info(i, "int64", []), info(cond, "bool", []),
         *(info(n, d) for n, d in zip(carried, types, strict=True))],
        [info(nexts[0], "bool", []), *(info(n, d) for n, d in zip(nexts[1:], types, strict=True))],
    )
    # an explicit condition: the reference evaluator runs no iteration when it is omitted
    true = ctx.constant(np.asarray(True))
    outs = ctx.add("Loop", [trip, true, *(n for n, _ in init)], n_out=len(init), body=body)
    return [outs] if len(init) == 1 else outs


class _Square:
    """Index helpers for a batch of ``[..., n, n]`` matrices ``a``."""

    def __init__(self, ctx: Context, a: str, ndim: int):
        self.ndim = ndim
        self.shape = ctx.add("Shape", [a])
        self.n = ctx.add("Gather", [self.shape, _i64(ctx, -1)], axis=0)
        self.idx = ctx.add("Range", [_i64(ctx, 0), self.n, _i64(ctx, 1)])  # [n]: columns
        self.rows = ctx.add("Unsqueeze", [self.idx, _i64(ctx, [1])])  # [n, 1]
        self.batch = ctx.add("Slice", [self.shape, _i64(ctx, [0]), _i64(ctx, [-2])])

    def triangle(self, ctx: Context, lower: bool, strict: bool) -> str:
        """[n, n] bool mask of the lower/upper triangle, with or without the diagonal."""
        op = ("Greater" if strict else "GreaterOrEqual") if lower else (
            "Less" if strict else "LessOrEqual")
        return ctx.add(op, [self.rows, self.idx])

    def column_shape(self, ctx: Context) -> str:
        """The shape ``[..., n, 1]`` of one column of the batch."""
        rows = ctx.add("Slice", [self.shape, _i64(ctx, [0]), _i64(ctx, [-1])])
        return ctx.add("Concat", [rows, _i64(ctx, [1])], axis=0)

    def diagonal(self, ctx: Context, a: str) -> str:
        """``[..., n]`` diagonal of ``a``, gathered: a masked row sum would add +0.0 to a
        -0.0 entry and return +0.0. (Gathers and scatters take non-negative axes: the ONNX
        reference compares the other axes' lengths wrongly for a negative one.)"""
        at = ctx.add("Expand", [self.rows, self.column_shape(ctx)])
        picked = ctx.add("GatherElements", [a, at], axis=self.ndim - 1)
        return ctx.add("Squeeze", [picked, _i64(ctx, [-1])])

    def write(self, ctx: Context, x: str, i: str, value: str, shape: str, axis: int) -> str:
        """``x`` with its row (axis -2) or column (axis -1) ``i`` replaced by ``value`` of
        shape ``shape``: a scatter copies the values, where ONNX Runtime's ``Where`` returns
        +0.0 for a -0.0 it selects from its first branch."""
        at = ctx.add("Expand", [i, shape])
        return ctx.add("ScatterElements", [x, at, value], axis=axis % self.ndim)


def _transpose(ctx: Context, x: str, ndim: int) -> str:
    return ctx.add("Transpose", [x], perm=[*range(ndim - 2), ndim - 1, ndim - 2])


def _nan_where(ctx: Context, failed: str, x: str, work: str) -> str:
    """``x`` with every entry nan in the batch entries where ``failed`` ([..., 1, 1])."""
    return ctx.add("Where", [failed, _scalar(ctx, np.nan, work), x])


def _any_zero(ctx: Context, values: str, rank: int, work: str) -> str:
    """``[..., 1, 1]`` bool: some entry of ``values`` ([..., n]) is exactly 0 (a ReduceSum,
    so that n == 0 reduces to False)."""
    zeros = ctx.cast(ctx.add("Equal", [values, _scalar(ctx, 0, work)]), "bool", work)
    count = _reduce(ctx, "ReduceSum", zeros, -1, rank, keepdims=1)
    return ctx.add("Unsqueeze", [ctx.add("Greater", [count, _scalar(ctx, 0, work)]),
                                 _i64(ctx, [-1])])


def cholesky(ctx: Context, a: str, ndim: int, work: str, lower: bool) -> str:
    """LAPACK potrf on the lower (upper) triangle of ``a``: column j of L is
    ``c = a[:, j] - L @ L[j]``, ``L[j, j] = sqrt(c[j])``, ``L[i>j, j] = c[i] / L[j, j]``.
    Where some pivot ``c[j]`` is <= 0 the whole factor is nan, as in PyTensor; a nan pivot
    is no failure but propagates (OpenBLAS's potrf, which scipy's wheels ship, does not
    test for nan; reference LAPACK does)."""
    if not lower:  # the upper factor of a is the transposed lower factor of a.T
        return _transpose(ctx, cholesky(ctx, _transpose(ctx, a, ndim), ndim, work, True), ndim)
    sq = _Square(ctx, a, ndim)
    zero = _scalar(ctx, 0, work)
    factor0 = ctx.add("ConstantOfShape", [sq.shape],
                      value=helper.make_tensor("zero", onnx_dtype(work), [1], [0]))
    ok0 = ctx.add("ConstantOfShape", [sq.batch],
                  value=helper.make_tensor("true", TensorProto.BOOL, [1], [True]))
    column = sq.column_shape(ctx)

    def step(j, carried):
        factor, ok = carried
        row = ctx.add("Unsqueeze", [ctx.add("Gather", [factor, j], axis=-2), _i64(ctx, [-1])])
        done = ctx.add("Squeeze", [ctx.add("MatMul", [factor, row]), _i64(ctx, [-1])])
        col = ctx.add("Sub", [ctx.add("Gather", [a, j], axis=-1), done])  # [..., n]
        pivot = ctx.add("Gather", [col, j], axis=-1)
        ok = ctx.add("And", [ok, ctx.add("Not", [ctx.add("LessOrEqual", [pivot, zero])])])
        root = ctx.add("Unsqueeze", [ctx.add("Sqrt", [pivot]), _i64(ctx, [-1])])
        # the quotients come from Where's second branch, which keeps a -0.0 in ONNX Runtime
        below = ctx.add("Where", [ctx.add("LessOrEqual", [sq.idx, j]), zero,
                                  ctx.add("Div", [col, root])])
        new = ctx.add("Where", [ctx.add("Equal", [sq.idx, j]), root, below])
        new = ctx.add("Unsqueeze", [new, _i64(ctx, [-1])])
        return [sq.write(ctx, factor, j, new, column, axis=-1), ok]

    factor, ok = _loop(ctx, sq.n, [(factor0, work), (ok0, "bool")], step)
    failed = ctx.add("Not", [ctx.add("Unsqueeze", [ok, _i64(ctx, [-1, -2])])])
    return _nan_where(ctx, failed, factor, work)


def solve_triangular(ctx: Context, a: str, b: str, ndim: int, work: str, *, lower: bool,
                     unit: bool, check_singular: bool = True) -> str:
    """Substitution (LAPACK trtrs) for ``[..., n, k]`` right-hand sides ``b``: row r of x
    is ``(b[r] - a[r] @ x) / a[r, r]``, rows taken top-down (lower) or bottom-up (upper),
    with ``a`` masked to its strict triangle and x's unsolved rows still 0. With
    ``check_singular`` an exact zero on the diagonal makes x all nan, as trtrs's info does."""
    sq = _Square(ctx, a, ndim)
    zero = _scalar(ctx, 0, work)
    strict = ctx.add("Where", [sq.triangle(ctx, lower, strict=True), a, zero])
    b = ctx.add("Expand", [b, ctx.add("Concat", [sq.batch, _i64(ctx, [1, 1])], axis=0)])
    diag = None if unit else sq.diagonal(ctx, a)
    last = ctx.add("Sub", [sq.n, _i64(ctx, 1)])
    b_shape = ctx.add("Shape", [b])
    x0 = ctx.add("ConstantOfShape", [b_shape],
                 value=helper.make_tensor("zero", onnx_dtype(work), [1], [0]))
    row_shape = ctx.add("Concat", [sq.batch, _i64(ctx, [1]),
                                   ctx.add("Slice", [b_shape, _i64(ctx, [-1]),
                                                     _i64(ctx, [np.iinfo(np.int64).max])])],
                        axis=0)

    def step(i, carried):
        (x,) = carried
        r = i if lower else ctx.add("Sub", [last, i])
        r1 = ctx.add("Unsqueeze", [r, _i64(ctx, [0])])
        row = ctx.add("Gather", [strict, r1], axis=-2)  # [..., 1, n]
        value = ctx.add("Sub", [ctx.add("Gather", [b, r1], axis=-2),
                                ctx.add("MatMul", [row, x])])
        if diag is not None:
            pivot = ctx.add("Unsqueeze", [ctx.add("Gather", [diag, r1], axis=-1),
                                          _i64(ctx, [-1])])
            value = ctx.add("Div", [value, pivot])
        return [sq.write(ctx, x, r, value, row_shape, axis=-2)]

    (x,) = _loop(ctx, sq.n, [(x0, work)], step)
    if diag is None or not check_singular:
        return x
    return _nan_where(ctx, _any_zero(ctx, diag, ndim - 1, work), x, work)


def eliminate(ctx: Context, a: str, b: str | None, ndim: int, work: str):
    """Gaussian elimination with partial pivoting (LAPACK getrf's pivot choice: the first
    largest |entry|) on ``[a | b]``. Returns (U, the transformed b or None, the
    permutation's sign ``[...]``). A zero pivot column is skipped, as getrf does."""
    sq = _Square(ctx, a, ndim)
    zero = _scalar(ctx, 0, work)
    aug = a if b is None else ctx.add("Concat", [a, b], axis=-1)
    sign0 = ctx.add("ConstantOfShape", [sq.batch],
                    value=helper.make_tensor("one", onnx_dtype(work), [1], [1]))
    aug_shape = ctx.add("Shape", [aug])

    def step(k, carried):
        m, sign = carried
        col = ctx.add("Gather", [m, k], axis=-1)  # [..., n]
        free = ctx.add("GreaterOrEqual", [sq.idx, k])
        size = ctx.add("Where", [free, ctx.add("Abs", [col]), _scalar(ctx, -1, work)])
        p = _reduce(ctx, "ArgMax", size, -1, ndim - 1, keepdims=1,
                    select_last_index=0)  # [..., 1]
        p2 = ctx.add("Unsqueeze", [p, _i64(ctx, [-1])])  # [..., 1, 1]
        # rows k and p swapped by gathering (copies keep a -0.0 that a masked sum would not)
        order = ctx.add("Where", [ctx.add("Equal", [sq.rows, k]), p2,
                                  ctx.add("Where", [ctx.add("Equal", [sq.rows, p2]), k, sq.rows])])
        m = ctx.add("GatherElements", [m, ctx.add("Expand", [order, aug_shape])],
                    axis=ndim - 2)
        k1 = ctx.add("Unsqueeze", [k, _i64(ctx, [0])])
        row_p = ctx.add("Gather", [m, k1], axis=-2)  # [..., 1, cols]: the pivot row
        swapped = ctx.add("Not", [ctx.add("Equal", [ctx.add("Squeeze", [p, _i64(ctx, [-1])]),
                                                     k])])
        sign = ctx.add("Where", [swapped, ctx.add("Neg", [sign]), sign])
        pivot = ctx.add("Gather", [row_p, k1], axis=-1)  # [..., 1, 1]
        below = ctx.add("And", [ctx.add("Greater", [sq.rows, k]),
                                ctx.add("Not", [ctx.add("Equal", [pivot, zero])])])
        factor = ctx.add("Div", [ctx.add("Gather", [m, k1], axis=-1), pivot])  # [..., n, 1]
        updated = ctx.add("Sub", [m, ctx.add("Mul", [factor, row_p])])
        return [ctx.add("Where", [below, updated, m]), sign]

    m, sign = _loop(ctx, sq.n, [(aug, work), (sign0, work)], step)
    if b is None:
        return m, None, sign
    cols = ctx.add("Unsqueeze", [sq.n, _i64(ctx, [0])])
    u = ctx.add("Slice", [m, _i64(ctx, [0]), cols, _i64(ctx, [-1])])
    y = ctx.add("Slice", [m, cols, _i64(ctx, [np.iinfo(np.int64).max]), _i64(ctx, [-1])])
    return u, y, sign


def _broadcast_pair(ctx: Context, a: str, b: str) -> tuple[str, str]:
    """``a`` ([..., n, n]) and ``b`` ([..., n, k]) expanded to their common batch shape."""
    def batch_of(x):
        return ctx.add("Slice", [ctx.add("Shape", [x]), _i64(ctx, [0]), _i64(ctx, [-2])])

    ones = _i64(ctx, [1, 1])
    a2 = ctx.add("Expand", [a, ctx.add("Concat", [batch_of(b), ones], axis=0)])
    b2 = ctx.add("Expand", [b, ctx.add("Concat", [batch_of(a), ones], axis=0)])
    return a2, b2


def _operands(ctx: Context, node) -> tuple[str, str, int, str]:
    """(a, b as [..., n, k], their rank, work dtype) of a solver node, broadcast to one
    batch shape; b_ndim 1 gains an axis."""
    a_var, b_var = node.inputs
    work = node.outputs[0].type.dtype
    a = ctx.cast(ctx.name_of(a_var), a_var.type.dtype, work)
    b = ctx.cast(ctx.name_of(b_var), b_var.type.dtype, work)
    vector = _b_ndim(node) == 1
    if vector:
        b = ctx.add("Unsqueeze", [b, _i64(ctx, [-1])])
    a, b = _broadcast_pair(ctx, a, b)
    return a, b, max(a_var.type.ndim, b_var.type.ndim + vector), work


def _core(node):
    return getattr(node.op, "core_op", node.op)


def _b_ndim(node) -> int:
    return _core(node).b_ndim


def _result(ctx: Context, node, x: str) -> list[str]:
    if _b_ndim(node) == 1:
        x = ctx.add("Squeeze", [x, _i64(ctx, [-1])])
    return [x]


def _single(ctx: Context, node) -> tuple[str, int, str]:
    (var,) = node.inputs
    work = node.outputs[0].type.dtype
    return ctx.cast(ctx.name_of(var), var.type.dtype, work), var.type.ndim, work


def _cholesky(op, ctx: Context, node):
    a, ndim, work = _single(ctx, node)
    return [cholesky(ctx, a, ndim, work, _core(node).lower)]


def _solve_triangular(op, ctx: Context, node):
    """trtrs on the lower/upper triangle (``trans`` is a transpose PyTensor puts before)."""
    a, b, ndim, work = _operands(ctx, node)
    core = _core(node)
    x = solve_triangular(ctx, a, b, ndim, work, lower=core.lower, unit=core.unit_diagonal)
    return _result(ctx, node, x)


def _cholesky_solve(op, ctx: Context, node):
    """potrs: two substitutions with the factor c (``c c^T`` if lower, else ``c^T c``).
    potrs reports no singularity, so a zero on c's diagonal gives inf/nan, not all-nan."""
    c, b, ndim, work = _operands(ctx, node)
    lower = _core(node).lower
    ct = _transpose(ctx, c, ndim)
    first, second = (c, ct) if lower else (ct, c)
    y = solve_triangular(ctx, first, b, ndim, work, lower=True, unit=False,
                         check_singular=False)
    x = solve_triangular(ctx, second, y, ndim, work, lower=False, unit=False,
                         check_singular=False)
    return _result(ctx, node, x)


def _general_solve(ctx: Context, a: str, b: str, ndim: int, work: str) -> str:
    """LU with partial pivoting then back substitution (a and b share their batch shape);
    an exact zero pivot (getrf's info > 0: scipy raises, PyTensor returns nan) makes x all
    nan."""
    u, y, _ = eliminate(ctx, a, b, ndim, work)
    return solve_triangular(ctx, u, y, ndim, work, lower=False, unit=False)


def _solve(op, ctx: Context, node):
    """scipy.linalg.solve: "gen" by LU; "sym"/"her" (real) read one triangle of a, mirrored,
    then LU; "pos" by Cholesky (not positive definite: all nan, as PyTensor)."""
    a, b, ndim, work = _operands(ctx, node)
    core = _core(node)
    if core.assume_a in ("sym", "her", "pos"):
        sq = _Square(ctx, a, ndim)
        a = ctx.add("Where", [sq.triangle(ctx, core.lower, strict=False), a,
                              _transpose(ctx, a, ndim)])
    if core.assume_a == "pos":
        factor = cholesky(ctx, a, ndim, work, lower=True)
        y = solve_triangular(ctx, factor, b, ndim, work, lower=True, unit=False)
        x = solve_triangular(ctx, _transpose(ctx, factor, ndim), y, ndim, work, lower=False,
                             unit=False)
    elif core.assume_a in ("gen", "sym", "her"):
        x = _general_solve(ctx, a, b, ndim, work)
    else:
        raise UnsupportedOpError(node.op, [i.type for i in node.inputs],
                                 f"Solve(assume_a={core.assume_a!r}) reads only part of a; "
                                 "use assume_a='gen'")
    return _result(ctx, node, x)


def _matrix_inverse(op, ctx: Context, node):
    """Solve with the identity; np.linalg.inv raises on a singular matrix, the model
    returns nan (ONNX cannot raise)."""
    a, ndim, work = _single(ctx, node)
    sq = _Square(ctx, a, ndim)
    eye = ctx.cast(ctx.add("Equal", [sq.rows, sq.idx]), "bool", work)
    return [_general_solve(ctx, a, ctx.add("Expand", [eye, sq.shape]), ndim, work)]


def _pivots(ctx: Context, a: str, ndim: int, work: str) -> tuple[str, str]:
    """(diagonal of U ``[..., n]``, permutation sign ``[...]``) of ``a``'s LU."""
    u, _, sign = eliminate(ctx, a, None, ndim, work)
    return _Square(ctx, a, ndim).diagonal(ctx, u), sign


def _det_sign(ctx: Context, diag: str, sign: str, ndim: int, work: str) -> str:
    """The determinant's sign: the permutation's times the pivots'. numpy's is +0.0 for a
    singular matrix (getrf's zero pivot), where that product may be -0.0 (a -0.0 pivot, or
    a zero times -1): adding +0.0 makes it +0.0 and leaves +-1 and nan as they are."""
    signs = _reduce(ctx, "ReduceProd", ctx.add("Sign", [diag]), -1, ndim - 1, keepdims=0)
    return ctx.add("Add", [ctx.add("Mul", [sign, signs]), _scalar(ctx, 0, work)])


def _det(op, ctx: Context, node):
    """ONNX Det, except on float64, where ONNX Runtime has no CPU kernel: there the sign of
    the row permutation times the product of LU pivots (numpy: sign * exp(logdet))."""
    a, ndim, work = _single(ctx, node)
    if work != "float64":
        return [ctx.add("Det", [a])]
    diag, sign = _pivots(ctx, a, ndim, work)
    # numpy's sign * exp(logdet): +0.0 when singular, else a product that underflows to a
    # zero signed as the determinant
    size = _reduce(ctx, "ReduceProd", ctx.add("Abs", [diag]), -1, ndim - 1, keepdims=0)
    return [ctx.add("Mul", [_det_sign(ctx, diag, sign, ndim, work), size])]


def _slogdet(op, ctx: Context, node):
    """numpy.linalg.slogdet from the LU pivots: (sign, sum of log |pivot|); a zero pivot
    gives (0, -inf)."""
    a, ndim, work = _single(ctx, node)
    diag, sign = _pivots(ctx, a, ndim, work)
    logs = _reduce(ctx, "ReduceSum", ctx.add("Log", [ctx.add("Abs", [diag])]), -1, ndim - 1,
                   keepdims=0)
    real = node.outputs[1].type.dtype
    return [_det_sign(ctx, diag, sign, ndim, work), ctx.cast(logs, work, real)]


for _op, _rule in ((Cholesky, _cholesky), (SolveTriangular, _solve_triangular),
                   (CholeskySolve, _cholesky_solve), (Solve, _solve),
                   (MatrixInverse, _matrix_inverse), (Det, _det), (SLogDet, _slogdet)):
    convert_op.register(_op)(_rule)
    blockwise_rule.register(_op)(_rule)
