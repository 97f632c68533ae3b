"""What differs between the PyTensor releases this project supports (2.38, 3.0.x, 3.3.x), in
one place and as data; the converter and the conformance harness read it from here.

- :data:`CLASSES` says where each release keeps an op class or helper. :func:`lookup` returns
  it, or None on a release that lacks it: a rule or registry row for an absent class is simply
  not registered, and importing the package never fails.
- :data:`FORMS` says which graph forms the installed release builds (an op property where an
  older release took an input, say), each read off the release's own classes.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable

import pytensor

#: name -> the modules that hold it, newest release first. A name absent from every module is
#: a class the installed release does not have.
CLASSES: dict[str, tuple[str, ...]] = {
    # graph helpers: pytensor.graph.traversal from 3.0 on
    "ancestors": ("pytensor.graph.traversal", "pytensor.graph.basic"),
    "applys_between": ("pytensor.graph.traversal", "pytensor.graph.basic"),
    "equal_computations": ("pytensor.graph.traversal", "pytensor.graph.basic"),
    "io_toposort": ("pytensor.graph.traversal", "pytensor.graph.basic"),
    # 3.3 folds both into AdvancedSubtensor / AdvancedIncSubtensor with an idx_list
    "AdvancedSubtensor1": ("pytensor.tensor.subtensor",),
    "AdvancedIncSubtensor1": ("pytensor.tensor.subtensor",),
    # 3.3 rewrites an outer product into Dot and Add; there is no Ger any more
    "Ger": ("pytensor.tensor.blas",),
    # 3.3 builds deg2rad/rad2deg as a multiplication by a constant
    "Deg2Rad": ("pytensor.scalar.basic",),
    "Rad2Deg": ("pytensor.scalar.basic",),
    # PyTensor < 3 differentiates Softmax with an op of its own
    "SoftmaxGrad": ("pytensor.tensor.special",),
    "TypeCastingOp": ("pytensor.compile.ops",),
    "Pad": ("pytensor.tensor.pad",),
    "Einsum": ("pytensor.tensor.einsum",),
    # linear algebra moved to one package in 3.0 (the old modules still import, deprecated)
    "Cholesky": ("pytensor.tensor.linalg", "pytensor.tensor.slinalg"),
    "CholeskySolve": ("pytensor.tensor.linalg", "pytensor.tensor.slinalg"),
    "Solve": ("pytensor.tensor.linalg", "pytensor.tensor.slinalg"),
    "SolveTriangular": ("pytensor.tensor.linalg", "pytensor.tensor.slinalg"),
    "Det": ("pytensor.tensor.linalg", "pytensor.tensor.nlinalg"),
    "MatrixInverse": ("pytensor.tensor.linalg", "pytensor.tensor.nlinalg"),
    "MatrixPinv": ("pytensor.tensor.linalg", "pytensor.tensor.nlinalg"),
    "SLogDet": ("pytensor.tensor.linalg", "pytensor.tensor.nlinalg"),
    # 3.3 moved conditionals to pytensor.conditional (the old module warns) and added a
    # LazyIfElse whose branches are OpFromGraphs
    "IfElse": ("pytensor.conditional.op", "pytensor.ifelse"),
    "ifelse": ("pytensor.conditional.op", "pytensor.ifelse"),
    "LazyIfElse": ("pytensor.conditional.op",),
    "SparseTensorType": ("pytensor.sparse.type",),
    # user-facing functions whose row exists only where the release has them
    "xlog1py": ("pytensor.tensor.special",),
    # new in 3.3: ndtri(exp(x)), the inverse of the normal CDF at exp(x)
    "NdtriExp": ("pytensor.scalar.math",),
    "ndtri_exp": ("pytensor.tensor.math",),
    "ger": ("pytensor.tensor.blas",),
}


#: the tag of the rewrite that preallocates Scan's output buffers for C's in-place writes,
#: which the JIT linkers leave out: 3.x's name, then 2.38's (an absent tag excludes nothing)
SCAN_PREALLOC_REWRITES = ("scan_reduce_trace_prealloc", "scan_save_mem_prealloc")


@functools.cache
def lookup(name: str):
    """The class or function ``name`` of the installed PyTensor, or None where it has none."""
    try:
        places = CLASSES[name]
    except KeyError:
        raise KeyError(f"{name!r} is not in converter.compat.CLASSES; add where each PyTensor "
                       f"release keeps it (known: {', '.join(sorted(CLASSES))})") from None
    for module_name in places:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # the module itself is new or gone in this release
            continue
        found = getattr(module, name, None)
        if found is not None:
            return found
    return None


def present(*names: str) -> tuple:
    """The classes among ``names`` that the installed release has (for registering rules)."""
    return tuple(c for c in map(lookup, names) if c is not None)


def _prop(module: str, cls: str, prop: str) -> Callable[[], bool]:
    def holds() -> bool:
        return prop in getattr(importlib.import_module(module), cls).__props__
    return holds


def _float16_fold_in_dtype() -> bool:
    """Whether Elemwise's Python implementation multiplies three float16 operands pairwise
    in float16 (3.3: 1.5 * 65504 * 0 is nan) rather than as np.prod does, in float32 (0)."""
    import numpy as np
    import pytensor.tensor as pt

    operands = [pt.vector(dtype="float16") for _ in range(3)]
    node = pt.mul(*operands).owner
    storage = [[None]]
    node.op.perform(node, [np.asarray([v], dtype=np.float16) for v in (1.5, 65504, 0)], storage)
    return bool(np.isnan(storage[0][0]).all())


#: graph form -> whether the installed release builds it, read off its classes.
FORMS: dict[str, Callable[[], bool]] = {
    # 3.3: Join{axis}, Split{len_splits, axis}, SortOp{kind, axis}: the axis is a property of
    # the op; before, it was the op's first (Join) or last input
    "join_axis_property": _prop("pytensor.tensor.basic", "Join", "axis"),
    "split_axis_property": _prop("pytensor.tensor.basic", "Split", "axis"),
    "sort_axis_property": _prop("pytensor.tensor.sort", "SortOp", "axis"),
    # 3.3: advanced indexing keeps an idx_list as basic indexing does (slices are properties)
    "advanced_idx_list": _prop("pytensor.tensor.subtensor", "AdvancedSubtensor", "idx_list"),
    # 3.3: the outer compile's rewrites bake each OpFromGraph's inner graph for its linker
    # (the op only links it); before, the op compiled its inner graph in a mode of its own
    "inner_graph_baked_by_outer": lambda: hasattr(
        importlib.import_module("pytensor.compile.builders").OpFromGraph, "link_mode"),
    # 3.3: variadic float16 add and mul round after each operand; before, they summed or
    # multiplied 3+ operands as numpy's reductions do, in float32
    "float16_variadic_in_dtype": _float16_fold_in_dtype,
}


@functools.cache
def builds(form: str) -> bool:
    """Whether the installed PyTensor builds the graph form ``form`` (a key of FORMS)."""
    try:
        return FORMS[form]()
    except KeyError:
        raise KeyError(f"{form!r} is not in converter.compat.FORMS (known: "
                       f"{', '.join(sorted(FORMS))})") from None


def mutable_fgraph(fgraph):
    """A mutable copy of an inner graph: 3.3 keeps OpFromGraph's and Scan's ``fgraph`` as an
    immutable FrozenFunctionGraph (``unfreeze`` copies it); older releases' is mutable."""
    unfreeze = getattr(fgraph, "unfreeze", None)
    if unfreeze is not None:
        return unfreeze()
    return fgraph.clone(clone_inner_graphs=True)


def like_inner(original, fgraph):
    """``fgraph`` in the form ``original`` (an op's inner graph) has: frozen where it is."""
    return fgraph.freeze() if hasattr(original, "unfreeze") else fgraph


def link_inner_with(op, linker: str) -> None:
    """Have OpFromGraph ``op`` (a copy) link its inner graph with ``linker``, unrewritten.

    Before 3.3 the op compiles its inner graph in the mode of its ``kwargs``. 3.3 ignores
    that mode: the outer compile's rewrites bake the inner graph and ``link_mode`` picks the
    VM (C thunks where a compiler exists) by the outer linker's thunk kind; the instance's
    own ``link_mode`` replaces that choice."""
    if not hasattr(type(op), "link_mode"):
        return
    from pytensor.compile.mode import Mode
    from pytensor.graph.rewriting.basic import SequentialGraphRewriter

    mode = Mode(linker, SequentialGraphRewriter())
    op.link_mode = lambda impl: mode


VERSION = pytensor.__version__
