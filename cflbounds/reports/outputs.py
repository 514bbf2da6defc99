"""Files a verification or a sweep leaves behind: verdicts.json, tidy tables, figures, report.pdf.

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
from .figures import success_probability_figure
from .pdf import build_report

__all__ = ["write_report", "write_sweep_outputs", "rebuild_report", "fig2_figures"]


def fig2_figures(runs: pd.DataFrame) -> list[tuple[str, object]]:
    """Fig. 2-style figures from the runs of an ``ifca-fig2`` sweep: success probability vs R
    per sigma (noise panels) and vs m per n (sample panels), one figure per variant."""
    outcomes = trial_outcomes(runs)
    figures = []
    for variant, part in outcomes.groupby("variant"):
        for noise, (x, group) in ((True, ("r", "sigma")), (False, ("m", "n"))):
            panels = part[part["panel"].isin(["a", "b"] if noise else ["c", "d"])]
            for r, subset in ([(None, panels)] if noise else panels.groupby("r")):
                if subset[x].nunique() < 1 or subset.empty:
                    continue
                title = f"IFCA Fig. 2 ({variant}): success probability vs {x}" + (f", r = {r:g}" if r else "")
                figures.append((title, success_probability_figure(subset, x, group, title=title)))
    return figures


def write_report(directory) -> Path:
    """``directory/report.pdf`` from a verify run's ``verdicts.json`` (validated first: a
    file at fault is named in one line) and its tables."""
    directory = Path(directory)
    record = read_record(directory / RECORD_NAME)
    writable_directory(directory, "DIR")
    extra = []
    runs_path = directory / "tables" / "ifca_fig2_runs.parquet"
    if runs_path.exists():
        extra = [(title, figure, "IFCA.F2") for title, figure in fig2_figures(pd.read_parquet(runs_path))]
    return atomic_write(directory / "report.pdf",
                        lambda temporary: build_report(record["verdicts"], temporary, extra_figures=extra))


def rebuild_report(directory) -> dict:
    """Rebuild ``report.pdf`` (verdicts + figures) or, for a sweep store, its figures."""
    directory = Path(directory)
    if (directory / RECORD_NAME).exists():
        return {"report": write_report(directory)}
    store = ResultStore(directory)
    if store.cells():
        paths = write_sweep_outputs(store, None)
        return {"report": paths["report"]}
    raise InvalidParameterError(f"{directory} holds neither {RECORD_NAME} (from `cflbounds verify`) nor a sweep store.")


def success_summary(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Success probability per cell with its Clopper-Pearson 95% interval."""
    keys = ["variant", "panel", *AXES]
    table = outcomes.groupby(keys)["success"].agg(successes="sum", trials="count").reset_index()
    low, high = clopper_pearson(table["successes"], table["trials"])
    return table.assign(probability=table["successes"] / table["trials"], low=low, high=high)


def write_sweep_outputs(store: ResultStore, cells) -> dict:
    """Figures (PDF + PNG per figure), a success table and a report of a sweep's cells
    (all stored cells if ``cells`` is None)."""
    runs = store.read()
    if cells is not None:
        runs = runs[runs["cell"].isin({cell_key(c) for c in cells})]
    summary = success_summary(trial_outcomes(runs))
    atomic_write_table(store.directory / "success.parquet", summary)
    figures = fig2_figures(runs)
    paths = []
    for index, (title, figure) in enumerate(figures):
        path = store.directory / f"figure-{index + 1}.png"
        figure.savefig(path, dpi=120)
        paths.append(path)
    report = build_report([], store.directory / "report.pdf", title="cflbounds sweep ifca-fig2", extra_figures=figures,
                          sections=_sweep_sections(store.read_manifest() or {}, summary))
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
