"""What ``cflbounds falsify`` leaves in its run directory, written as each claim finishes:

* ``falsify.json``: ``{"metadata": {...}, "results": [one falsify_claim() dict per claim]}``,
  rewritten atomically after every claim (a stopped run keeps the claims it finished);
* ``counterexamples/<ID>.json``: each confirmed counterexample (:mod:`.records`), replayable
  with ``cflbounds falsify --replay FILE``;
* ``report.pdf``: a summary table, then a page per claim: the best ratio against evaluations,
  the counterexample's parameters and assumption rows, and measured against bound on the
  fresh confirmation seeds.
"""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from .._files import atomic_write_text, writable_directory
from ..verify.verdict import json_safe
from .records import write_counterexample

__all__ = ["FalsifyRecord", "report_entry"]


class FalsifyRecord:
    """The run directory of one ``cflbounds falsify`` call (checked writable before any work)."""

    def __init__(self, directory, metadata: dict):
        self.directory = writable_directory(directory, "--out")
        self.path = self.directory / "falsify.json"
        self.metadata = {"cflbounds": __version__,
                         "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), **metadata}
        self.results: list[dict] = []

    def add(self, result: dict) -> Path | None:
        """Keep ``result``; write falsify.json and, if there is one, its counterexample file (returned)."""
        self.results.append(result)
        written = None
        if result["counterexample"] is not None:
            folder = self.directory / "counterexamples"
            folder.mkdir(exist_ok=True)
            written = write_counterexample(folder / f"{result['id']}.json", result)
            result["counterexample_file"] = str(written)
        atomic_write_text(self.path, json.dumps(self.as_dict(), indent=2, allow_nan=False))
        return written

    def arrange(self, ids: list[str]) -> None:
        """List the results in the order of ``ids`` and rewrite falsify.json."""
        self.results.sort(key=lambda result: ids.index(result["id"]))
        atomic_write_text(self.path, json.dumps(self.as_dict(), indent=2, allow_nan=False))

    def as_dict(self) -> dict:
        return json_safe({"metadata": self.metadata, "results": self.results})

    def write_report(self) -> Path:
        from ..reports.pdf import build_report
        from ..verify.registry import get_claim

        entries = [report_entry(result, get_claim(result["id"]).statement) for result in self.results]
        return build_report(entries, self.directory / "report.pdf", title="cflbounds falsify")


def _finite(values) -> list:
    return [v if v is not None and math.isfinite(v) else None for v in values]


def report_entry(result: dict, statement: str) -> dict:
    """``result`` as the verdict-like dict the PDF report lays out (one claim's pages)."""
    search, confirmation = result["search"], result["confirmation"]
    trace = search["trace"]
    plots = [{"kind": "line", "title": f"{result['id']}: the search's best measured/allowed against evaluations",
              "xlabel": "evaluations", "ylabel": "measured / allowed", "logx": True, "logy": True,
              "nonfinite_label": "bound <= 0 exceeded",
              "series": [{"label": "an evaluation (sampled)", "x": trace["sampled"]["evaluation"],
                          "y": trace["sampled"]["ratio"], "style": "points", "color": "0.6"},
                         {"label": "best so far", "x": trace["best"]["evaluation"], "y": trace["best"]["ratio"],
                          "style": "line", "color": "C3"}],
              "reference": [{"y": 1.0, "label": "the bound: above this line violates"}]}]
    if confirmation and confirmation.get("measured"):
        fresh = list(range(1, len(confirmation["measured"]) + 1))
        plots.append({"kind": "line", "title": "measured against bound at the shrunk point, on the fresh "
                                               "confirmation seeds", "xlabel": "fresh seed", "ylabel": "value",
                      "x": fresh, "series": [{"label": "measured", "y": _finite(confirmation["measured"]),
                                              "style": "points", "group": "m"},
                                             {"label": "bound", "y": _finite(confirmation["bounds"]),
                                              "style": "dashed", "group": "m"}]})
    example = result["counterexample"] or search.get("best") or {}
    evidence = {"best_ratio": result["best_ratio"], "evaluations": result["evaluations"],
                "admissible evaluations": search["admissible"], "rejected (inadmissible)": search["rejected"],
                "restarts": search["restarts"], "search seconds": search["search_seconds"],
                "budget seconds": search["budget_seconds"], "max evaluations": search["max_evaluations"]}
    if confirmation:
        evidence.update({"confirmation trials": confirmation["trials"],
                         "confirmation interval": confirmation["interval"],
                         "confirmation quantity": confirmation["quantity"]})
    details = {("counterexample " if result["counterexample"] else "best point ") + name: value
               for name, value in (example.get("parameters") or {}).items()}
    if example:
        details.update({"instance seed": example.get("seed"), "measured": example.get("measured"),
                        "bound": example.get("bound"), **(example.get("details") or {})})
    if result.get("counterexample_file"):
        details["replay"] = f"cflbounds falsify --replay {result['counterexample_file']}"
    return {"id": result["id"], "verdict": result["outcome"], "summary": result["summary"], "statement": statement,
            "trials": confirmation["trials"] if confirmation else None,
            "confidence": confirmation["confidence"] if confirmation else None, "seed": result["seed"],
            "seconds": result["seconds"], "plot": plots, "assumptions": example.get("assumptions") or [],
            "evidence": evidence, "details": details}
