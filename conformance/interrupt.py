"""Ctrl-C that always stops the run.

Python raises KeyboardInterrupt wherever the main thread happens to be when SIGINT arrives.
The harness frees each row's compiled functions with a garbage collection, and a
KeyboardInterrupt raised inside a weakref callback or ``__del__`` that the collection runs is
printed and swallowed: the run went on as if nothing had happened. The handler here remembers
the interrupt as well as raising it, and ``check()`` raises it again at the next example or
test, where nothing can swallow it.
"""

from __future__ import annotations

import signal

_pending = False


def _handler(signum, frame):
    global _pending
    _pending = True
    raise KeyboardInterrupt


def install() -> None:
    """Take over SIGINT unless someone other than Python's default handler holds it."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handler)


def check() -> None:
    """Raise KeyboardInterrupt if one arrived and may have been swallowed."""
    if _pending:
        raise KeyboardInterrupt("interrupted earlier (the first KeyboardInterrupt was swallowed)")
