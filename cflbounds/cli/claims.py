"""``cflbounds claims``: every claim ID with its paper, statement and status."""
from __future__ import annotations

import json

from ._common import table

__all__ = ["add_parser", "run"]

COLUMNS = ("id", "paper", "package", "status", "falsify", "statement")


def add_parser(commands) -> None:
    parser = commands.add_parser("claims", allow_abbrev=False,
                                 help="list every claim ID with its paper, package, statement and status",
                                 description="List every registered claim (the five papers' of CLAIMS.md and those "
                                             "of any installed plugin package, entry-point group cflbounds.claims) "
                                             "with its ID, paper, the package that declares it, its statement and "
                                             "whether `cflbounds verify` can check it, and whether `cflbounds "
                                             "falsify` can search it (the reason when it cannot: below the table; "
                                             "--json gives it per claim). A plugin that cannot be "
                                             "registered is named on stderr, one line each.")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print a JSON list of objects instead of a table")
    output.add_argument("--markdown", action="store_true", help="print a Markdown table (as in the README)")


def run(args) -> int:
    from ..verify.registry import claims

    rows = [claim.as_dict() for claim in claims().values()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    reasons = [(r["id"], r["falsify"][len("no: "):]) for r in rows if r["falsify"].startswith("no: ")]
    for r in rows:
        r["falsify"] = r["falsify"].split(":")[0]  # yes / no; the reasons follow the table
    if args.markdown:
        print("| claim | paper | package | status | falsify | statement |\n|---|---|---|---|---|---|")
        for r in rows:
            print("| " + " | ".join(r[column].replace("|", "&#124;") for column in COLUMNS) + " |")
    else:  # one column for what checks a claim: the terminal's width goes to the statements
        checked = ["verify" * (r["status"] == "implemented") + ", falsify" * (r["falsify"] == "yes") or "-"
                   for r in rows]
        print(table(("id", "paper", "package", "checked by", "statement"),
                    [[r["id"], r["paper"], r["package"], by.lstrip(", "), r["statement"]] for r, by in zip(rows, checked)]))
    if reasons:
        print("\nWhy these claims cannot be falsified (`cflbounds falsify` searches the others):\n")
        print("\n".join(f"- {claim_id}: {why}" for claim_id, why in reasons) if args.markdown else
              table(["claim", "why not"], reasons))
    return 0
