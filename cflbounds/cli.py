"""The ``cflbounds`` command: claims, verify, bound, sweep, report.

Exit codes: 0 ok; 1 a claim was ``violated`` and ``--strict`` was given; 2 bad usage or
invalid parameters (one line on stderr naming the parameter, its value and the allowed
range; no traceback); 130 interrupted; 141 the output pipe was closed by its reader.
"""
from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import sys
from datetime import datetime
from pathlib import Path

from ._validation import InvalidParameterError, check_param

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr and exit status 2."""

    def error(self, message):
        raise InvalidParameterError(f"{self.prog}: {message}")


class _Once(argparse.Action):
    """Store an option's value, refusing a second occurrence (``--sigma 1 --sigma 2`` is ambiguous)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_given_{self.dest}", False):
            parser.error(f"option {option_string} was given twice")
        setattr(namespace, f"_given_{self.dest}", True)
        setattr(namespace, self.dest, values)


def _csv(kind):
    """A comma-separated list of ``kind`` values (``--r 0.1,0.25``)."""

    def parse(text):
        try:
            return [kind(item) for item in text.split(",") if item != ""]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__} values, got {text!r}")

    parse.__name__ = f"list of {kind.__name__}"
    return parse


def _parser() -> argparse.ArgumentParser:
    from .sweeps.ifca_fig2 import PANELS, VARIANTS
    from .verify.context import SCALES

    parser = _Parser(prog="cflbounds", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    claims = commands.add_parser("claims", allow_abbrev=False, help="list every claim ID with its paper, statement and status")
    claims.add_argument("--json", action="store_true", help="print JSON")
    claims.add_argument("--markdown", action="store_true", help="print a Markdown table (as in the README)")

    verify = commands.add_parser("verify", allow_abbrev=False, help="check claims against measurements (the main job)")
    verify.add_argument("ids", nargs="*", metavar="ID",
                        help="claim IDs or patterns such as 'MGD.*' (default: every implemented claim)")
    verify.add_argument("--scale", choices=SCALES, default="default")
    verify.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    verify.add_argument("--executor", choices=("local", "ray"), default="local")
    verify.add_argument("--seed", type=int, default=0)
    verify.add_argument("--out", type=Path, help="output directory (default: reports/<date-time>/)")
    verify.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    verify.add_argument("--strict", action="store_true", help="exit 1 if a claim is violated")
    verify.add_argument("--threads", type=int, help="torch CPU threads (1 is faster on a busy shared machine)")

    bound = commands.add_parser("bound", allow_abbrev=False, add_help=False,
                                help="evaluate one theorem's formula and its assumption checks")
    bound.add_argument("id", metavar="ID", nargs="?", help="a claim ID with a formula (`cflbounds claims`)")
    bound.add_argument("--json", action="store_true")
    bound.add_argument("-h", "--help", action="store_true", help="with an ID: that formula's parameters")

    sweep = commands.add_parser("sweep", allow_abbrev=False, help="run a named experiment grid into a resumable store")
    sweep.add_argument("name", choices=("ifca-fig2",))
    sweep.add_argument("--panel", type=_csv(str), default=list(PANELS), help="panels a,b,c,d of Fig. 2")
    sweep.add_argument("--variant", type=_csv(str), default=list(VARIANTS), help="official,paper-text")
    for axis, kind in (("m", int), ("n", int), ("d", int), ("r", float), ("sigma", float)):
        sweep.add_argument(f"--{axis}", type=_csv(kind), help=f"values of {axis} (replaces the panel's grid)")
    sweep.add_argument("--trials", type=int, help="data seeds per cell (protocol: 40)")
    sweep.add_argument("--restarts", type=int, help="initialisations per step size (protocol: 10)")
    sweep.add_argument("--iterations", type=int, help="iterations per run (protocol: 300)")
    sweep.add_argument("--dtype", choices=("float32", "float64"), help="(protocol: float32)")
    sweep.add_argument("--shared-inits", action="store_true", help="reuse the same inits for every data seed")
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--out", type=Path, help="store directory (default: reports/sweeps/<name>/)")
    sweep.add_argument("--resume", action="store_true", help="skip the cells already in the store")
    sweep.add_argument("--executor", choices=("local", "ray"), default="local")
    sweep.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    sweep.add_argument("--threads", type=int, help="torch CPU threads (1 is faster on a busy shared machine)")

    report = commands.add_parser("report", allow_abbrev=False, help="(re)build the PDF and figures from stored results")
    report.add_argument("directory", type=Path)
    return parser


# -- claims ---------------------------------------------------------------------------------
def _claims(args) -> int:
    from .verify.registry import CLAIMS

    rows = [claim.as_dict() for claim in CLAIMS.values()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if args.markdown:
        print("| claim | status | statement |\n|---|---|---|")
        for r in rows:
            print(f"| {r['id']} | {r['status']} | {r['statement'].replace('|', '&#124;')} |")
        return 0
    print(_table(["id", "status", "statement"], [[r["id"], r["status"], r["statement"]] for r in rows], width=100))
    return 0


def _table(header, rows, width=None) -> str:
    """A plain text table; the last column is cut to keep lines within ``width``."""
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    if width:
        widths[-1] = max(10, min(widths[-1], width - sum(widths[:-1]) - 2 * (len(header) - 1)))
    lines = []
    for row in cells:
        row = [c if len(c) <= w else c[: w - 1] + "~" for c, w in zip(row, widths)]
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- verify ---------------------------------------------------------------------------------
def _verify(args) -> int:
    from ._torch import resolve_device
    from .reports.outputs import write_verification
    from .verify.context import VerifyContext
    from .verify.run import verify_claims

    if args.seed < 0:
        raise InvalidParameterError(f"The '--seed' option must be a non-negative int. Got {args.seed} instead.")
    out = args.out or Path("reports") / datetime.now().strftime("%Y%m%d-%H%M%S")
    context = VerifyContext(scale=args.scale, seed=args.seed, device=str(resolve_device(args.device)),
                            executor=args.executor, workdir=out)
    verdicts = verify_claims(args.ids, context)
    paths = write_verification(verdicts, context.tables, out)
    if args.json:
        print(json.dumps([v.to_dict() for v in verdicts], indent=2, allow_nan=False))
    else:
        print(_table(["claim", "verdict", "trials", "seconds", "summary"],
                     [[v.id, v.verdict, v.trials, f"{v.seconds:.1f}", v.summary] for v in verdicts], width=160))
        print(f"\nverdicts: {paths['verdicts']}\nreport:   {paths['report']}\ntables:   {paths['tables']}")
    return 1 if args.strict and any(v.verdict == "violated" for v in verdicts) else 0


# -- bound ----------------------------------------------------------------------------------
def _number(name, text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise InvalidParameterError(f"The '{name}' parameter must be a number. Got {text!r} instead.")


def _bound_help() -> str:
    from .verify.registry import CLAIMS

    rows = [[claim.id, f"{claim.bound.__module__.split('.')[-1]}.{claim.bound.__name__}"]
            for claim in CLAIMS.values() if claim.bound is not None]
    return ("usage: cflbounds bound ID [--param value ...] [--json]\n\n"
            "Evaluate one theorem's formula at given constants; `cflbounds bound ID --help` lists its "
            "parameters.\n\n" + _table(["ID", "formula (cflbounds.bounds)"], rows))


def _bound(args, extra: list[str]) -> int:
    from .verify.registry import get_claim
    from .verify.verdict import json_safe

    if args.id is None:
        if args.help:
            print(_bound_help())
            return 0
        raise InvalidParameterError("cflbounds bound: the claim ID is missing (`cflbounds bound --help` lists them)")
    claim = get_claim(args.id)
    if claim.bound is None:
        raise InvalidParameterError(f"Claim {args.id} has no formula to evaluate (`cflbounds claims` shows which do).")
    signature = inspect.signature(claim.bound)
    constraints = getattr(claim.bound, "parameter_constraints", {})
    statement = " ".join("\n\n".join((inspect.getdoc(claim.bound) or "").split("\n\n")[:2]).replace("``", "").split())
    parser = _Parser(prog=f"cflbounds bound {args.id}", allow_abbrev=False,
                     description=f"{claim.id}: {statement}".replace("%", "%%"))
    textual, required = set(), []
    for name, parameter in signature.parameters.items():
        default = None if parameter.default is inspect.Parameter.empty else parameter.default
        textual.update([name] if isinstance(default, str) else [])
        required.extend([name] if default is None else [])
        flags = dict.fromkeys([f"--{name.replace('_', '-')}", f"--{name}"])
        allowed = " or ".join(str(c) for c in constraints.get(name, []))
        described = ("required" if default is None else f"default {default}") + (f"; {allowed}" if allowed else "")
        parser.add_argument(*flags, dest=name, default=default, action=_Once, help=described.replace("%", "%%"))
    if args.help:
        print(parser.format_help())
        return 0
    values = {name: value for name, value in vars(parser.parse_args(extra)).items() if name in signature.parameters}
    values = {name: value if name in textual or not isinstance(value, str) else _number(name, value)
              for name, value in values.items()}
    for name, value in values.items():  # a given value is judged before missing ones are listed
        if value is not None and name in constraints:
            check_param(name, value, constraints[name], claim.bound.__name__)
    missing = [f"--{name.replace('_', '-')}" for name in required if values[name] is None]
    if missing:
        raise InvalidParameterError(f"cflbounds bound {args.id}: missing required options {', '.join(missing)}")
    result = claim.bound(**values)
    print(json.dumps(json_safe(_bound_dict(args.id, result)), indent=2, allow_nan=False) if args.json
          else _bound_text(args.id, result))
    return 0


def _bound_dict(claim_id, result) -> dict:
    if hasattr(result, "as_dict"):
        return result.as_dict()
    if isinstance(result, tuple):
        return {"claim": claim_id, "assumptions": [row.as_dict() for row in result]}
    return {"claim": claim_id, "value": float(result)}


def _bound_text(claim_id, result) -> str:
    data = _bound_dict(claim_id, result)
    lines = [f"{data['claim']}: {data.get('statement', '')}".rstrip(": ")]
    if "value" in data:
        lines.append(f"value = {data['value']:.6g}")
    for group in ("terms", "derived"):
        for key, value in data.get(group, {}).items():
            lines.append(f"  {key} = {value:.6g}")
    rows = [[a["name"], f"{a['lhs']:.4g}", a["relation"], f"{a['rhs']:.4g}", f"{a['slack']:.4g}",
             "yes" if a["holds"] else "NO"] for a in data.get("assumptions", [])]
    if rows:
        lines += ["", _table(["inequality", "lhs", "", "rhs", "slack", "holds"], rows)]
    return "\n".join(lines)


# -- sweep ----------------------------------------------------------------------------------
def _sweep(args) -> int:
    from ._torch import resolve_device
    from .reports.outputs import write_sweep_outputs
    from .sweeps.executors import run_cells
    from .sweeps.ifca_fig2 import PANELS, VARIANTS, fig2_cells, run_fig2_cell
    from .sweeps.store import ResultStore
    import functools

    for name, chosen, allowed in (("--panel", args.panel, PANELS), ("--variant", args.variant, VARIANTS)):
        bad = [c for c in chosen if c not in allowed]
        if bad or not chosen:
            raise InvalidParameterError(f"The '{name}' option must list values among {list(allowed)}. Got {chosen}.")
    if args.seed < 0:
        raise InvalidParameterError(f"The '--seed' option must be a non-negative int. Got {args.seed} instead.")
    for name in ("trials", "restarts", "iterations"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InvalidParameterError(f"The '--{name}' option must be an int in the range [1, inf). Got {value}.")
    overrides = {axis: getattr(args, axis) for axis in ("m", "n", "d", "r", "sigma") if getattr(args, axis)}
    _check_axes(overrides)
    protocol = {name: getattr(args, name) for name in ("trials", "restarts", "iterations", "dtype")
                if getattr(args, name) is not None}
    if args.shared_inits:
        protocol["shared_inits"] = True
    cells = fig2_cells(args.panel, args.variant, overrides, seed=args.seed, **protocol)
    out = args.out or Path("reports") / "sweeps" / args.name
    store = ResultStore(out)
    done = store.cells()
    if done and not args.resume:
        raise InvalidParameterError(f"{out} already holds {len(done)} finished cells; pass --resume to continue "
                                    "that sweep or choose another --out.")
    store.write_manifest({"name": args.name, "panels": args.panel, "variants": args.variant, "overrides": overrides,
                          "protocol": protocol, "seed": args.seed})
    compute = functools.partial(run_fig2_cell, device=str(resolve_device(args.device)))
    summary = run_cells(cells, compute, store, executor=args.executor)
    paths = write_sweep_outputs(store, cells)
    print(f"{summary['computed']} cells computed, {summary['skipped']} skipped (already stored), "
          f"{summary['runs']} runs in {summary['seconds']:.1f} s")
    print(paths["summary_text"])
    print(f"\nstore: {out}\nfigures: {', '.join(str(p) for p in paths['figures'])}")
    return 0


def _check_axes(overrides):
    positive = {"m": 1, "n": 1, "d": 1}
    for axis, values in overrides.items():
        low = positive.get(axis, 0)
        bad = [v for v in values if not math.isfinite(v) or v < low or (axis == "r" and v <= 0)]
        if bad:
            rng = "(0, inf)" if axis == "r" else f"[{low}, inf)"
            raise InvalidParameterError(f"The '--{axis}' option must hold values in the range {rng}. Got {bad[0]}.")


# -- report ---------------------------------------------------------------------------------
def _report(args) -> int:
    from .reports.outputs import rebuild_report

    paths = rebuild_report(args.directory)
    print(f"report: {paths['report']}")
    return 0


def _set_threads(threads):
    if threads is None:
        return
    if threads < 1:
        raise InvalidParameterError(f"The '--threads' option must be an int in the range [1, inf). Got {threads}.")
    import torch

    torch.set_num_threads(threads)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = _parser()
        args, extra = parser.parse_known_args(argv)
        if args.command != "bound" and extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        handlers = {"claims": _claims, "verify": _verify, "sweep": _sweep, "report": _report}
        _set_threads(getattr(args, "threads", None))
        return _bound(args, extra) if args.command == "bound" else handlers[args.command](args)
    except InvalidParameterError as error:
        print(f"cflbounds: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("cflbounds: interrupted (finished cells are kept; rerun with --resume)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`cflbounds claims | head`): stop quietly, as on SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes stdout
        return 141


if __name__ == "__main__":
    sys.exit(main())
