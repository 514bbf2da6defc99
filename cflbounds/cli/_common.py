"""Pieces every subcommand uses: a one-line-error parser, list options, text tables, threads."""
from __future__ import annotations

import argparse
import math
import os
import shutil
import textwrap

from .._validation import InvalidParameterError

__all__ = ["Parser", "HelpFormatter", "UsageError", "Once", "csv", "table", "terminal_width", "set_threads",
           "add_executor_options", "add_containment_options", "add_device_option", "check_executor_options",
           "claim_timeout", "isolation", "start_executor", "exit_status", "EXIT_VIOLATED", "EXIT_ERROR", "EXIT_WRITE"]

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


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help at the terminal's width (``$COLUMNS`` first), options and text alike. The
    description and epilog keep their paragraphs (text between blank lines is filled to the
    width) and their indented lines as they are (an example command, a short list); where such a
    line would be wider than the terminal, its ``# comment`` goes under it and the command is
    continued on the next lines with a backslash, so that pasted it still runs."""

    def __init__(self, prog, **options):
        options.setdefault("width", terminal_width() - 2)
        super().__init__(prog, **options)

    def _format_usage(self, usage, actions, groups, prefix):
        """The usage (each of its lines) wrapped between its bracketed parts, under the words
        after the command, or under ``usage:`` where a part would not fit there."""
        prefix = "usage: " if prefix is None else prefix
        width, self._width = self._width, 10**6  # argparse's own usage on one line, wrapped below
        try:
            text = super()._format_usage(usage, actions, groups, "")
        finally:
            self._width = width
        lines = []
        for number, form in enumerate(line for line in text.strip().splitlines() if line.strip()):
            start = (prefix if number == 0 else " " * len(prefix)) + self._prog
            parts = _usage_parts(form.strip()[len(self._prog):]) if form.strip().startswith(self._prog) else \
                _usage_parts(form.strip())
            indent = len(start) + 1 if all(len(start) + 1 + len(part) <= width for part in parts) else len(prefix)
            line = start
            for part in parts:
                if len(line) + 1 + len(part) > width and line.strip():
                    lines.append(line)
                    line = " " * (indent - 1)
                line += " " + part
            lines.append(line)
        return "\n".join(lines) + "\n\n"

    def _fill_text(self, text, width, indent):
        out, prose = [], []

        def flush():
            if prose:
                out.append(textwrap.fill(" ".join(" ".join(prose).split()), width, initial_indent=indent,
                                         subsequent_indent=indent))
                prose.clear()

        for line in text.strip("\n").splitlines():
            if not line.strip() or line.startswith(" "):
                flush()
                command, mark, comment = line.partition("  # ")
                if len(indent + line) <= width or not line.strip():
                    out.append(indent + line if line.strip() else "")
                    continue
                margin = indent + " " * (len(command) - len(command.lstrip()))
                pieces = textwrap.wrap(command.strip(), width - len(margin) - 2, break_long_words=False,
                                       break_on_hyphens=False) or [""]
                out += [f"{margin}{'    ' * (i > 0)}{piece}" + (" \\" if i < len(pieces) - 1 else "")
                        for i, piece in enumerate(pieces)]  # a shell line continued, as pasted it still runs
                if mark:  # an example's comment goes under it
                    out.append(margin + "  # " + comment.strip())
            else:
                prose.append(line)
        flush()
        return "\n".join(out)


def _usage_parts(text: str) -> list[str]:
    """A usage's words, a bracketed option group (``[--budget SECONDS | --evaluations N]``) one."""
    parts, depth, current = [], 0, ""
    for character in text:
        depth += (character in "[(") - (character in "])")
        if character == " " and depth == 0:
            parts, current = parts + [current] if current else parts, ""
        else:
            current += character
    return parts + [current] if current else parts


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr (``cflbounds verify: error: ...``) and exit
    status 2, with a "Did you mean" for a mistyped command or choice; its help follows the
    terminal's width (:class:`HelpFormatter`)."""

    def __init__(self, *args, **options):
        options.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **options)

    def error(self, message):
        if "the following arguments are required: COMMAND" in message:
            commands = ", ".join(self._subparsers._group_actions[0].choices) if self._subparsers else ""
            message = f"a command is required: {commands} (`{self.prog} --help` says what each does)"
        raise UsageError(self.prog, message)

    def unrecognized(self, extra: list[str]) -> None:
        """Refuse arguments no option takes, suggesting the option meant (``--sacle``: ``--scale``)."""
        from ..verify.registry import suggestion

        options = [flag for action in self._actions for flag in action.option_strings]
        hints = "".join(suggestion(item.split("=")[0], options) for item in extra if item.startswith("-"))
        self.error(f"unrecognized arguments: {' '.join(extra)}" + (f".{hints}" if hints else ""))

    def _check_value(self, action, value):
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as error:  # an unknown command or choice: the closest ones named
            from ..verify.registry import suggestion

            hint = suggestion(value, action.choices)
            raise argparse.ArgumentError(action, f"{error.message}.{hint}" if hint else error.message) from None

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


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` wrapped at spaces to ``width``; a word longer than that stays whole on a line of
    its own (a path or a formula cut in two cannot be pasted or read)."""
    return textwrap.wrap(text, max(width, 1), break_long_words=False, break_on_hyphens=False) or [""]


def _longest_word(text: str) -> int:
    return max((len(word) for word in text.split()), default=0)


def _fit(natural: list[int], least: list[int], room: int) -> list[int]:
    """Column widths that add up to at most ``room``: the widest column that can still give way
    (down to ``least``) gives one character at a time; where none can, the least widths."""
    widths = list(natural)
    while sum(widths) > room:
        movable = [i for i, (w, floor) in enumerate(zip(widths, least)) if w > floor]
        if not movable:
            break
        widest = max(movable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def _rows(cells: list[list[str]], widths: list[int]) -> list[str]:
    """Rows whose cells wrap at spaces within their column, continuation lines aligned."""
    lines = []
    for row in cells:
        pieces = [_wrapped(cell, width) for cell, width in zip(row, widths)]
        for k in range(max(map(len, pieces))):
            lines.append("  ".join((piece[k] if k < len(piece) else "").ljust(width)
                                   for piece, width in zip(pieces, widths)).rstrip())
    return lines


def table(header, rows, width=None) -> str:
    """A plain text table that fits ``width`` columns (default: the terminal's, else 100).

    Cells wrap at spaces onto continuation lines aligned under their column, never cut (a cut
    formula would end in a ``~`` that reads as the papers' ``<~``); the widest column gives way
    first. A last column of text that would be left narrower than 20 characters goes under its
    row instead, indented by four (its name under the header's). Words (a path, a formula
    without spaces) are never broken, so every line fits ``width`` as long as the other
    columns' longest words fit side by side and no word of the last column is longer than the
    room left for it; otherwise the lines that hold such words are wider.
    """
    width = width or terminal_width()
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    natural = [max(len(row[i]) for row in cells) for i in range(len(header))]
    least = [max(_longest_word(row[i]) for row in cells) for i in range(len(header))]
    gaps = 2 * (len(header) - 1)
    widths = _fit(natural, least[:-1] + [min(natural[-1], _LAST_COLUMN_MIN)], width - gaps)
    if len(header) == 1 or sum(widths) + gaps <= width or natural[-1] <= _LAST_COLUMN_MIN:
        lines = _rows(cells, widths)
        lines.insert(len(_rows(cells[:1], widths)), "  ".join("-" * w for w in widths))
        return "\n".join(lines)
    # stacked: the other columns side by side, the last one's text under each row
    widths = _fit(natural[:-1], least[:-1], width - gaps + 2)
    lines = []
    for index, row in enumerate(cells):
        lines += _rows([row[:-1]], widths)
        lines += [("    " + piece).rstrip() for piece in _wrapped(row[-1], width - 4)] if row[-1] else []
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def threads_help(when: str) -> str:
    """``--threads``'s help; ``when`` says when ``auto`` judges the machine's load."""
    return (f"torch threads: auto (default: the cores other processes leave free, judged {when}) or a "
            "count")


THREADS_HELP = threads_help("per claim")


def add_device_option(add_argument, default: str | None = "auto", replay: bool = False) -> None:
    """``--device`` on a subcommand that runs torch (``add_argument``: its parser's): ``auto`` on
    every command; with ``replay``, a replay's default is the device its file records."""
    add_argument("--device", choices=("auto", "cpu", "cuda"), default=default, metavar="DEVICE",
                 help="auto (default: CUDA when present, else CPU), cpu or cuda" + (
                     "; --replay: the file's device" if replay else ""))


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
    add_argument("--isolation", choices=("process", "none"), default=None, metavar="HOW",
                 help="process (default): each claim in a worker process of its own; none: in this one (for "
                      "--raise)")
    add_argument("--claim-timeout", type=non_negative(float), metavar="SECONDS",
                 help=f"a claim taking longer is stopped: verdict 'error' (default: {default_timeout}; 0: none)")


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


def add_executor_options(add_argument, task: str) -> None:
    """``--executor`` and ``--address`` on a subcommand (``add_argument``: its parser's, perhaps
    with ``action=Once``); ``task`` says in words what becomes a Ray task."""
    add_argument("--executor", choices=("local", "ray"), default="local", metavar="local|ray",
                 help=f"local (default) or ray: {task} a task on a Ray cluster (needs cflbounds[ray])")
    add_argument("--address", metavar="HOST:PORT",
                 help="the Ray cluster's head node to join (default: $RAY_ADDRESS, else a local Ray started "
                      "for this run)")


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
