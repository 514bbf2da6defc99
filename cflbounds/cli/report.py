"""``cflbounds report``: (re)build the PDF, the HTML report and figures from stored results."""
from __future__ import annotations

from pathlib import Path

__all__ = ["add_parser", "run"]


def add_parser(commands) -> None:
    report = commands.add_parser(
        "report", allow_abbrev=False, help="(re)build the PDF, the HTML report and figures from stored results",
        description="Rebuild a run directory's report from what it stores, without recomputing anything: for a "
                    "verify run, report.pdf and report.html from verdicts.json (checked first) and its tables; for "
                    "a sweep store (cflbounds sweep --out DIR), its figures and report.pdf from the stored cells. "
                    "Use it after an interrupted run, or to regenerate a report with a newer cflbounds.")
    report.add_argument("directory", type=Path, metavar="DIR",
                        help="a verify run directory (its verdicts.json is checked first) or a sweep store")


def run(args) -> int:
    from ..reports.outputs import rebuild_report

    paths = rebuild_report(args.directory)
    print(f"report: {paths['report']}" + (f"\n        {paths['html']}" if paths.get("html") else ""))
    return 0
