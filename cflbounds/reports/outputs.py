"""Files a verification or a sweep leaves behind: verdicts.json, tidy tables, figures, report.pdf
and, for a verification, report.html beside it.

Every file is written to a temporary name and renamed into place, so an interrupted run
never leaves a half-written result.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .._files import atomic_write, atomic_write_table, writable_directory
from .._validation import InvalidParameterError
from ..sweeps.grid import cell_key
from ..sweeps.ifca_fig2 import AXES, trial_outcomes
from ..sweeps.store import ResultStore
from ..verify.record import RECORD_NAME, read_record
from ..verify.stats import clopper_pearson
from matplotlib.figure import Figure

from .content import verify_command
from .figures import success_probability_figure
from .html import build_html
from .pdf import build_report

__all__ = ["REPORT_FILES", "write_report", "write_sweep_outputs", "rebuild_report", "fig2_figures", "fig2_page"]

REPORT_FILES = ("report.pdf", "report.html", "success.parquet", "figure-*.png")  # what a (re)built report writes

FIG2_ROOM = 9.4  # inches of an A4 page's text area under its heading: the Fig. 2 panels' one page
FIG2_ROW = 3.4  # inches per row of panels when they have the room


def _fig2_parts(runs: pd.DataFrame):
    """``(title, trials, x, group)`` of each Fig. 2-style figure of an ``ifca-fig2`` sweep's
    runs: success probability vs R per sigma (noise panels) and vs m per n (sample panels, one
    figure per r), per variant."""
    outcomes = trial_outcomes(runs)
    for variant, part in outcomes.groupby("variant"):
        for noise, (x, group) in ((True, ("r", "sigma")), (False, ("m", "n"))):
            panels = part[part["panel"].isin(["a", "b"] if noise else ["c", "d"])]
            for r, subset in ([(None, panels)] if noise else panels.groupby("r")):
                if subset.empty:
                    continue
                title = f"IFCA Fig. 2 ({variant}): success probability vs {x}" + (f", r = {r:g}" if r else "")
                yield title, subset, x, group


def fig2_figures(runs: pd.DataFrame) -> list[tuple[str, object]]:
    """Fig. 2-style figures from the runs of an ``ifca-fig2`` sweep, one per part (a sweep's
    figure files)."""
    return [(title, success_probability_figure(subset, x, group, title=title))
            for title, subset, x, group in _fig2_parts(runs)]


def fig2_page(runs: pd.DataFrame) -> tuple[str, Figure]:
    """Every Fig. 2-style figure of the runs on one figure, its parts one above the other and
    their rows of panels as high as one page allows (the report's one page after IFCA.F2)."""
    parts = list(_fig2_parts(runs))
    panels = [subset.groupby([c for c in ("panel", "k") if c in subset.columns]).ngroups for _, subset, _, _ in parts]
    rows = [-(-count // 2) for count in panels]  # two panels to a row
    row = min(FIG2_ROW, (FIG2_ROOM - 0.35 * len(parts)) / max(sum(rows), 1))
    figure = Figure(figsize=(7.0, sum(rows) * row + 0.35 * len(parts)), layout="constrained")
    for sub, (title, subset, x, group) in zip(figure.subfigures(len(parts), 1, height_ratios=rows, squeeze=False)[:, 0],
                                             parts):
        success_probability_figure(subset, x, group, title=title, figure=sub)
    variants = ", ".join(sorted(runs["variant"].unique())) if "variant" in runs.columns else ""
    return f"IFCA Fig. 2 ({variants}): success probability, every panel of the run", figure


def write_report(directory, record: dict | None = None) -> Path:
    """``directory/report.pdf`` and ``directory/report.html`` from a verify run's ``record``
    (``{"metadata", "verdicts"}`` as verdicts.json holds it; default: its ``verdicts.json``,
    validated first: a file at fault is named in one line), its metadata (page 1's settings)
    and its tables (IFCA.F2's Fig. 2 panels), written inside ``directory`` only; returns the
    PDF's path."""
    directory = Path(directory)
    if record is None:
        record = read_record(directory / RECORD_NAME)
        writable_directory(directory, "DIR")
    runs_path = directory / "tables" / "ifca_fig2_runs.parquet"
    runs = pd.read_parquet(runs_path) if runs_path.exists() else None

    def extra() -> list:  # fresh figures for each report: the PDF makes its figures pages
        return [(*fig2_page(runs), "IFCA.F2")] if runs is not None else []

    device = record["metadata"].get("device")
    options = {"title": "cflbounds verify", "metadata": record["metadata"],
               "reproduce": lambda verdict: verify_command(verdict, device)}
    atomic_write(directory / "report.html",
                 lambda temporary: build_html(record["verdicts"], temporary, extra_figures=extra(), **options),
                 within=directory)
    return atomic_write(directory / "report.pdf",
                        lambda temporary: build_report(record["verdicts"], temporary, extra_figures=extra(), **options),
                        within=directory)


def rebuild_report(directory) -> dict:
    """Rebuild ``report.pdf`` and ``report.html`` (verdicts + figures) or, for a sweep store,
    its figures and report.pdf (a falsify directory is rebuilt by
    :func:`cflbounds.falsify.outputs.write_report`: ``cflbounds report`` picks it)."""
    directory = Path(directory)
    if (directory / RECORD_NAME).exists():
        report = write_report(directory)
        return {"report": report, "html": report.with_name("report.html")}
    store = ResultStore(directory)
    if store.cells():
        paths = write_sweep_outputs(store, None)
        return {"report": paths["report"]}
    raise InvalidParameterError(f"{directory} holds neither {RECORD_NAME} (from `cflbounds verify`), falsify.json "
                                "(from `cflbounds falsify`) nor a sweep store (from `cflbounds sweep`): nothing to "
                                "rebuild.")


def success_summary(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Success probability per cell with its Clopper-Pearson 95% interval."""
    keys = ["variant", "panel", *AXES]
    table = outcomes.groupby(keys)["success"].agg(successes="sum", trials="count").reset_index()
    low, high = clopper_pearson(table["successes"], table["trials"])
    return table.assign(probability=table["successes"] / table["trials"], low=low, high=high)


def write_sweep_outputs(store: ResultStore, cells, manifest: dict | None = None) -> dict:
    """Figures (a PNG per figure), a success table and a report of a sweep's cells (all stored
    cells if ``cells`` is None), each written atomically inside the store; ``manifest``: the
    sweep's definition and runs (default: the store's sweep.json)."""
    runs = store.read()
    if cells is not None:
        runs = runs[runs["cell"].isin({cell_key(c) for c in cells})]
    summary = success_summary(trial_outcomes(runs))
    within = store.directory
    atomic_write_table(within / "success.parquet", summary, within=within)
    figures = fig2_figures(runs)
    paths = [atomic_write(within / f"figure-{index + 1}.png", lambda temporary, figure=figure: figure.savefig(
                 temporary, dpi=120, format="png"), within=within) for index, (_, figure) in enumerate(figures)]
    sections = _sweep_sections(manifest or store.read_manifest() or {}, summary)
    report = atomic_write(within / "report.pdf", lambda temporary: build_report(
        [], temporary, title="cflbounds sweep ifca-fig2", extra_figures=figures, sections=sections), within=within)
    text = summary.to_string(index=False, float_format=lambda v: f"{v:.3g}")
    return {"figures": paths, "report": report, "summary_text": text}


def _sweep_sections(manifest: dict, summary: pd.DataFrame) -> list[tuple]:
    """The sweep report's first page: its settings, every run that wrote to the store (its
    provenance) and the success table the figures draw."""
    settings = manifest.get("settings", {})
    runs = manifest.get("runs", [])
    when = lambda stamp: str(stamp)[:16].replace("T", " ")  # noqa: E731
    run_rows = [[when(run.get("started", "")), when(run["finished"]) if run.get("finished") else "stopped",
                 str(run.get("revision") or "")[:10], str(run.get("cells_to_compute", "")),
                 str(run.get("threads", "")), " ".join(str(word) for word in run.get("command", [])[1:])]
                for run in runs]
    axes = [axis for axis in AXES if summary[axis].nunique() > 1]
    success_rows = [[str(row["variant"]), str(row["panel"]), *(f"{row[axis]:g}" for axis in axes),
                     f"{int(row['successes'])}/{int(row['trials'])}", f"{row['probability']:.3f}",
                     f"[{row['low']:.3f}, {row['high']:.3f}]"] for _, row in summary.iterrows()]
    share = min(0.1, 0.44 / max(1, len(axes)))
    return [
        ("Settings", ", ".join(f"{key} {value}" for key, value in sorted(settings.items())) or None,
         ["cells", "runs (rows)"], [[str(len(summary)), str(int(summary["trials"].sum()))]], [0.2, 0.2]),
        ("Runs that wrote to the store", "From sweep.json: start and finish (UTC, minutes; 'stopped' if the run was "
         "stopped before its end), git revision, cells it had to compute, torch threads, command.",
         ["started", "finished", "revision", "cells", "threads", "command"], run_rows,
         [0.18, 0.18, 0.11, 0.06, 0.09, 0.38]),
        ("Success per cell", "Trials (data seeds) that succeeded, with the 95% Clopper-Pearson interval.",
         ["variant", "panel", *axes, "successes", "probability", "95% interval"], success_rows,
         [0.14, 0.08, *([share] * len(axes)), 0.12, 0.12, 0.2]),
    ]
