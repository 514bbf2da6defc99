"""What a claim's code may not change for the claims after it, when it runs in this process.

``verify`` and ``falsify`` run each claim's code in a worker process of its own by default
(:mod:`.workers`), where an exit, a hang, a changed directory, a monkeypatched module or noise on
stdout stay with it. Run in the caller's process (``--isolation none``, the Python API, the
pytest plugin, ``--raise``), a claim's code is still held to this much by :func:`guarded`:

* the working directory is given back when the claim ends (an ``os.chdir`` in a check);
* what it prints goes to stderr, at the file-descriptor level too, so stdout keeps only the
  results (``--json`` stays valid JSON);
* a ``KeyboardInterrupt`` it raises itself is its own failure, not the user's key: only a
  SIGINT that arrived while it ran stops the run (:func:`user_interrupted`);
* with a time limit, an alarm raises :class:`ClaimTimeout` in it when the limit passes (in the
  main thread, between Python bytecodes: a hang inside one C call, or a claim that catches
  ``BaseException``, is stopped only by a worker process).

What no guard in one process can undo: ``os._exit``, a crash of the interpreter, a module of
the engine or of numpy patched for everyone, memory that is never given back. That is what the
worker processes are for.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

__all__ = ["ClaimTimeout", "guarded", "timeout_message", "user_interrupted"]


class ClaimTimeout(BaseException):
    """A claim's code ran past its time limit. A ``BaseException``, like ``KeyboardInterrupt``,
    so that a claim's ``except Exception`` does not swallow it."""

    def __init__(self, seconds: float):
        super().__init__(timeout_message(seconds))
        self.seconds = seconds


def timeout_message(seconds: float) -> str:
    return f"timed out after {seconds:g} s (--claim-timeout)"


_interrupted = threading.Event()


def user_interrupted() -> bool:
    """Whether a SIGINT (the user's Ctrl-C) arrived while the current :func:`guarded` block ran.
    Outside the main thread, where no handler can be installed, every ``KeyboardInterrupt``
    counts as the user's."""
    return _interrupted.is_set() or threading.current_thread() is not threading.main_thread()


@contextlib.contextmanager
def guarded(timeout: float | None = None):
    """Run a claim's code inside: its working directory given back, its stdout sent to stderr,
    the user's interrupts told from its own, and ``timeout`` seconds at most (None or 0: no
    limit). Module docstring."""
    directory = os.getcwd()
    try:
        with _stdout_to_stderr(), _interrupts_recorded(), _alarm(timeout):
            yield
    finally:
        os.chdir(directory)


@contextlib.contextmanager
def _stdout_to_stderr():
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no file descriptors 1 and 2 to swap (an embedded interpreter): Python's streams only
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _interrupts_recorded():
    if not _main_thread():
        yield
        return
    _interrupted.clear()
    previous = signal.getsignal(signal.SIGINT)

    def record(signum, frame):
        _interrupted.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, record)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _alarm(seconds: float | None):
    if not seconds or not _main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise ClaimTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
