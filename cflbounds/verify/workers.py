"""Each claim's code in a worker process of its own (``--isolation process``, the default of
``cflbounds verify`` and ``cflbounds falsify``).

A claim's check, bound or domain evaluation is someone else's code. In a process of its own,
everything it does to its process stays there: ``sys.exit`` or ``os._exit``, a crash of the
interpreter, an endless loop (killed at the claim's time limit), ``os.chdir``, a module of the
engine, of numpy or of torch patched, torch's default dtype changed, prints on stdout (sent to
stderr). The claim ends in ``error`` saying what happened, and every other claim runs as it
would have.

The processes come from Python's *forkserver*: a server started once per Python process that
has imported torch, the engine and every installed plugin (:mod:`._preload`), and forks a fresh
child for each claim, in a fraction of a second. The server never runs torch's parallel
kernels, so its children can (a child forked from a process that already ran them would hang in
OpenMP). A child therefore finds its claim in the registry of the *installed* plugins, read when
the server started: a claim registered some other way (a test's fake entry point, a package
installed into a running interpreter afterwards) cannot run in a worker, and is reported so.

What crosses between the processes is data: the request goes out pickled (from this process
to its own child), and everything that comes back is read as data only (JSON messages, and
the result in the checkpoint format of :mod:`.checkpoints`), so a claim's process cannot make
this one execute anything.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import time
import traceback
from multiprocessing.connection import wait
from typing import Callable

from .._read_json import JSONProblem, parse_json
from .failure import ClaimFailure, declared_at
from .guards import timeout_message

__all__ = ["DEFAULT_ISOLATION", "WorkerFailure", "run_in_worker"]

# Where `cflbounds verify` and `falsify` run claims unless told (--isolation): "process" costs a
# fork per claim and the experiments that cross between them (docs/performance.md measures it).
DEFAULT_ISOLATION = "process"

_PRELOAD = ["cflbounds.verify._preload"]
_MESSAGE, _RESULT, _FAILED = b"M", b"R", b"E"


class WorkerFailure(Exception):
    """A claim's worker process gave no result: ``kind`` is ``timeout``, ``exit`` (it ended
    without one: ``os._exit``, a crash, a signal) or ``failed`` (an exception outside the claim's
    contained code); ``message`` says what happened in words."""

    def __init__(self, kind: str, message: str, timeout: float | None = None):
        super().__init__(message)
        self.kind, self.message, self.timeout = kind, message, timeout

    def as_claim_failure(self, stage: str, function) -> ClaimFailure:
        """What the claim's result says of it: a time-out at ``stage`` (``check`` or
        ``evaluation``), else stage ``process`` located at ``function``'s definition (the
        claim's code that was running; where it was when the process died is not known)."""
        if self.kind == "timeout":
            return ClaimFailure(stage, "ClaimTimeout", timeout_message(self.timeout), "")
        lines = self.message.strip().splitlines()
        return ClaimFailure("process", "WorkerExit" if self.kind == "exit" else "WorkerFailure",
                            lines[-1] if lines else "(no message)", declared_at(function) or "",
                            self.message if self.kind == "failed" else "")


def _context(preload: tuple[str, ...]):
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD + [name for name in preload if name not in _PRELOAD])
    return context


def run_in_worker(task: Callable, arguments: tuple, *, timeout: float | None = None,
                  on_message: Callable[[dict], None] | None = None, name: str = "cflbounds claim",
                  preload: tuple[str, ...] = ()) -> bytes:
    """``task(*arguments, send=send)`` in a fresh worker process; the bytes it returns.

    ``task`` must be a module-level function (it is pickled by reference, and its module
    imported in the worker unless the server has it: ``preload`` names modules for the server
    to import when it starts, e.g. the search's for a claim with a domain); ``send(message)``
    lets it pass small JSON messages (progress) to ``on_message`` while it runs. At most
    ``timeout`` seconds (None or 0: no limit), then the process and everything it started are
    killed. Raises :class:`WorkerFailure` when no result came back; an interrupt of this process
    (Ctrl-C) kills the worker and goes on up."""
    context = _context(preload)
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=_work, args=(task, arguments, writer, os.getcwd(), _threads()), name=name,
                              daemon=True)
    process.start()
    writer.close()
    deadline = time.monotonic() + timeout if timeout else None
    try:
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = wait([reader, process.sentinel], timeout=remaining)
            if not ready:
                raise WorkerFailure("timeout", timeout_message(timeout), timeout)
            if reader not in ready:
                raise WorkerFailure("exit", _ended(process))
            try:
                message = reader.recv_bytes()
            except EOFError:
                raise WorkerFailure("exit", _ended(process)) from None
            kind, body = message[:1], message[1:]
            if kind == _RESULT:
                return body
            if kind == _FAILED:
                raise WorkerFailure("failed", body.decode(errors="replace"))
            if on_message is not None:
                try:
                    message = parse_json(body)  # data, depth and digits bounded: a claim's process wrote it
                except JSONProblem as problem:
                    raise WorkerFailure("failed", f"its process sent a malformed message ({problem})") from None
                on_message(message)
    finally:
        _kill(process)
        reader.close()


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _ended(process) -> str:
    """Why ``process`` ended without a result, in words."""
    process.join(5)
    code = process.exitcode
    if code is None:
        return "its process closed its connection without a result"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        cause = " (the kernel's out-of-memory killer sends it, among others)" if -code == signal.SIGKILL else ""
        return f"its process was killed by signal {name}{cause} before it gave a result"
    return f"its process exited with status {code} before it gave a result (os._exit or a crash in the claim's code)"


def _kill(process) -> None:
    """Stop ``process`` and whatever it started (it leads a process group of its own)."""
    if process.exitcode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:  # not yet a group leader, or gone
            process.kill()
    process.join()
    process.close()


def _work(task, arguments, writer, directory: str, threads: int) -> None:
    """The worker: a process group of its own (the terminal's Ctrl-C reaches the run, which
    stops the worker), stdout sent to stderr, the caller's directory and torch thread count,
    then the task; its result or failure sent back, and the process ends at once (no exit
    handlers of the claim's code)."""
    os.setsid()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.chdir(directory)
    import torch

    torch.set_num_threads(threads)

    def send(message: dict) -> None:
        writer.send_bytes(_MESSAGE + json.dumps(message).encode())

    try:
        reply = _RESULT + task(*arguments, send=send)
    except BaseException:  # noqa: BLE001 - whatever it was, the caller hears of it
        reply = _FAILED + traceback.format_exc().encode()
    try:
        writer.send_bytes(reply)
    finally:
        sys.stderr.flush()
        os._exit(0)
