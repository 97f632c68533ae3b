"""Ctrl-C that always stops the run.

Python raises KeyboardInterrupt wherever the main thread happens to be when SIGINT arrives.
The harness frees each row's compiled functions with a garbage collection, and a
KeyboardInterrupt raised inside a weakref callback or ``__del__`` that the collection runs is
printed and swallowed: the run went on as if nothing had happened. The handler here remembers
the interrupt as well as raising it, and ``check()`` raises it again at the next example or
test, where nothing can swallow it.
"""

from __future__ import annotations

import itertools
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


def drop_lineless_entries(excinfo) -> None:
    """Make a KeyboardInterrupt's traceback printable: drop the entries without a line number.

    On Python 3.11 SIGINT can arrive at an instruction that has no line number (a ``with``
    block's clean-up, say); its traceback entry's ``tb_lineno`` is None and pytest's printing of
    the interrupt fails with a TypeError, so the run ends with an internal error and exit
    status 1 instead of its summary and status 2. The entries are relinked in place, for the
    interrupt and for each exception it was raised during."""
    exc, seen = excinfo.value, set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = _with_lines(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__
    head = _with_lines(excinfo.tb)
    if head is not excinfo.tb:
        excinfo.traceback = type(excinfo.traceback)(head)


def _with_lines(tb):
    """The chain from ``tb`` without its line-less entries (``tb`` if it has none to drop)."""
    chain = []
    while tb is not None:
        chain.append(tb)
        tb = tb.tb_next
    kept = [t for t in chain if t.tb_lineno is not None]
    if not kept or len(kept) == len(chain):
        return chain[0] if chain else None
    for earlier, later in itertools.pairwise(kept):
        earlier.tb_next = later
    kept[-1].tb_next = None
    return kept[0]
