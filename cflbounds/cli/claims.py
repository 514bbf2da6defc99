"""``cflbounds claims``: every claim ID with its paper, statement and status; ``--check``: every
plugin, its claims and what is wrong with each (a ``pip check`` for claims)."""
from __future__ import annotations

import json
import textwrap

from ._common import table, terminal_width

__all__ = ["add_parser", "run"]

TABLE_COLUMNS = ("id", "paper", "package", "checked by", "statement")  # the table and --markdown


def add_parser(commands) -> None:
    parser = commands.add_parser("claims", allow_abbrev=False,
                                 help="list every claim ID with its paper, package, statement and status",
                                 description="List every registered claim (the five papers' of tests/data/CLAIMS.md and those "
                                             "of any installed plugin package, entry-point group cflbounds.claims) "
                                             "with its ID, paper, the package that declares it, its statement and "
                                             "whether `cflbounds verify` can check it, and whether `cflbounds "
                                             "falsify` can search it (the reason when it cannot: below the table; "
                                             "--json gives it per claim). A plugin that cannot be "
                                             "registered is named on stderr, one line each; --check lists every "
                                             "plugin with its claims and problems (exit 1 if there is one).")
    parser.add_argument("--check", action="store_true",
                        help="instead of the table: every plugin package and entry point, the claims it registered "
                             "and every problem found in its declarations (what failed to import, with file:line; "
                             "malformed claims and domains; a bound whose constants are not described; a check or "
                             "evaluation that cannot take its arguments); nothing is run. Exit status 1 if a "
                             "problem was found, else 0")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print a JSON list of objects instead of a table")
    output.add_argument("--markdown", action="store_true", help="print a Markdown table (as in the README, 'Claims')")


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
            print(f"{entry['package']} (entry point {entry['entry_point']!r} = {entry['value']}): "
                  f"{len(entry['claims'])} claims, " + (f"{len(entry['problems'])} problem(s)" if entry["problems"]
                                                        else "no problems"))
            if entry["claims"]:
                print(textwrap.fill(", ".join(entry["claims"]), width, initial_indent="  ", subsequent_indent="  "))
            for problem in entry["problems"]:
                print(textwrap.fill(problem, width, initial_indent="  problem: ", subsequent_indent="    "))
        print(f"\n{len(report)} entry points, {len(registered)} claims, {count} problem(s)")
    return 1 if count else 0


def run(args) -> int:
    from ..verify.registry import claims

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
        print("\nWhy these claims cannot be falsified (`cflbounds falsify` searches the others):\n")
        print("\n".join(f"- {markdown_text(claim_id, cell=False)}: {markdown_text(why, cell=False)}" for claim_id, why in reasons)
              if args.markdown else
              table(["claim", "why not"], reasons))
    return 0
