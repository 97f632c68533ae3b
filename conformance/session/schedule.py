"""xdist scheduling that keeps a registry row on one worker, the same one run after run.

A row's tests (its dtypes and opsets) share graphs, compiled functions and one batch of C code
(conformance.backends.cbatch), so they go to one worker as one unit. Each unit has a home
worker: the one that ran it last time, else one chosen by a balanced split by size; with a
compile directory per worker (conformance.compile.pytensor_env) a warm run finds each row's modules
where they were compiled. A worker runs its longest units first (last run's seconds) and,
with none of its own left, takes over the longest unit left, so an uneven split costs little
wall time and the run ends on short units.
"""

from __future__ import annotations

import re
import zlib
from collections import OrderedDict

from xdist.scheduler import LoadScopeScheduling

_ROW = re.compile(r"::test_op\[([A-Za-z0-9_]+)\[")


def row_scope(nodeid: str) -> str:
    """The registry row of a conformance test id; other tests are their own scope."""
    found = _ROW.search(nodeid)
    return f"row:{found.group(1)}" if found else nodeid


#: pytest cache key: which worker ran each unit last time (see RowAffinityScheduling)
PLACED = "conformance/units-placed"


class RowAffinityScheduling(LoadScopeScheduling):
    """``--dist load`` for the conformance run: one work unit per row, each with a home worker.

    A unit's home is the worker that ran it last time with as many workers (pytest's cache),
    where its compiled modules are: a worker that ran out of its own units and took one from
    the other made the thief that unit's home. Units not seen before are split by size."""

    #: unit -> index of the worker it went to in this run (saved for the next one)
    placed: dict[str, int]
    #: units a worker took over from their home worker, in order (they compile there again)
    moved: list[str]
    #: unit -> seconds its tests took in this run (saved: the next run starts the longest)
    seconds: dict[str, float]

    def _split_scope(self, nodeid: str) -> str:
        return row_scope(nodeid)

    def _homes(self) -> dict[str, int]:
        """Unit -> worker index: last run's placement, then the largest new units first onto
        the least loaded worker, ties broken by a stable hash."""
        if getattr(self, "_home_of", None) is None:
            workers = len(self.nodes)
            self._home_of = {scope: index for scope, index in self._last(workers).items()
                             if scope in self.workqueue and 0 <= index < workers}
            loads = [0] * workers
            for scope, index in self._home_of.items():
                loads[index] += len(self.workqueue[scope])
            units = sorted(((k, v) for k, v in self.workqueue.items() if k not in self._home_of),
                           key=lambda kv: (-len(kv[1]), zlib.crc32(kv[0].encode())))
            for scope, tests in units:
                index = min(range(workers), key=lambda i: (loads[i], i))
                self._home_of[scope] = index
                loads[index] += len(tests)
            self.placed, self.moved, self.seconds, self._workers = {}, [], {}, workers
            cache = getattr(self.config, "cache", None)
            saved = cache.get(PLACED, {}) if cache is not None else {}
            self._last_seconds = saved.get("seconds", {})
        return self._home_of

    def _cost(self, scope: str) -> float:
        """What the unit took last time (0 when not seen)."""
        return self._last_seconds.get(scope, 0.0)

    def note(self, nodeid: str, seconds: float) -> None:
        """A test phase's duration, added to its unit's (reports reach the controller)."""
        if getattr(self, "seconds", None) is not None:
            scope = row_scope(nodeid)
            self.seconds[scope] = self.seconds.get(scope, 0.0) + seconds

    def save_placement(self) -> None:
        """Called when the run ends: where each unit ran, for the next run's homes (added to
        what earlier runs with as many workers saved, so a run of a few rows forgets none)."""
        cache = getattr(self.config, "cache", None)
        if cache is not None and getattr(self, "placed", None):
            units = {**self._last(self._workers), **self.placed}
            seconds = {**self._last_seconds,
                       **{k: round(v, 3) for k, v in self.seconds.items()}}
            cache.set(PLACED, {"workers": self._workers, "units": units, "seconds": seconds})

    def _last(self, workers: int) -> dict[str, int]:
        """Where units ran in earlier runs with ``workers`` workers (none without a cache)."""
        cache = getattr(self.config, "cache", None)
        last = cache.get(PLACED, {}) if cache is not None else {}
        return last.get("units", {}) if last.get("workers") == workers else {}

    def _assign_work_unit(self, node) -> None:
        homes = self._homes()
        workers = sorted(self.nodes, key=lambda n: int(re.sub(r"\D", "", n.gateway.id) or 0))
        index = workers.index(node) if node in workers else 0
        own = [s for s in self.workqueue if homes.get(s, index) == index]
        # The longest first (by last run's seconds; queue order on a tie, as in a first run),
        # so that the run ends on short units and no worker idles long at the end. With none
        # of its own left a worker takes over the longest of the rest, from the back on a tie
        # (home workers start at the front).
        scope = max(own or list(reversed(self.workqueue)), key=self._cost)
        self.placed[scope] = index
        if homes.get(scope, index) != index:
            self.moved.append(scope)
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, OrderedDict())[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some(
            [collection.index(nodeid) for nodeid, done in work_unit.items() if not done])

    def _reschedule(self, node) -> None:
        """As LoadScopeScheduling's, but a worker always gets a second test or is told that none
        follows: an xdist worker holds back its last test until it learns which test comes
        next, so a worker that took over one unit of a crashed one would wait forever."""
        super()._reschedule(node)
        while self.workqueue and not node.shutting_down and self._pending_of(
                self.assigned_work[node]) < 2:
            self._assign_work_unit(node)
        if not self.workqueue and not node.shutting_down:
            node.shutdown()

    def remove_node(self, node) -> str | None:
        """A crashed worker's unfinished tests go back to the queue, except the one it was
        running: xdist reports that one as crashed, and running it again would crash again
        (LoadScopeScheduling puts it back too, so a crashing test loops through workers)."""
        workload = self.assigned_work.pop(node)
        pending = [(scope, nodeid) for scope, unit in workload.items()
                   for nodeid, done in unit.items() if not done]
        if not pending:
            return None
        scope, crashitem = pending[0]
        workload[scope][crashitem] = True
        for scope, unit in workload.items():
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem
