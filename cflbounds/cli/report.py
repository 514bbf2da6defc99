"""``cflbounds report``: (re)build the PDF, the HTML report and figures from stored results."""
from __future__ import annotations

import shlex
from pathlib import Path

__all__ = ["add_parser", "run"]

DESCRIPTION = """\
Rebuild a run directory's reports from what it stores, computing nothing again: report.pdf and
report.html of a verify run (from verdicts.json) or a falsify run (from falsify.json), or a
sweep store's figures and report.pdf. For an interrupted run, or a newer cflbounds."""

EPILOG = """\
example:
  cflbounds report reports/20261207-101500 --markdown

More: docs/verify-runs.md, docs/falsify.md."""


def add_parser(commands) -> None:
    report = commands.add_parser(
        "report", allow_abbrev=False, description=DESCRIPTION, epilog=EPILOG,
        help="(re)build the PDF, the HTML report and figures of a verify or falsify run, or of a sweep store")
    report.add_argument("directory", type=Path, metavar="DIR",
                        help="a verify run directory (verdicts.json), a falsify run directory (falsify.json) or a "
                             "sweep store")
    report.add_argument("--markdown", action="store_true",
                        help="print the run as a Markdown table instead (the README's and docs/falsify.md's), "
                             "writing nothing")


def _check_directory(directory: Path) -> None:
    """One line before any work for a DIR that is not a directory: missing, or a file (a run's
    report.pdf given for its directory)."""
    from .._validation import InvalidParameterError

    if not directory.exists():
        raise InvalidParameterError(f"{directory} does not exist: give the directory of a verify or falsify run, or "
                                    "a sweep store.")
    if not directory.is_dir():
        raise InvalidParameterError(f"{directory} is a file, not a directory: give the run directory that holds it "
                                    f"(cflbounds report {shlex.quote(str(directory.parent))}).")


def run(args) -> int:
    from .._files import absolute_directory, open_run_directory
    from ..falsify.outputs import RECORD_NAME as FALSIFY_RECORD
    from ..reports.outputs import REPORT_FILES, rebuild_report

    args.directory = absolute_directory(args.directory, "DIR")

    _check_directory(args.directory)
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
