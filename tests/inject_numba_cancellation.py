"""A pytest plugin (-p inject_numba_cancellation) giving PyTensor's Numba backend the textbook
log1p and expm1 kernels, ``log(1 + x)`` and ``exp(x) - 1`` (zero's sign kept, right on nan and
the infinities): wrong by many ulps at small |x| only. The Numba backends run in a child process
(conformance.session.isolate.Sandbox), so the plugin asks the child to import this module too.
The harness must blame pytensor (tests/test_ulp_mutants.py)."""

import math
import multiprocessing

from conformance.session.isolate import Isolated

Isolated.PRELOAD.append(__name__)


def _patch() -> None:
    from pytensor.link.numba.dispatch import basic as numba_basic
    from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key
    from pytensor.scalar.basic import Expm1, Log1p

    @numba_funcify_and_cache_key.register(Log1p)
    def _textbook_log1p(op, node, **kwargs):
        @numba_basic.numba_njit
        def log1p(x):
            return x if x == 0 else math.log(1.0 + x)

        return log1p, None  # never cached: the disk cache holds the right kernel

    @numba_funcify_and_cache_key.register(Expm1)
    def _textbook_expm1(op, node, **kwargs):
        @numba_basic.numba_njit
        def expm1(x):
            return x if x == 0 else math.exp(x) - 1.0

        return expm1, None


# patched in the child only: importing PyTensor in the pytest process before the conformance
# plugin has set its compile directory would take that choice away
if multiprocessing.parent_process() is not None:
    _patch()
