"""cflbounds checks the convergence theorems of five clustered federated learning papers (IFCA,
CFL-MGD, FedCluster, LCFL, DSC) against measurements: it evaluates each theorem's formula at the
exact constants of synthetic problems, runs the algorithm on them, checks the theorem's own
assumptions and gives a verdict (holds, violated, vacuous, ...) with its evidence. Any installed
package can add its own claims (entry-point group cflbounds.claims; see docs/own-theorem.md).

The ``cflbounds`` command, one module of this package per subcommand (``add_parser(commands)``
and ``run(args)``). Exit codes: 0 ok; 1 a claim was ``violated`` and ``--strict`` was given, a
replayed counterexample did not reproduce, or cflbounds crashed (an uncaught exception, with its
traceback); 2 bad usage or invalid parameters (one line on stderr
naming the parameter, its value and the allowed range; no traceback); 3 a claim ended in
``error``: its own code (check, bound or domain evaluation) raised or broke a contract (its
result says what and where; the other claims ran and every output was written; it outranks 1);
74 an output could not be written (no space left, a permission lost, a symbolic link found on
its way: one line naming the file; what was written before is kept); 130 interrupted; 141 the
output pipe was closed by its reader. With ``--raise`` a claim's
exception propagates as it is, traceback and all, whatever its type.
"""
from __future__ import annotations

import os
import sys

from .._files import WriteError
from .._validation import InvalidParameterError
from ..verify.failure import raised_by_claim
from . import bound, claims, falsify, report, sweep, verify
from ._common import EXIT_WRITE, Parser, UsageError, set_threads

__all__ = ["main"]

# what an interrupted command keeps, where it does not say so itself
INTERRUPTED = {"cflbounds sweep": " (the finished cells are kept in the store: continue with the same options and "
                                  "--resume)"}
SUBCOMMANDS = {"claims": claims, "verify": verify, "falsify": falsify, "bound": bound, "sweep": sweep, "report": report}


EPILOG = """\
start with:
  cflbounds verify 'IFCA.*' --scale smoke  # IFCA's claims in about a minute
  cflbounds claims                         # every claim and what checks it
  cflbounds falsify FC.T1                  # search a claim's domain (2 min)
  cflbounds bound IFCA.C1 --help           # a formula and its symbols

`cflbounds COMMAND --help` describes a command's options. More: README.md, docs/."""


def _parser() -> Parser:
    parser = Parser(prog="cflbounds", description=__doc__.split("\n\n")[0], epilog=EPILOG, allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser, title="commands",
                                     metavar="COMMAND")
    for module in SUBCOMMANDS.values():
        module.add_parser(commands)
    return parser


def _warn_plugin_problems(prefix: str) -> None:
    """One stderr line per plugin declaration that could not be registered (the other claims work)."""
    from ..verify.registry import loaded_problems

    for problem in loaded_problems():
        print(f"{prefix}: warning: {problem}", file=sys.stderr)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # every line a command prints on stderr starts with its name: `cflbounds verify: error: ...`
    prefix = f"cflbounds {argv[0]}" if argv and argv[0] in SUBCOMMANDS else "cflbounds"
    try:
        parser = _parser()
        _warn_plugin_problems(prefix)
        args, extra = parser.parse_known_args(argv)
        args.argv = ["cflbounds", *argv]  # the command line, recorded with a run's results
        if args.command != "bound" and extra:
            parser._subparsers._group_actions[0].choices[args.command].unrecognized(extra)
        args.thread_governor = set_threads(getattr(args, "threads", None))
        module = SUBCOMMANDS[args.command]
        return module.run(args, extra) if args.command == "bound" else module.run(args)
    except InvalidParameterError as error:
        if raised_by_claim(error):  # a claim's own exception let through by --raise, not bad usage
            raise
        print(f"{error.prog if isinstance(error, UsageError) else prefix}: error: {error}", file=sys.stderr)
        return 2
    except WriteError as error:  # after work began (a refusal before it is exit 2): the run stopped there
        if raised_by_claim(error):  # a claim's own write (a checkpoint) let through by --raise
            raise
        print(f"{prefix}: error: {error} What was written before is kept (verify, falsify and sweep continue "
              "with --resume).", file=sys.stderr)
        return EXIT_WRITE
    except SystemExit as stop:  # argparse's --help has printed: the exit status, also in-process
        return stop.code if isinstance(stop.code, int) else 0
    except KeyboardInterrupt:  # verify and falsify say what they keep themselves
        print(f"{prefix}: interrupted" + INTERRUPTED.get(prefix, ""), file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`cflbounds claims | head`): stop quietly, as on SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes stdout
        return 141
