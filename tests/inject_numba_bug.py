"""A pytest plugin (-p inject_numba_bug) giving PyTensor's Numba backend a wrong kernel: tanh of
-inf is +1.0 instead of -1.0, everything else right. The Numba backends run in a child process
(conformance.session.isolate.Sandbox), so the plugin asks the child to import this module too. The
harness must blame pytensor."""

import math
import multiprocessing

from conformance.session.isolate import Isolated

Isolated.PRELOAD.append(__name__)


def _patch() -> None:
    from pytensor.link.numba.dispatch import basic as numba_basic
    from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key
    from pytensor.scalar.basic import Tanh

    @numba_funcify_and_cache_key.register(Tanh)
    def _wrong_tanh(op, node, **kwargs):
        @numba_basic.numba_njit
        def tanh(x):
            return -math.tanh(x) if x == -math.inf else math.tanh(x)

        return tanh, None  # never cached: the disk cache holds the right kernel


# patched in the child only: importing PyTensor in the pytest process before the conformance
# plugin has set its compile directory would take that choice away
if multiprocessing.parent_process() is not None:
    _patch()
