"""Pieces every subcommand uses: a one-line-error parser, list options, text tables, threads."""
from __future__ import annotations

import argparse
import math
import os
import shutil
import textwrap

from .._validation import InvalidParameterError

__all__ = ["Parser", "UsageError", "Once", "csv", "table", "terminal_width", "set_threads", "add_executor_options",
           "add_containment_options", "check_executor_options", "claim_timeout", "isolation", "start_executor",
           "exit_status", "EXIT_VIOLATED", "EXIT_ERROR", "EXIT_WRITE"]

EXIT_VIOLATED = 1  # a claim was violated and --strict was given
EXIT_ERROR = 3  # a claim's own code failed: its verdict (outcome) is 'error'
EXIT_WRITE = 74  # an output could not be written (sysexits.h's EX_IOERR): cflbounds._files.WriteError


def exit_status(outcomes, *, strict: bool) -> int:
    """The exit status of a run whose claims (those asked, those kept from a resumed run
    included) ended in ``outcomes`` (verdict words or falsify outcomes): 3 if any is ``error``
    (DESIGN.md: it outranks ``violated``; the run is incomplete), else 1 if ``strict`` and any
    is ``violated``, else 0."""
    outcomes = list(outcomes)
    if "error" in outcomes:
        return EXIT_ERROR
    return EXIT_VIOLATED if strict and "violated" in outcomes else 0

_LAST_COLUMN_MIN = 20  # a narrower last column wraps a formula into fragments too short to read


class UsageError(InvalidParameterError):
    """A command line argparse refused; ``prog`` names the (sub)command, printed as its prefix."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr (``cflbounds verify: error: ...``) and exit
    status 2."""

    def error(self, message):
        if "the following arguments are required: COMMAND" in message:
            commands = ", ".join(self._subparsers._group_actions[0].choices) if self._subparsers else ""
            message = f"a command is required: {commands} (`{self.prog} --help` says what each does)"
        raise UsageError(self.prog, message)

    def _get_values(self, action, arg_strings):
        # argparse before Python 3.13 drops a '--' given as an option's value ('--seed=--') and
        # stores an empty list, unconverted, where the option's type was expected
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            self.error(f"argument {'/'.join(action.option_strings)}: expected one argument")
        return super()._get_values(action, arg_strings)


class Once(argparse.Action):
    """Store an option's value, refusing a second occurrence (``--sigma 1 --sigma 2`` is ambiguous)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_given_{self.dest}", False):
            parser.error(f"option {option_string} was given twice")
        setattr(namespace, f"_given_{self.dest}", True)
        setattr(namespace, self.dest, values)


def csv(kind):
    """A comma-separated list of ``kind`` values (``--r 0.1,0.25``): at least one, each once.

    An empty item (``--m ,`` or ``--m 50,,70``) is an error, not skipped: skipping it would
    silently run another grid than the one typed.
    """

    def parse(text):
        items = text.split(",")
        try:
            values = [kind(item) for item in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__} values, got {text!r}")
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            raise argparse.ArgumentTypeError(f"{repeated[0]!r} is listed twice in {text!r}")
        return values

    parse.__name__ = f"list of {kind.__name__}"
    return parse


# The largest search a command accepts, per claim. A week of seconds: a longer run is not one
# anybody waits for, and 1e308 would never end. Ten million evaluations: at the fastest
# domain's ~1 ms each that is three hours (the papers' domains take 10 ms to seconds), and the
# search keeps a bounded summary of them (falsify/search.py), so memory stays flat.
MAX_SECONDS = 7 * 24 * 3600.0
MAX_EVALUATIONS = 10_000_000


def non_negative(kind, *, positive: bool = False, maximum=None):
    """An argparse type: a finite ``kind`` (int or float) >= 0 (> 0 if ``positive``), at most
    ``maximum`` if given, else one line saying what it must be and what it got."""
    relation = ("> 0" if positive else ">= 0") + (f" and <= {maximum:g}" if isinstance(maximum, float) else
                                                   f" and <= {maximum}" if maximum is not None else "")

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not (value > 0 if positive else value >= 0) \
                or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {'an int' if kind is int else 'a number'} {relation}. "
                                             f"Got {text!r:.60} instead")
        return value

    parse.__name__ = f"{'positive' if positive else 'non-negative'} {kind.__name__}"
    return parse


def check_seed(seed: int, option: str = "--seed") -> int:
    """``seed`` if it lies in [0, 2^63 - 1] (numpy spawns from it; tables store it in int64
    columns), else :class:`InvalidParameterError` before any work."""
    from .._schemas import MAX_SEED

    if not 0 <= seed <= MAX_SEED:
        raise InvalidParameterError(f"The '{option}' option must be a non-negative int of at most 63 bits "
                                    f"(in [0, 2^63 - 1]). Got {seed} instead.")
    return seed


def terminal_width() -> int:
    """The terminal's width in columns (``$COLUMNS`` first; 100 when output is not a terminal)."""
    return shutil.get_terminal_size((100, 24)).columns


def table(header, rows, width=None) -> str:
    """A plain text table that fits ``width`` columns (default: the terminal's, else 100).

    Only the last column gives way: its text is wrapped onto continuation lines aligned
    under it, never cut (a cut formula would end in a ``~`` that reads as the papers' ``<~``).
    Lines stay longer than ``width`` only where the other columns alone do not fit.
    """
    width = width or terminal_width()
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    indent = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = min(widths[-1], max(_LAST_COLUMN_MIN, width - indent))
    lines = []
    for row in cells:
        pieces = textwrap.wrap(row[-1], widths[-1], break_on_hyphens=False) or [""]
        lines.append("  ".join(c.ljust(w) for c, w in zip(row[:-1] + pieces[:1], widths)).rstrip())
        lines += [(" " * indent + piece).rstrip() for piece in pieces[1:]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def threads_help(when: str) -> str:
    """``--threads``'s help; ``when`` says when ``auto`` judges the machine's load."""
    return (f"torch CPU threads: 'auto' (default) gives torch the cores other processes leave free, judged "
            f"from the machine's CPU use {when} (torch's threads spin-wait "
            "for each other, so 2 threads beside a busy neighbour on 2 cores run about 2x slower than 1: "
            "benchmarks/bench_verify_load.py), or a number from 1 to the CPU count; results do not depend on it")


THREADS_HELP = threads_help("when the run starts, between claims and at each batched computation")


def thread_count(text: str):
    """``--threads``: ``auto`` or an int from 1 to the CPU count (more intra-op threads than CPUs
    only spin and contend, and thousands of them exhaust memory)."""
    if text == "auto":
        return text
    cpus = os.cpu_count() or 1
    try:
        threads = int(text)
    except ValueError:
        threads = None
    if threads is None or not 1 <= threads <= cpus:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an int in the range [1, {cpus}] (this machine's CPU "
                                         f"count). Got {text!r} instead")
    return threads


def set_threads(threads):
    """Apply ``--threads`` (``auto``, a count, or None for a command without the option); the
    returned governor re-judges ``auto`` between claims (:class:`cflbounds._threads.ThreadGovernor`)."""
    if threads is None:
        return None
    from .._threads import ThreadGovernor

    return ThreadGovernor(threads)


def add_containment_options(add_argument, default_timeout: str) -> None:
    """``--isolation`` and ``--claim-timeout`` on a subcommand that runs claims' code
    (``add_argument``: its parser's); ``default_timeout`` says the limit when none is given."""
    add_argument("--isolation", choices=("process", "none"), default=None,
                 help="where each claim's own code runs: process = a worker process of its own, so that an exit, a "
                      "hang, a changed directory, a patched module or its prints stay with it (default); none = in "
                      "this process, a little faster and what --raise and a debugger need; a claim's settings are "
                      "read-only and its prints go to stderr in both")
    add_argument("--claim-timeout", type=non_negative(float), metavar="SECONDS",
                 help="seconds a claim may take before it is stopped and given the verdict 'error' (timed out), "
                      f"the run going on with the others; 0: no limit (default: {default_timeout})")


def isolation(chosen: str | None, raise_errors: bool) -> str:
    """Where claims run: ``--isolation`` as ``chosen`` (None when not given), the default
    otherwise, except that ``--raise`` needs them in this process."""
    from ..verify.workers import DEFAULT_ISOLATION

    if chosen == "process" and raise_errors:
        raise InvalidParameterError("The '--raise' option needs the claims in this process: give --isolation none "
                                    "or leave --isolation out.")
    return chosen or ("none" if raise_errors else DEFAULT_ISOLATION)


def claim_timeout(args, default: float) -> float | None:
    """``--claim-timeout`` in seconds (``default`` when not given), None for no limit."""
    seconds = default if args.claim_timeout is None else args.claim_timeout
    return seconds or None


def add_executor_options(add_argument, runs: str) -> None:
    """``--executor`` and ``--address`` on a subcommand (``add_argument``: its parser's, perhaps
    with ``action=Once``); ``runs`` says in words what becomes a Ray task, and how the results
    compare with a local run."""
    add_argument("--executor", choices=("local", "ray"), default="local",
                 help=f"where the work runs: local = in this process; ray = on a Ray cluster, each task asking for "
                      f"one CPU (and one GPU with --device cuda): {runs} (default: local; needs pip install "
                      "'cflbounds[ray]')")
    add_argument("--address", metavar="HOST:PORT",
                 help="with --executor ray: join the running Ray cluster whose head node is HOST:PORT (as printed "
                      "by `ray start --head`; 'auto': the one started last on this machine); default: "
                      "$RAY_ADDRESS, else start a local Ray instance on this machine for this run")


def check_executor_options(args) -> None:
    """``--executor``/``--address`` checked before any work: Ray installed, the address well
    formed and answering (one line and exit 2 otherwise; :mod:`cflbounds.sweeps.ray_cluster`)."""
    from ..sweeps.executors import check_executor
    from ..sweeps.ray_cluster import check_address, cluster_address

    check_executor(args.executor)
    if args.executor == "ray":
        check_address(cluster_address(args.address))
    elif args.address is not None:
        raise InvalidParameterError("The '--address' option needs --executor ray (it names a Ray cluster to join).")


def start_executor(args) -> None:
    """With ``--executor ray``: join the cluster (or start a local one), as the work starts."""
    if args.executor == "ray":
        from ..sweeps.ray_cluster import connect

        connect(args.address)
