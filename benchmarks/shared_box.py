"""The shared machine, for the benchmarks: how busy it is, and a busy neighbour on demand.

* :func:`busy_seconds`: CPU seconds all CPUs have been busy since boot (``/proc/stat``);
* :class:`Stage`: a stage's wall time and the cores other processes kept busy meanwhile;
* :func:`busy_neighbour`: a process spinning on one core (a pure-Python loop, the kind of
  neighbour a shared machine has) for the enclosed block, stopped by its process id after.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time

from cflbounds._threads import _machine_busy_ticks

__all__ = ["busy_seconds", "Stage", "busy_neighbour"]


def busy_seconds() -> float:
    """CPU seconds all CPUs have been busy since boot (all processes), from ``/proc/stat`` (read
    as the library's load following reads it); NaN where the machine does not say."""
    ticks = _machine_busy_ticks()
    return float("nan") if ticks is None else ticks[0] / os.sysconf("SC_CLK_TCK")


class Stage:
    """Wall time of a stage (``seconds``) and the cores other processes kept busy meanwhile
    (``others``: the machine's busy CPU time minus this process's and its finished children's)."""

    @staticmethod
    def _own() -> float:
        t = os.times()  # this process and its finished children
        return t.user + t.system + t.children_user + t.children_system

    def __enter__(self):
        self.wall, self.busy, self.own = time.perf_counter(), busy_seconds(), self._own()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.wall
        own = self._own() - self.own
        self.others = max(0.0, (busy_seconds() - self.busy - own) / self.seconds)
        return False

    def __str__(self):
        return f"{self.seconds:.2f} s, other load {self.others:.1f} cores"


def _spin() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_neighbour(settle: float = 1.0):
    """A process spinning on one core for the enclosed block (its pid is yielded), started
    ``settle`` seconds before the block and killed by its id after it, whatever happens."""
    neighbour = multiprocessing.Process(target=_spin, daemon=True)
    neighbour.start()
    try:
        time.sleep(settle)
        yield neighbour.pid
    finally:
        os.kill(neighbour.pid, signal.SIGKILL)
        neighbour.join()
