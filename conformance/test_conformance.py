"""One property test per registry row, dtype and opset (ids like ``exp[float32]``)."""

from conformance.session.runner import check


def test_op(spec, conformance_session):
    check(spec, conformance_session.harness, conformance_session)
