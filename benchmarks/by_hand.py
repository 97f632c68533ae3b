"""The linear regression of ``benchmarks/models.py`` written directly in ONNX, as few nodes
as the algebra allows (36, where the converter emits 57): what an ideal converter could emit.
Both products are matrix products of a column (ONNX Runtime's double MatMul with a vector
operand is not a BLAS call: 20 times slower at 100,000 rows), and the elementwise steps run
on vectors (a scalar broadcast along an [n, 1] column is 15 times slower than along [n]).
Timed beside the converter's export and PyTensor, it tells whether a ratio is the
converter's to improve or ONNX Runtime's per-call and per-node cost.

With s the log of sigma, w = exp(-s), z = (y - X beta - alpha) w and SS = sum(z**2):

    logp      = C + (1 - n) s - (sum(beta**2) + alpha**2) / 200 - exp(2 s) / 50 - SS / 2
    d/dbeta   = -beta / 100 + X^T (z w)
    d/dalpha  = -alpha / 100 + sum(z w)
    d/ds      = 1 - n - exp(2 s) / 25 + SS
"""

from __future__ import annotations

import numpy as np


def _log32(x: float) -> float:
    """``pt.log`` of a Python float as the model computes it: PyTensor makes the literal a
    float32 constant, so the model's ``log(10)`` and ``log(5)`` are float32 logs."""
    return float(np.log(np.float32(x)))


def linear_regression(n: int):
    """An ONNX model with the inputs (beta, alpha, sigma_log__) and outputs (logp and the
    three gradients) of ``benchmarks.models.linear_regression(n)``, on the same data."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from benchmarks.models import linear_regression_data

    x, y = linear_regression_data(n)
    half_log_2pi = 0.5 * float(np.log(2 * np.pi))
    const = (4 * (-_log32(10.0) - half_log_2pi) + float(np.log(2.0))
             + (-_log32(5.0) - half_log_2pi) - n * half_log_2pi)
    values = {"X": x, "XT": np.ascontiguousarray(x.T), "y": y, "m100": -0.01,
              "m25": -0.04,
              "one_n": 1.0 - n, "m200": -0.005, "m50": -0.02, "mhalf": -0.5, "C": const}
    stored = [numpy_helper.from_array(np.asarray(v, dtype=np.float64), k)
              for k, v in values.items()]
    stored.append(numpy_helper.from_array(np.asarray([1], dtype=np.int64), "last"))
    steps = [  # (op, inputs, output)
        # z, w and SS
        ("Unsqueeze", "beta last", "b1"), ("MatMul", "X b1", "xb1"), ("Squeeze", "xb1 last", "xb"),
        ("Add", "xb alpha", "mu"), ("Sub", "y mu", "r"), ("Neg", "s", "ns"), ("Exp", "ns", "w"),
        ("Mul", "r w", "z"), ("Mul", "z z", "z2"), ("ReduceSum", "z2", "SS"),
        # the gradients
        ("Mul", "z w", "zw"), ("Unsqueeze", "zw last", "zw1"), ("MatMul", "XT zw1", "xtzw1"),
        ("Squeeze", "xtzw1 last", "xtzw"), ("Mul", "beta m100", "pb"),
        ("Add", "pb xtzw", "gbeta"), ("ReduceSum", "zw", "szw"), ("Mul", "alpha m100", "pa"),
        ("Add", "pa szw", "galpha"), ("Add", "s s", "s2"), ("Exp", "s2", "e2s"),
        ("Mul", "e2s m25", "t1"), ("Add", "t1 one_n", "t2"), ("Add", "t2 SS", "gs"),
        # the log-density
        ("Mul", "beta beta", "b2"), ("ReduceSum", "b2", "sb2"), ("Mul", "alpha alpha", "a2"),
        ("Add", "sb2 a2", "q"), ("Mul", "q m200", "lq"), ("Mul", "s one_n", "ls"),
        ("Mul", "e2s m50", "le"), ("Mul", "SS mhalf", "lss"), ("Add", "lq ls", "u1"),
        ("Add", "u1 le", "u2"), ("Add", "u2 lss", "u3"), ("Add", "u3 C", "logp"),
    ]
    nodes = [helper.make_node(op, ins.split(), [out], **({"keepdims": 0} if op == "ReduceSum"
                                                          else {}))
             for op, ins, out in steps]
    double = TensorProto.DOUBLE
    graph = helper.make_graph(
        nodes, "linear_regression_by_hand",
        [helper.make_tensor_value_info("beta", double, [3]),
         helper.make_tensor_value_info("alpha", double, []),
         helper.make_tensor_value_info("s", double, [])],
        [helper.make_tensor_value_info(name, double, shape)
         for name, shape in (("logp", []), ("gbeta", [3]), ("galpha", []), ("gs", []))],
        stored)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


#: models of ``benchmarks/models.py`` with a hand-written ONNX graph, by name
BY_HAND = {"linear_regression": linear_regression}
