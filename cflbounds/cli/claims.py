"""``cflbounds claims``: every claim ID with its paper, statement and status; ``--check``: every
plugin, its claims and what is wrong with each (a ``pip check`` for claims)."""
from __future__ import annotations

import json
import textwrap

from .._words import plural
from ._common import table, terminal_width

__all__ = ["add_parser", "run"]

TABLE_COLUMNS = ("id", "paper", "package", "checked by", "statement")  # the table and --markdown


DESCRIPTION = """\
List every registered claim (the five papers' and those of installed plugin packages) with its
ID, paper, package, what checks it (verify, falsify) and statement, then why some claims
cannot be falsified. A plugin that cannot be registered is named on stderr, one line each."""

EPILOG = """\
examples:
  cflbounds claims --costs     # how long each claim's check took, per scale
  cflbounds claims --check     # what is wrong with a plugin's declarations

More: docs/claims.md (the catalogue), docs/own-theorem.md (add your own claims)."""


def add_parser(commands) -> None:
    parser = commands.add_parser("claims", allow_abbrev=False,
                                 help="list every claim ID with its paper, package, statement and status",
                                 description=DESCRIPTION, epilog=EPILOG)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true",
                      help="instead: every plugin, its claims and each problem in its declarations (exit 1 if any); "
                           "nothing is run")
    what.add_argument("--costs", action="store_true",
                      help="instead: the seconds each claim's check took at each scale when measured, and how it "
                           "was measured")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print a JSON list of objects instead of a table")
    output.add_argument("--markdown", action="store_true", help="print a Markdown table (as in the README, 'Claims')")


def _costs(args) -> int:
    """``--costs``: each implemented claim's measured seconds per scale (cflbounds/verify/claim_costs.json)."""
    from ..verify.context import SCALES
    from ..verify.costs import claim_costs, cost_cell, lower_bound_claims, measurement_text
    from ..verify.run import implemented_claims

    ids = implemented_claims()
    if args.json:
        print(json.dumps({scale: {"seconds": {claim: claim_costs(scale).get(claim) for claim in ids},
                                  "stopped_at_limit": sorted(lower_bound_claims(scale)),
                                  "measured": measurement_text(scale)} for scale in SCALES}, indent=2))
        return 0
    if args.markdown:
        from .._validation import InvalidParameterError
        raise InvalidParameterError("The '--costs' option prints a table or --json; docs/verify-runs.md has its "
                                    "Markdown table.")
    width = terminal_width()
    rows = [[claim, *(cost_cell(claim, scale) for scale in SCALES)] for claim in ids]
    totals = [rough_total(scale) for scale in SCALES]
    print(table(["claim", *(f"{scale} (s)" for scale in SCALES)], rows + [["all", *totals]]))
    print("\n" + textwrap.fill("Seconds per claim, run in this order in one process as verify runs them ('>S': "
                               "stopped after S seconds; '-': not measured):", width))
    for scale in SCALES:
        print(textwrap.fill(f"{scale}: {measurement_text(scale)}", width, initial_indent="- ", subsequent_indent="  "))
    return 0


def rough_total(scale: str) -> str:
    """A scale's total for the costs table: its claims' seconds added up (``-`` if never measured)."""
    from ..verify.costs import claim_costs, lower_bound_claims

    costs = claim_costs(scale)
    return "-" if not costs else (">" if lower_bound_claims(scale) & set(costs) else "") + f"{sum(costs.values()):.0f}"


def _check_plugins(args) -> int:
    from ..verify.registry import claims, declaration_problems, plugin_problems, plugin_sources

    registered, problems = claims(), plugin_problems()
    report = []
    for source in plugin_sources():
        found = [str(problem) for problem in problems
                 if (problem.package, problem.entry_point) == (source.package, source.entry_point)]
        found += [f"claim {claim_id}: {problem}" for claim_id in source.claims
                  for problem in declaration_problems(registered[claim_id])]
        report.append({"package": source.package, "entry_point": source.entry_point, "value": source.value,
                       "claims": list(source.claims), "problems": found})
    count = sum(len(entry["problems"]) for entry in report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        width = terminal_width()
        for entry in report:
            print(textwrap.fill(f"{entry['package']} (entry point {entry['entry_point']!r} = {entry['value']}): "
                                f"{plural(len(entry['claims']), 'claim')}, "
                                + (plural(len(entry['problems']), 'problem') if entry["problems"] else "no problems"),
                                width, subsequent_indent="  "))
            if entry["claims"]:
                print(textwrap.fill(", ".join(entry["claims"]), width, initial_indent="  ", subsequent_indent="  "))
            for problem in entry["problems"]:
                print(textwrap.fill(problem, width, initial_indent="  problem: ", subsequent_indent="    "))
        print(f"\n{plural(len(report), 'entry point')}, {plural(len(registered), 'claim')}, {plural(count, 'problem')}")
    return 1 if count else 0


def run(args) -> int:
    from ..verify.registry import claims

    if args.costs:
        return _costs(args)
    if args.check:
        if args.markdown:
            from .._validation import InvalidParameterError
            raise InvalidParameterError("The '--check' option prints a list (or --json), not a Markdown table.")
        return _check_plugins(args)
    rows = [claim.as_dict() for claim in claims().values()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    reasons = [(r["id"], r["falsify"][len("no: "):]) for r in rows if r["falsify"].startswith("no: ")]
    for r in rows:
        r["falsify"] = r["falsify"].split(":")[0]  # yes / no; the reasons follow the table
    # One column for what checks a claim (the terminal's width goes to the statements); the
    # Markdown table has the terminal table's columns, so the README shows what the command prints.
    checked = [("verify" * (r["status"] == "implemented") + ", falsify" * (r["falsify"] == "yes")).lstrip(", ") or "-"
               for r in rows]
    cells = [[r["id"], r["paper"], r["package"], by, r["statement"]] for r, by in zip(rows, checked)]
    if args.markdown:
        from ..reports.markdown import markdown_text

        print("| " + " | ".join(TABLE_COLUMNS) + " |\n|" + "---|" * len(TABLE_COLUMNS))
        for row in cells:
            print("| " + " | ".join(markdown_text(cell) for cell in row) + " |")
    else:
        print(table(TABLE_COLUMNS, cells))
    if reasons:
        heading = "Why these claims cannot be falsified (`cflbounds falsify` searches the others):"
        print("\n" + (heading if args.markdown else textwrap.fill(heading, terminal_width())) + "\n")
        print("\n".join(f"- {markdown_text(claim_id, cell=False)}: {markdown_text(why, cell=False)}"
                        for claim_id, why in reasons) if args.markdown else
              table(["claim", "why not"], reasons))
    return 0
