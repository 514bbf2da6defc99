"""``cflbounds report``: (re)build the PDF, the HTML report and figures from stored results."""
from __future__ import annotations

from pathlib import Path

__all__ = ["add_parser", "run"]

DESCRIPTION = (
    "Rebuild a run directory's report from what it stores, without recomputing anything: for a verify run "
    "(cflbounds verify --out DIR), report.pdf and report.html from verdicts.json (checked first) and its tables; "
    "for a falsify run (cflbounds falsify --out DIR), report.pdf and report.html from falsify.json (checked first), "
    "each counterexample's replay command naming DIR/counterexamples/; for a sweep store (cflbounds sweep --out DIR), "
    "its figures and report.pdf from the stored cells. Use it after an interrupted run, or to regenerate a report "
    "with a newer cflbounds.")


def add_parser(commands) -> None:
    report = commands.add_parser(
        "report", allow_abbrev=False, description=DESCRIPTION,
        help="(re)build the PDF, the HTML report and figures of a verify or falsify run, or of a sweep store")
    report.add_argument("directory", type=Path, metavar="DIR",
                        help="a verify run directory (verdicts.json), a falsify run directory (falsify.json) or a "
                             "sweep store")
    report.add_argument("--markdown", action="store_true",
                        help="print the run as a Markdown table instead, and write nothing: a verify run's "
                             "verdicts (claim, the designed experiment's verdict, what the search of its domain "
                             "found, the final verdict: the README's claim table) or a falsify run's results "
                             "(claim, what the search found, its seconds, the counterexample's point: the table "
                             "of docs/falsify.md)")


def run(args) -> int:
    from .._files import absolute_directory, open_run_directory
    from ..falsify.outputs import RECORD_NAME as FALSIFY_RECORD
    from ..reports.outputs import REPORT_FILES, rebuild_report

    args.directory = absolute_directory(args.directory, "DIR")

    falsify_run = (args.directory / FALSIFY_RECORD).is_file()
    if args.markdown:
        from ..reports.markdown import search_table, verdict_table
        from ..verify.record import RECORD_NAME, read_record

        if falsify_run:
            from ..falsify.outputs import read_falsify_record

            print(search_table(read_falsify_record(args.directory / FALSIFY_RECORD)["results"]), end="")
        else:
            print(verdict_table(read_record(args.directory / RECORD_NAME)["verdicts"]), end="")
        return 0
    if args.directory.is_dir():  # no symbolic link where the report goes; a killed run's temporary files removed
        open_run_directory(args.directory, "DIR", files=REPORT_FILES)
    if falsify_run:
        from ..falsify.outputs import write_report

        paths = write_report(args.directory)
    else:
        paths = rebuild_report(args.directory)
    print(f"report: {paths['report']}" + (f"\n        {paths['html']}" if paths.get("html") else ""))
    return 0
