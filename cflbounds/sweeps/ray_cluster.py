"""Ray: joining a cluster (or starting a local one), what every task asks for, and the retry policy.

``--executor ray`` joins the cluster at ``--address`` (or ``$RAY_ADDRESS``) and otherwise
starts a private local Ray instance on this machine. An address is checked before any work
starts: nothing answering there is an :class:`~cflbounds._validation.InvalidParameterError`
(exit 2, one line), found in seconds instead of Ray's own minute of retries.

Retry policy (:data:`MAX_RETRIES`): a task whose worker process died (killed, out of memory,
its node lost) is run again, up to ``MAX_RETRIES`` more times; Ray does that by itself. A task
that raised an exception of its own (bad input, a numerical error) is never retried: it would
fail the same way again, since a task's result depends only on its arguments. Its exception
reaches the caller as itself, with its own message (:func:`as_finished`). Results are the
same on any attempt and any node: every seed is derived from cell and claim keys, never from
where or when a task runs.

Threads: a task asks for one CPU, so Ray starts its worker with ``OMP_NUM_THREADS=1`` and torch
computes on one thread. numpy's and scipy's BLAS (OpenBLAS) would follow that variable too; each
task runs with the BLAS thread count of the process that submitted it (:func:`submitter`), as a
local run would. No stored number depends on either count: the work whose last digits did (the
early-exit certificate's float64 work, MGD.L2's and MGD.T1's SLSQP, measured 2026-11-27/28) runs
on one thread whatever the setting (:func:`cflbounds._threads.one_torch_thread`,
:mod:`cflbounds.bounds._blas`; tests/test_thread_count.py); passing the BLAS count on is a
safeguard for work not yet shown to be independent of it.
"""
from __future__ import annotations

import logging
import os
import socket

from .._validation import InvalidParameterError

__all__ = ["MAX_RETRIES", "ADDRESS_ENV", "cluster_address", "check_address", "connect", "task_options",
           "blas_threads", "submitter", "as_finished"]

MAX_RETRIES = 3  # further attempts of a task whose worker process died; an exception of its own: none
ADDRESS_ENV = "RAY_ADDRESS"
CONNECT_SECONDS = 5.0  # how long the address check waits for the head node to answer


def cluster_address(address: str | None = None) -> str | None:
    """The cluster to join: ``address``, else ``$RAY_ADDRESS``, else None (start a local one)."""
    return address or os.environ.get(ADDRESS_ENV) or None


def _host_port(address: str) -> tuple[str, int]:
    """``host:port`` (or ``ray://host:port``, Ray Client's form) as its two parts."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidParameterError(f"The '--address' option must be HOST:PORT of a Ray head node (or 'auto'). "
                                    f"Got {address!r} instead.")
    return host.strip("[]"), int(port)


def check_address(address: str | None) -> None:
    """Refuse, before any work, an address where no head node answers (exit 2, one line).

    ``auto`` (the cluster ``ray start`` last started on this machine) is left to Ray."""
    if address is None or address == "auto":
        return
    host, port = _host_port(address)
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise InvalidParameterError(f"No Ray cluster answers at --address {address} ({reason}); start one with "
                                    f"`ray start --head` or give its head node's HOST:PORT.") from None


def connect(address: str | None = None):
    """The ``ray`` module, joined to the cluster at :func:`cluster_address` or to a new local
    Ray instance. The address is checked first (:func:`check_address`); a process already
    connected (a driver called twice, or a task on a worker) keeps the cluster it has.

    Ray's own log lines stay off the terminal (they go to its session logs)."""
    import ray

    if ray.is_initialized() and address is None:
        return ray
    address = cluster_address(address)
    check_address(address)
    if ray.is_initialized():
        return ray
    options = dict(log_to_driver=False, logging_level=logging.ERROR, configure_logging=True)
    if address is None:
        options.update(address="local", include_dashboard=False)
    else:
        options.update(address=address)
    try:
        ray.init(**options)
    except ConnectionError as error:  # something answered at the address, but not a Ray head node
        raise InvalidParameterError(f"Cannot join a Ray cluster at --address {address}: "
                                    f"{str(error).strip().splitlines()[0]}") from None
    return ray


def task_options(device: str = "cpu") -> dict:
    """What a task asks Ray for: one CPU, and one GPU when it computes on CUDA; the retry policy."""
    return {"num_cpus": 1, "num_gpus": 1 if str(device).startswith("cuda") else 0,
            "max_retries": MAX_RETRIES, "retry_exceptions": False}


def blas_threads() -> int | None:
    """The thread count of the BLAS libraries numpy and scipy compute with here (None: none found)."""
    import scipy.linalg  # noqa: F401  (loads scipy's BLAS, so that it is counted)
    from threadpoolctl import threadpool_info

    counts = [library["num_threads"] for library in threadpool_info() if library["user_api"] == "blas"]
    return max(counts) if counts else None


def _call_with_blas_threads(function, blas: int | None, *args, **kwargs):
    """``function(*args, **kwargs)`` with ``blas`` BLAS threads (a task's body on a worker)."""
    if blas is None:
        return function(*args, **kwargs)
    import scipy.linalg  # noqa: F401  (loaded first: the limit reaches only libraries loaded already)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=blas, user_api="blas"):
        return function(*args, **kwargs)


def submitter(ray, function, device: str = "cpu"):
    """``submit(*args, **kwargs)``: run ``function(*args, **kwargs)`` as a Ray task and return its
    ObjectRef. ``function`` must be a module-level function (workers import it by name); the
    task gets :func:`task_options` for ``device`` and this process's BLAS thread count, and is
    named after ``function`` (Ray's task lists and a worker's process title, ``ray::NAME``)."""
    task = ray.remote(_call_with_blas_threads).options(name=function.__name__, **task_options(device))
    blas = blas_threads()
    return lambda *args, **kwargs: task.remote(function, blas, *args, **kwargs)


def as_finished(ray, futures: dict):
    """Yield ``(futures[ref], result)`` for each task of ``futures`` (ObjectRef -> key) as it
    finishes, in finish order. A task's own exception is raised here as itself (its type and
    message, not Ray's wrapper), after the tasks still running are cancelled."""
    futures = dict(futures)
    try:
        while futures:
            done, _ = ray.wait(list(futures), num_returns=1)
            for ref in done:
                key = futures.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as error:
                    cause = error.cause
                    raise (cause if isinstance(cause, BaseException) else error) from None
                yield key, result
    finally:
        for ref in futures:
            ray.cancel(ref)
