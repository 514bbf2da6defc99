"""How many cores other processes are using, from /proc/stat, and the torch thread count that follows.

torch's intra-op threads (OpenMP) spin while they wait for each other: with another process
holding one of two cores, a 2-thread op waits for a descheduled partner and runs several
times slower than on 1 thread (benchmarks/bench_verify_load.py measures it). ``--threads auto``
(the default of ``verify`` and ``sweep``) therefore gives torch the cores nobody else is using,
judged from the machine's CPU time minus this process's (and its children's) over the last
interval, and re-judged between claims. Results do not depend on the thread count: work
whose kernels would round differently on another thread count runs in :func:`one_torch_thread`.

The library does the same without the CLI (a notebook, the pytest plugin, a plugin's check):
each batched computation (an algorithm's run, a claim's check, a domain's evaluation) runs in
:func:`follow_load`, which gives torch at most the cores other processes leave free, judged
over the interval since the last judgment (:func:`free_cores_now`), and gives the caller's
count back after. ``CFLBOUNDS_THREADS=fixed`` in the environment (or an explicit ``--threads N``) keeps
the count as set (by ``torch.set_num_threads`` or ``OMP_NUM_THREADS``) instead:
:func:`follow_load` then changes nothing.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait

from ._validation import InvalidParameterError

__all__ = ["OtherLoad", "ThreadGovernor", "one_torch_thread", "on_one_thread_each", "follow_load",
           "free_cores_now", "pin_threads"]

MIN_TICKS = 20  # clock ticks (usually 1/100 s each) of all CPUs: the shortest interval judged


def _machine_busy_ticks() -> tuple[int, int] | None:
    """(busy, total) clock ticks of all CPUs since boot, or None where /proc/stat is missing."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(value) for value in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def _own_ticks() -> int:
    times = os.times()  # this process and its waited-for children, in seconds
    return round((times.user + times.system + times.children_user + times.children_system) * os.sysconf("SC_CLK_TCK"))


class OtherLoad:
    """Cores used by other processes since the last :meth:`cores` call (or since creation)."""

    def __init__(self):
        self._last = self._sample()

    @property
    def measurable(self) -> bool:
        """Whether the machine says how busy it is (``/proc/stat``)."""
        return self._last is not None

    @staticmethod
    def _sample():
        machine = _machine_busy_ticks()
        return None if machine is None else (*machine, _own_ticks())

    def cores(self) -> float | None:
        """Average number of cores other processes kept busy over the interval; None when the
        machine does not say (no /proc/stat) or the interval is too short to judge (under
        ``MIN_TICKS`` clock ticks of all CPUs together, about 0.1 s on 2 CPUs); a short interval
        is not consumed, so it is judged on when it is long enough."""
        now = self._sample()
        if now is None or self._last is None:
            return None
        busy, total, own = (a - b for a, b in zip(now, self._last))
        if total < MIN_TICKS:
            return None
        self._last = now
        return max(0.0, (busy - own) / total * (os.cpu_count() or 1))


class ThreadGovernor:
    """``--threads``: a fixed count, or ``"auto"``: torch gets :func:`free_cores_now` (all the
    cores when the machine does not say) now and again at each :meth:`adjust` (between claims),
    so a neighbour that starts or stops mid-run is followed. ``chosen`` lists the counts used,
    for the run's metadata."""

    def __init__(self, threads: int | str):
        import torch

        _setting()  # a bad CFLBOUNDS_THREADS is one line before any work
        self.auto, self.chosen = threads == "auto", []
        self._torch = torch
        self._set(self._free() if self.auto else int(threads))

    @staticmethod
    def _free() -> int:
        free = free_cores_now()
        return (os.cpu_count() or 1) if free is None else free

    def _set(self, count: int) -> None:
        pin_threads(not self.auto)  # an explicit count is kept: follow_load leaves it alone
        self._torch.set_num_threads(count)
        if not self.chosen or self.chosen[-1] != count:
            self.chosen.append(count)

    def adjust(self) -> None:
        if self.auto:
            self._set(self._free())


_CALLER = {"threads": None}  # torch's count outside the outermost one_torch_thread, while inside it
_WORKER = threading.local()  # .busy: this thread runs items of on_one_thread_each
# on_one_thread_each's threads, kept between calls: a fresh thread's first torch call sets up its
# OpenMP state (measured: 0.5-4 ms per call with fresh threads against tens of microseconds kept)
_POOL = {"executor": None, "workers": 0, "lock": threading.Lock()}


def _forget_pool() -> None:
    """A forked child has none of its parent's threads: it starts its own pool when it needs one."""
    _POOL.update(executor=None, workers=0, lock=threading.Lock())


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere no process forks
    os.register_at_fork(after_in_child=_forget_pool)


@contextlib.contextmanager
def one_torch_thread():
    """Run the enclosed torch work on one intra-op thread, then give the caller's count back
    (usable as a decorator; a nested use changes nothing).

    For float64 numbers that are stored: a kernel on several threads may split a reduction
    between them (measured with torch 2.13's MKL on 2 cores, 2026-11-28: a Cholesky factor, the
    batched mat-vec ``X_i model`` and a float32 GEMM over 256 points each changed in their last
    bits from 1 to 2 threads), so the result would follow ``--threads``, the machine's cores
    and the executor (a Ray task computes on one CPU). On one thread every kernel is the same
    code whatever the caller's count, so the result depends on the inputs alone (on one CPU
    type: another CPU's kernels may round otherwise). Cost: the enclosed work loses its
    parallelism (:func:`on_one_thread_each` gives it back for independent pieces); switching
    costs about a microsecond."""
    import torch

    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    _CALLER["threads"] = threads
    try:
        yield
    finally:
        _CALLER["threads"] = None
        torch.set_num_threads(threads)


# work (flops, about) below which on_one_thread_each runs the items in order: handing items to the
# kept threads and waiting for them costs 0.1-0.3 ms (measured on 2 cores), a few million flops
PARALLEL_FLOPS = 2e7


def on_one_thread_each(function, items, flops: float = float("inf")) -> list:
    """``[function(item) for item in items]``, up to the caller's torch thread count of items at
    once, each on its own Python thread computing on one intra-op thread.

    The parallelism :func:`one_torch_thread` gives up, back for independent pieces of work
    whose numbers are stored: every item is computed by the same single-threaded kernels as in
    a serial loop on one thread, so every result is bitwise the same whatever the thread count,
    and only the wall time changes (torch's kernels release the GIL). The caller's count is
    the one outside :func:`one_torch_thread` if called inside it, so ``--threads 1`` or a Ray
    task of one CPU runs the items in order, and so does work of fewer than ``PARALLEL_FLOPS``
    ``flops`` in all (the caller's estimate). ``function`` must not write what another item
    reads; the items are split the same way whatever the count, by the caller. Called from an
    item, it runs its own items in order. An item's exception is raised once all have ended.
    The threads are kept for the next call (a forked child makes its own)."""
    import torch

    items = list(items)
    workers = 1 if getattr(_WORKER, "busy", False) or flops < PARALLEL_FLOPS \
        else min(len(items), _CALLER["threads"] or torch.get_num_threads())
    with one_torch_thread():
        if workers < 2:
            return [function(item) for item in items]

        def item_on_one_thread(item):
            _WORKER.busy = True
            if torch.get_num_threads() != 1:
                torch.set_num_threads(1)  # this OS thread's own OpenMP count (the global one is 1 already)
            return function(item)

        pool = _pool(workers)
        futures = [pool.submit(item_on_one_thread, item) for item in items]
        wait(futures)
        return [future.result() for future in futures]


def _pool(workers: int) -> ThreadPoolExecutor:
    """The kept pool of ``workers`` threads (a new one when another count is asked)."""
    with _POOL["lock"]:
        if _POOL["workers"] != workers:
            if _POOL["executor"] is not None:
                _POOL["executor"].shutdown(wait=True)
            _POOL.update(executor=ThreadPoolExecutor(workers, thread_name_prefix="cflbounds-one-thread"),
                         workers=workers)
        return _POOL["executor"]


PIN_VARIABLE = "CFLBOUNDS_THREADS"  # "auto" (default): follow the load; "fixed": keep torch's count as set
FIRST_WAIT = 0.3  # seconds the first judgment may wait for an interval long enough to judge (MIN_TICKS)
_FOLLOWED = {"load": OtherLoad(), "free": None, "pinned": False}  # the interval starts when cflbounds loads


def pin_threads(pinned: bool) -> None:
    """Keep torch's thread count as the caller sets it (True), or let :func:`follow_load` follow
    the load again (False); ``CFLBOUNDS_THREADS=fixed`` in the environment keeps it too."""
    _FOLLOWED["pinned"] = pinned


def _setting() -> str:
    """``CFLBOUNDS_THREADS``: ``"auto"`` (unset) or ``"fixed"``; anything else is an error."""
    setting = os.environ.get(PIN_VARIABLE, "auto")
    if setting not in ("auto", "fixed"):
        raise InvalidParameterError(f"The environment variable {PIN_VARIABLE} must be 'auto' (follow the load, the "
                                    f"default) or 'fixed' (keep torch's thread count as set). Got {setting!r} instead.")
    return setting


def _pinned() -> bool:
    return _setting() == "fixed" or _FOLLOWED["pinned"]


def free_cores_now() -> int | None:
    """The cores other processes left free since the last judgment (at least 1): the last
    judgment again when too little time has passed to judge anew (under ``MIN_TICKS``, about
    0.1 s on 2 CPUs). The first judgment of a process waits for that much time since cflbounds
    was loaded, at most ``FIRST_WAIT`` seconds and usually not at all; None where the machine
    does not say (no ``/proc/stat``)."""
    load = _FOLLOWED["load"]
    cores, waited = load.cores(), 0.0
    while cores is None and _FOLLOWED["free"] is None and load.measurable and waited < FIRST_WAIT:
        time.sleep(0.02)
        waited += 0.02
        cores = load.cores()
    if cores is not None:
        _FOLLOWED["free"] = max(1, (os.cpu_count() or 1) - round(cores))
    return _FOLLOWED["free"]


@contextlib.contextmanager
def follow_load():
    """Run the enclosed batched torch work on at most the cores other processes leave free
    (:func:`free_cores_now`), then give the caller's count back (usable as a decorator).

    torch's OpenMP threads spin while they wait for each other, so with another process on
    one of two cores a 2-thread computation waits for a descheduled partner at every op and
    runs several times slower than on the one free core (``benchmarks/bench_busy_core.py``
    measures it). On a quiet machine the count is left as it is; the judgment reads
    ``/proc/stat`` once (about 80 µs in all, measured by that script). Nothing changes when the count is pinned
    (:func:`pin_threads`, ``CFLBOUNDS_THREADS=fixed``, ``--threads N``) or the machine does not say."""
    import torch

    free = None if _pinned() else free_cores_now()
    threads = torch.get_num_threads()
    if free is None or free >= threads:
        yield
        return
    torch.set_num_threads(free)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
