"""``pytensor.function(..., mode="ONNX")`` keeps PyTensor's function semantics: shared state
and updates, several and repeated outputs, borrow, trust_input, copy, givens, every dtype,
every input shape from one compiled function, gradients, scan and ifelse; it refuses at
compile time what it cannot run.

The expected values come from the Python linker without rewrites (``pytensor-py``, the
harness's reference), compiled beside the ONNX function from the same graph, and in one test
from the installed release's default mode (Numba from PyTensor 3 on, C on 2.38).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.io import In, Out
from pytensor.compile.mode import Mode, get_mode

import converter
from conformance.core.oracle import assert_agree
from conformance.registry import DEFAULT_TOL, Tol
from converter import compat

REFERENCE = Mode(linker="py", optimizer=None)
ifelse = compat.lookup("ifelse")


def agree(expected, actual, case: str, backend: str = "pytensor-onnx", dtype="float64"):
    __tracebackhide__ = True
    expected = expected if isinstance(expected, list | tuple) else [expected]
    actual = actual if isinstance(actual, list | tuple) else [actual]
    assert_agree([np.asarray(e) for e in expected], [np.asarray(a) for a in actual],
                 DEFAULT_TOL.get(dtype, Tol()), backend=backend, reference="pytensor-py",
                 case=case)


def both(inputs, outputs, **kwargs):
    """The same graph compiled in the ONNX mode and by the reference."""
    return (pytensor.function(inputs, outputs, mode="ONNX", **kwargs),
            pytensor.function(inputs, outputs, mode=REFERENCE, **kwargs))


def test_modes_are_registered_under_pytensors_names():
    assert isinstance(get_mode("ONNX").linker, converter.link.linker.ONNXLinker)
    assert get_mode("ONNX_REFERENCE").linker.options.evaluator == "reference"
    assert isinstance(pytensor.compile.mode.predefined_linkers["onnx"],
                      converter.link.linker.ONNXLinker)


def test_shared_variables_and_updates_called_repeatedly():
    """A training step: the shared weights are read live at each call and updated."""
    x, y = pt.matrix("x"), pt.vector("y")
    rng = np.random.default_rng(0)
    fns = []
    for mode in ("ONNX", REFERENCE, None):  # None: the installed release's default mode
        w = pytensor.shared(np.zeros(3), name="w")
        b = pytensor.shared(np.float64(0.0), name="b")
        loss = ((pt.dot(x, w) + b - y) ** 2).mean()
        gw, gb = pytensor.grad(loss, [w, b])
        step = pytensor.function([x, y], loss, updates={w: w - 0.1 * gw, b: b - 0.1 * gb},
                                 mode=mode)
        fns.append((step, w, b))
    data = [(rng.normal(size=(5, 3)), rng.normal(size=5)) for _ in range(6)]
    for k, (xv, yv) in enumerate(data):
        losses = [step(xv, yv) for step, _, _ in fns]
        for name, got in zip(("reference", "default mode"), losses[1:], strict=True):
            agree(got, losses[0], f"training step {k}: loss against the {name}")
        agree(fns[1][1].get_value(), fns[0][1].get_value(), f"w after step {k}")
        agree(fns[1][2].get_value(), fns[0][2].get_value(), f"b after step {k}")
    # a value set from outside is what the next call reads
    fns[0][1].set_value(np.ones(3))
    fns[1][1].set_value(np.ones(3))
    agree(fns[1][0](*data[0]), fns[0][0](*data[0]), "loss after set_value")


def test_updates_without_outputs_and_outputs_that_are_inputs_or_repeat():
    x = pt.vector("x")
    count = pytensor.shared(np.int64(0), name="count")
    bump = pytensor.function([], [], updates={count: count + 1}, mode="ONNX")
    for _ in range(3):
        assert bump() == []
    assert count.get_value() == 3
    onnx_fn, ref_fn = both([x], [x, x * 2, x * 2, x])
    value = np.arange(4.0)
    got = onnx_fn(value)
    agree(ref_fn(value), got, "outputs x, 2x, 2x, x")
    assert got[0] is not value, "an output that is an input must be a copy"
    assert got[1] is not got[2], "a repeated output must be two arrays"


def test_borrow_trust_input_copy_and_givens():
    x, s = pt.vector("x"), pt.scalar("s")
    w = pytensor.shared(np.arange(3.0), name="w")
    fn = pytensor.function([In(x, borrow=True)], Out(pt.exp(x) * w, borrow=True), mode="ONNX")
    value = np.array([0.0, 1.0, 2.0])
    agree(np.exp(value) * w.get_value(), fn(value), "borrowed input and output")
    trusted = pytensor.function([x], x + w, mode="ONNX", trust_input=True)
    agree(value + w.get_value(), trusted(value), "trust_input")
    trajectories = []
    for mode in ("ONNX", REFERENCE):  # copies behave as the reference's copies do
        w.set_value(np.arange(3.0))
        step = pytensor.function([x], w.sum(), updates={w: w + x}, mode=mode)
        twin, shared_twin = step.copy(share_memory=False), step.copy(share_memory=True)
        seen = []
        for fn in (step, twin, shared_twin, twin):
            seen.append(fn(np.ones(3)))
            seen.append(w.get_value().copy())
        trajectories.append(seen)
    agree(trajectories[1], trajectories[0], "copies' outputs and w after each call")
    given = pytensor.function([s], x.sum() * s, givens={x: pt.arange(4.0, dtype="float64")},
                              mode="ONNX")
    agree(12.0, given(2.0), "givens")


DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_crosses_in_and_out(dtype):
    x = pt.vector("x", dtype=dtype)
    onnx_fn, ref_fn = both([x], [x, pt.maximum(x, x[::-1]), x.max()])
    value = np.array([0, 1, 1, 0, 1], dtype=dtype)
    got = onnx_fn(value)
    assert [g.dtype for g in got] == [np.dtype(dtype)] * 3
    agree(ref_fn(value), got, f"max and maximum of {dtype}", dtype=dtype)


def test_one_function_serves_every_shape():
    x = pt.tensor3("x")
    onnx_fn, ref_fn = both([x], [pt.special.softmax(x, axis=-1), x.sum(axis=(0, 2))])
    session = onnx_fn.vm.jit_fn
    rng = np.random.default_rng(1)
    for shape in [(1, 1, 1), (2, 3, 4), (0, 3, 2), (5, 0, 1), (3, 1, 7)]:
        value = rng.normal(size=shape)
        agree(ref_fn(value), onnx_fn(value), f"softmax and sum of float64{list(shape)}")
    assert onnx_fn.vm.jit_fn is session, "the function was recompiled for a new shape"


def test_gradient_and_hessian():
    x = pt.vector("x")
    cost = (pt.log1p(pt.exp(x)) * pt.arange(1.0, 4.0)).sum() + (x ** 3).sum()
    grad = pytensor.grad(cost, x)
    hess = pytensor.gradient.hessian(cost, x)
    onnx_fn, ref_fn = both([x], [cost, grad, hess])
    value = np.array([-1.5, 0.25, 2.0])
    agree(ref_fn(value), onnx_fn(value), "cost, gradient and Hessian of softplus and x**3")


def test_scan_and_ifelse():
    x, k = pt.vector("x"), pt.iscalar("k")
    powers, _ = pytensor.scan(lambda prev, base: prev * base, outputs_info=pt.ones_like(x),
                              non_sequences=x, n_steps=k)
    chosen = ifelse(pt.gt(x.sum(), 0), powers[-1], -x)
    onnx_fn, ref_fn = both([x, k], [powers, chosen])
    for value, steps in [([1.5, -0.5, 2.0], 3), ([-1.0, -2.0, 0.5], 2), ([0.5], 1)]:
        value = np.array(value)
        agree(ref_fn(value, steps), onnx_fn(value, steps), f"scan of {steps} steps, ifelse")


def test_reference_evaluator_mode_agrees():
    x = pt.matrix("x")
    out = pt.special.log_softmax(x, axis=0) + pt.erf(x)
    fn = pytensor.function([x], out, mode="ONNX_REFERENCE")
    ref = pytensor.function([x], out, mode=REFERENCE)
    value = np.linspace(-2, 2, 6).reshape(2, 3)
    agree(ref(value), fn(value), "log_softmax + erf", backend="onnx-reference mode")


def test_variants_take_options_and_refuse_bad_ones():
    x = pt.vector("x")
    mode = converter.onnx_mode(threads=1, optimization="none", opset=converter.MIN_OPSET)
    fn = pytensor.function([x], pt.tanh(x), mode=mode)
    assert fn.vm.jit_fn.model.opset_import[0].version == converter.MIN_OPSET
    agree(np.tanh([0.5, -2.0]), fn(np.array([0.5, -2.0])), "tanh, no ORT optimizations")
    for kwargs, words in [({"threads": 0}, "threads=0"), ({"optimization": "max"}, "max"),
                          ({"evaluator": "jax"}, "evaluator='jax'"), ({"opset": 5}, "opset=5"),
                          ({"providers": "CPUExecutionProvider"}, "providers=")]:
        with pytest.raises(converter.ConversionError, match=words):
            converter.onnx_mode(**kwargs)


def test_refusals_come_at_compile_time():
    x = pt.vector("x")
    with pytest.raises(NotImplementedError, match="random Generator state"):
        rng = pytensor.shared(np.random.default_rng(0))
        pytensor.function([], pt.random.normal(0, 1, size=3, rng=rng), mode="ONNX")
    with pytest.raises(NotImplementedError, match=r"cannot convert .*Op class.* applied to"):
        pytensor.function([x], pt.linalg.svd(pt.outer(x, x))[0], mode="ONNX")
    with pytest.raises(NotImplementedError, match=r"no provider 'NoSuchEP'; .*CPUExecution"):
        pytensor.function([x], pt.exp(x), mode=converter.onnx_mode(providers=("NoSuchEP",)))
    fn = pytensor.function([x], pt.exp(x), mode="ONNX")
    with pytest.raises(TypeError):  # PyTensor's own input check, as in every mode
        fn(np.ones((2, 2)))


def test_a_model_the_runtime_cannot_load_is_refused_at_compile_time(monkeypatch):
    """ONNX Runtime's own message, inside pytensor.function; the model here is one the
    converter never emits (an operator ONNX does not define), put in its place."""
    import onnx
    from onnx import TensorProto, helper

    def unloadable(inputs, outputs, **kwargs):
        graph = helper.make_graph(
            [helper.make_node("NoSuchOperator", ["x"], ["y"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [None])],
            [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [None])])
        return helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])

    monkeypatch.setattr(converter.link.linker, "build_model", unloadable)
    x = pt.vector("x")
    with pytest.raises(NotImplementedError, match=r"ONNX Runtime could not load.*NoSuchOperator"):
        pytensor.function([x], pt.exp(x), mode="ONNX")
