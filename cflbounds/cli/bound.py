"""``cflbounds bound ID --param value ...``: evaluate one theorem's formula and its assumption checks."""
from __future__ import annotations

import inspect
import json
import textwrap

from .._validation import InvalidParameterError, check_param, describe
from ..bounds._docstring import parameter_descriptions, statement
from ._common import Once, Parser, table, terminal_width

__all__ = ["add_parser", "run"]


EPILOG = """\
examples:
  cflbounds bound MGD.L1 --help      # its constants in words, with their ranges
  cflbounds bound MGD.L1 --sigma 0.5 --delta 1 --mu 2 --n-prime 100  # its value

More: docs/commands.md."""


def add_parser(commands) -> None:
    from ..verify.registry import claims

    formulas = ", ".join(claim.id for claim in claims().values() if claim.bound is not None)
    bound = commands.add_parser(
        "bound", allow_abbrev=False, add_help=False, usage="%(prog)s ID [--CONSTANT VALUE ...] [--json]",
        help="evaluate one theorem's formula and its assumption checks", epilog=EPILOG,
        description="Evaluate one theorem's formula at constants you give, with each of its assumptions' "
                    f"inequalities (both sides and the slack). The formulas: {formulas}.")
    bound.add_argument("id", metavar="ID", nargs="?", help="a claim ID with a formula (above)")
    bound.add_argument("--json", action="store_true", help="print the result as JSON")
    bound.add_argument("--list", action="store_true", help="every formula's claim ID with its statement")
    bound.add_argument("-h", "--help", action="store_true",
                       help="this help; with an ID: that formula's constants in words, with their ranges")
    bound.set_defaults(usage_text=bound.format_help)


def _number(name, text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise InvalidParameterError(f"The '{name}' parameter must be a number. Got {text!r} instead.")


def _formulas() -> str:
    """``bound --list``: every formula's claim ID with its statement."""
    from ..verify.registry import claims

    return table(["ID", "statement"], [[claim.id, claim.statement] for claim in claims().values()
                                      if claim.bound is not None])


def _option_help(name, parameter, constraints, described) -> str:
    """One option's help line: what the symbol is, whether it is required, its range."""
    default = parameter.default
    given = ("required" if default is inspect.Parameter.empty else "optional" if default is None
             else f"default {default}")
    allowed = describe(name, constraints) if constraints else ""
    text = described.get(name, "").rstrip(".")
    condition = "; ".join(part for part in (given, allowed) if part)
    return (f"{text} ({condition})" if text else condition).replace("%", "%%")


def run(args, extra: list[str]) -> int:
    from ..verify.registry import get_claim
    from ..verify.verdict import json_safe

    if args.list:
        if args.id is not None or extra:
            raise InvalidParameterError("The '--list' option lists every formula: it takes no ID or constants.")
        print(_formulas())
        return 0
    if args.id is None:
        if args.help:
            print(args.usage_text(), end="")
            return 0
        raise InvalidParameterError("The claim ID is missing (`cflbounds bound --help` lists them).")
    claim = get_claim(args.id)
    if claim.bound is None:
        raise InvalidParameterError(f"Claim {args.id} has no formula to evaluate (`cflbounds claims` shows which do).")
    signature = inspect.signature(claim.bound)
    constraints = getattr(claim.bound, "parameter_constraints", {})
    described = parameter_descriptions(claim.bound)
    parser = Parser(prog=f"cflbounds bound {args.id}", allow_abbrev=False,
                    description=f"{claim.id} ({claim.paper}): {statement(claim.bound.__doc__)}".replace("%", "%%"))
    textual, required = set(), []
    for name, parameter in signature.parameters.items():
        default = None if parameter.default is inspect.Parameter.empty else parameter.default
        textual.update([name] if isinstance(default, str) else [])
        required.extend([name] if parameter.default is inspect.Parameter.empty else [])
        flags = dict.fromkeys([f"--{name.replace('_', '-')}", f"--{name}"])
        parser.add_argument(*flags, dest=name, default=default, action=Once,
                            help=_option_help(name, parameter, constraints.get(name), described))
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
        raise InvalidParameterError(f"{args.id} needs the options {', '.join(missing)} (`cflbounds bound {args.id} "
                                    "--help` says what each is).")
    result = claim.bound(**values)
    data = _bound_dict(claim, result)
    print(json.dumps(json_safe(data), indent=2, allow_nan=False) if args.json else _bound_text(data))
    return 0


def _bound_dict(claim, result) -> dict:
    """A result as a dict; assumption rows and plain numbers carry the claim's statement."""
    if hasattr(result, "as_dict"):
        return result.as_dict()
    if isinstance(result, tuple):
        return {"claim": claim.id, "statement": claim.statement, "assumptions": [row.as_dict() for row in result]}
    return {"claim": claim.id, "statement": claim.statement, "value": float(result)}


def _bound_text(data) -> str:
    lines = textwrap.wrap(f"{data['claim']}: {data.get('statement', '')}".rstrip(": "), terminal_width())
    if "value" in data:
        lines.append(f"value = {data['value']:.6g}")
    for group in ("terms", "derived"):
        for key, value in data.get(group, {}).items():
            lines.append(f"  {key} = {value:.6g}")
    rows = [[a["name"], f"{a['lhs']:.4g}", a["relation"], f"{a['rhs']:.4g}", f"{a['slack']:.4g}",
             "yes" if a["holds"] else "NO"] for a in data.get("assumptions", [])]
    if rows:
        lines += ["", table(["inequality", "lhs", "", "rhs", "slack", "holds"], rows)]
    return "\n".join(lines)
