"""What ``cflbounds falsify`` leaves in its run directory, written as each claim finishes:

* ``falsify.json``: ``{"metadata": {...}, "results": [one falsify_claim() dict per claim]}``,
  written before the first claim and rewritten atomically after every claim (a stopped run
  keeps the claims it finished, and ``--resume`` continues it). Per claim (:mod:`.run`): ``id``,
  ``outcome``, ``summary``; ``best_ratio``, the *confirmed* measured / allowed (above 1:
  violated) of the reported point on fresh seeds (the counterexample, else the search's best
  point; the raw best's if the claim's code failed before the confirmation, NaN without an
  admissible point); ``confirmed``: ``{ratio, interval, trials, confidence, point, violated}``
  (for a deterministic bound the largest fresh ratio and their range; for an expectation the
  Student-t interval of the mean; for a probability the Clopper-Pearson interval of the pooled
  frequency, over the allowed probability); ``raw_best``: ``{ratio, score, objective,
  evaluation, seed, trials[, exceedances]}``, the search's best single evaluation (the winner of
  many noisy draws: biased upward); ``coverage``: ``{points, admissible, inadmissible,
  violating, volume_bound, confidence, statement}`` (:mod:`.coverage`); ``counterexample`` (its
  instance at its seed, ``confirmed_ratio``, ``shrunk``), ``confirmation`` (the rule's own
  summary and interval), ``evaluations``, ``seconds``, ``seed``, ``rule``, ``error``; ``search``:
  counts, ``best`` (the raw best's instance), ``shrink`` (the shrunk point, whether it was
  reported and why) and ``trace`` (the best score so far: non-decreasing);
* ``counterexamples/<ID>.json``: each confirmed counterexample (:mod:`.records`), replayable
  with ``cflbounds falsify --replay FILE``;
* ``report.pdf``: a summary table, then a page per claim: the search's best score so far (the
  objective it maximises) against evaluations, the end of its coverage phase marked and its
  statement beside it, the counterexample's parameters and assumption rows, and measured
  against bound on the fresh confirmation seeds (or, for a claim that ended in ``error``, what
  raised and where).

Outputs are never overwritten: a directory that holds any of them is refused unless the run
resumes it (``--resume``: the same :data:`RESUME_SETTINGS`; finished claims are kept, claims
that ended in ``error`` are searched again) or replaces it (``--overwrite``: the earlier run's
outputs are removed first). Other files in the directory are left alone, as ``verify`` does.
Reading ``falsify.json`` back executes nothing: it is JSON, checked before use.
"""
from __future__ import annotations

import json
import math
import shutil
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from .._files import atomic_write_text, writable_directory
from .._validation import InvalidParameterError
from ..verify.domain import format_ratio
from ..verify.verdict import json_safe
from .records import write_counterexample
from .run import OUTCOMES, confirmed_ratio_text

__all__ = ["FalsifyRecord", "RECORD_NAME", "RESUME_SETTINGS", "read_falsify_record", "report_entry"]

RECORD_NAME = "falsify.json"
OUTPUTS = (RECORD_NAME, "counterexamples", "report.pdf", "report.html")  # what a falsify run writes
# what a claim's result depends on (not the threads or the executor: the same with --evaluations)
RESUME_SETTINGS = ("cflbounds", "seed", "budget_seconds", "max_evaluations", "confidence", "device")


class FalsifyRecord:
    """The run directory of one ``cflbounds falsify`` call (:meth:`open` it before any work)."""

    def __init__(self, directory: Path, metadata: dict, results: list[dict]):
        self.directory = Path(directory)
        self.path = self.directory / RECORD_NAME
        self.metadata = metadata
        self.results = list(results)

    @classmethod
    def open(cls, directory, settings: dict, *, resume: bool = False, overwrite: bool = False,
             option: str = "--out") -> "FalsifyRecord":
        """The run directory ``directory`` for a run of ``settings`` (the metadata: command,
        seed, budget, ...), checked before any work: a writable directory (created if missing)
        holding no falsify output, or with ``resume`` an earlier falsify run of the same
        :data:`RESUME_SETTINGS` (its finished results kept), or with ``overwrite`` anything
        (the earlier outputs removed). Refusals raise :class:`InvalidParameterError`."""
        directory = writable_directory(directory, option)
        metadata = {"cflbounds": __version__, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    **settings}
        path, results = directory / RECORD_NAME, []
        present = [name for name in OUTPUTS if (directory / name).exists()]
        if overwrite:
            for name in present:
                target = directory / name
                shutil.rmtree(target) if target.is_dir() else target.unlink()
        elif resume and path.exists():
            earlier = read_falsify_record(path)
            _check_resumable(path, earlier["metadata"], metadata, option)
            resumed = {key: metadata[key] for key in ("command", "started") if key in metadata}
            metadata = {**earlier["metadata"], "resumed": earlier["metadata"].get("resumed", []) + [resumed]}
            results = earlier["results"]
        elif present:
            raise InvalidParameterError(
                f"{path} already holds a falsify run; pass --resume to continue it, --overwrite to replace it, or "
                f"choose another {option}." if path.exists() else
                f"{directory} already holds {', '.join(present)} of another run; pass --overwrite to replace them or "
                f"choose another {option}.")
        record = cls(directory, metadata, results)
        record._write()
        return record

    def done(self, claim_id: str) -> bool:
        """Whether ``claim_id`` has a finished result (kept from the run resumed); one that ended
        in ``error`` is not: it is searched again, after a fix to the plugin."""
        return any(result["id"] == claim_id and result["outcome"] != "error" for result in self.results)

    def add(self, result: dict) -> Path | None:
        """Keep ``result`` (in place of an earlier one of its claim); write falsify.json and, if
        there is one, its counterexample file (returned)."""
        self.results = [kept for kept in self.results if kept["id"] != result["id"]] + [result]
        written = None
        if result["counterexample"] is not None:
            folder = self.directory / "counterexamples"
            folder.mkdir(exist_ok=True)
            written = write_counterexample(folder / f"{result['id']}.json", result)
            result["counterexample_file"] = str(written)
        self._write()
        return written

    def arrange(self, ids: list[str]) -> None:
        """List the results of ``ids`` in that order, after those of other claims (kept from a
        resumed run), and rewrite falsify.json."""
        order = {claim_id: index for index, claim_id in enumerate(ids)}
        self.results.sort(key=lambda result: order.get(result["id"], -1))
        self._write()

    def as_dict(self) -> dict:
        return json_safe({"metadata": self.metadata, "results": self.results})

    def write_report(self) -> Path:
        from ..reports.pdf import build_report
        from ..verify.registry import claims

        registered = claims()
        entries = [report_entry(result, registered[result["id"]].statement if result["id"] in registered else
                                "(the claim is not registered in this environment)") for result in self.results]
        return build_report(entries, self.directory / "report.pdf", title="cflbounds falsify")

    def _write(self) -> None:
        atomic_write_text(self.path, json.dumps(self.as_dict(), indent=2, allow_nan=False))


def read_falsify_record(path) -> dict:
    """The checked content of a ``falsify.json`` as ``{"metadata", "results"}``; raises
    :class:`InvalidParameterError` naming the file and what is wrong. Numbers written as
    ``"inf"``/``"nan"`` (strict JSON) come back as floats where the command reads them."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidParameterError(f"{path}: not a readable falsify record ({type(error).__name__}: {error}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict) \
            or not isinstance(data.get("results"), list):
        raise InvalidParameterError(f"{path}: expected an object with 'metadata' (an object) and 'results' (an array), "
                                    "as cflbounds falsify writes.")
    seen = set()
    for number, result in enumerate(data["results"], 1):
        if not isinstance(result, dict) or not isinstance(result.get("id"), str) \
                or result.get("outcome") not in OUTCOMES:
            raise InvalidParameterError(f"{path}: result {number} is not a falsify result (an object with an 'id' and an "
                                        f"'outcome' among {', '.join(OUTCOMES)}).")
        if result["id"] in seen:
            raise InvalidParameterError(f"{path}: result {number} repeats the claim {result['id']}.")
        seen.add(result["id"])
        for key in ("best_ratio", "seconds"):
            result[key] = _number(result.get(key))
    return data


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _check_resumable(path: Path, before: dict, now: dict, option: str) -> None:
    for setting in RESUME_SETTINGS:
        if setting not in before or before[setting] != now.get(setting):
            name = "cflbounds version" if setting == "cflbounds" else setting.replace("_", " ")
            was = repr(before[setting]) if setting in before else "nothing recorded"
            raise InvalidParameterError(f"{path} was made with {name} {was}, this run has {now.get(setting)!r}; resume "
                                        f"it with the same settings or choose another {option}.")


def _finite(values) -> list:
    return [v if math.isfinite(v) else None for v in map(_number, values)]


def _raw_text(raw: dict | None) -> str:
    if not raw:
        return "-"
    counts = f", {raw['exceedances']} of {raw['trials']} trials" if "exceedances" in raw else \
        f", {raw['trials']} trials"
    return f"ratio {format_ratio(_number(raw['ratio']))}, score {_number(raw['score']):.4g}{counts}"


def search_figure(result: dict) -> dict:
    """The search against evaluations: the best score so far (the objective the search
    maximises, non-decreasing), a sample of the evaluations' scores, the line at 0 where a
    violation starts, and where the coverage phase ended (its statement is beside it, in the
    page's evidence); the axis spans the best-so-far curve, sampled points below it marked at
    the edge."""
    trace = result["search"]["trace"]
    # a falsify.json written before the scores were traced holds ratios ("cflbounds report" may read one)
    objective, key = (trace["objective"], "score") if "objective" in trace else ("measured / allowed", "ratio")
    best = [value for value in _finite(trace["best"][key]) if value is not None]
    ylim = None
    if best:
        low, high = min(best + [0.0]), max(best + [0.0])
        span = (high - low) or 1.0
        ylim = [low - 0.1 * span, high + 0.1 * span]
    references = [{"y": 0.0, "label": "the bound: above 0 violates"}]
    covered = trace.get("coverage_evaluations", 0)
    if covered:
        references.append({"x": covered, "label": f"coverage phase: {covered} uniform points"})
    return {"kind": "line", "title": f"{result['id']}: the search's best {objective} so far",
            "xlabel": "evaluations", "ylabel": objective, "logx": True, "logy": False, "ylim": ylim,
            "nonfinite_label": "infinite: a bound <= 0 exceeded, or nothing measured",
            "series": [{"label": "an evaluation (sampled)", "x": trace["sampled"]["evaluation"],
                        "y": trace["sampled"][key], "style": "points", "color": "0.6"},
                       {"label": "best so far", "x": trace["best"]["evaluation"], "y": trace["best"][key],
                        "style": "line", "color": "C3"}],
            "reference": references}


def report_entry(result: dict, statement: str) -> dict:
    """``result`` as the verdict-like dict the PDF report lays out (one claim's pages)."""
    search, confirmation = result["search"], result["confirmation"]
    plots = [search_figure(result)]
    if confirmation and confirmation.get("measured"):
        fresh = list(range(1, len(confirmation["measured"]) + 1))
        which = (result.get("confirmed") or {}).get("point", "reported")
        plots.append({"kind": "line", "title": f"measured against bound at the {which} point, on the fresh "
                                               "confirmation seeds", "xlabel": "fresh seed", "ylabel": "value",
                      "x": fresh, "series": [{"label": "measured", "y": _finite(confirmation["measured"]),
                                              "style": "points", "group": "m"},
                                             {"label": "bound", "y": _finite(confirmation["bounds"]),
                                              "style": "dashed", "group": "m"}]})
    example = result["counterexample"] or search.get("best") or {}
    confirmed = result.get("confirmed")
    evidence = {"best_ratio (confirmed measured/allowed)": confirmed_ratio_text(confirmed) if confirmed else "-",
                "raw best (one seed)": _raw_text(result.get("raw_best")), "evaluations": result["evaluations"],
                "admissible evaluations": search["admissible"], "rejected (inadmissible)": search["rejected"],
                "restarts": search["restarts"], "search seconds": search["search_seconds"],
                "budget seconds": search["budget_seconds"], "max evaluations": search["max_evaluations"]}
    coverage = result.get("coverage")
    if coverage:
        evidence.update({"coverage points (admissible, violating)": f"{coverage['points']} ({coverage['admissible']}, "
                                                                     f"{coverage['violating']})",
                         f"coverage volume bound ({coverage['confidence']:.0%})": coverage["volume_bound"]})
    if confirmation:
        evidence.update({"confirmation trials": confirmation["trials"],
                         "confirmation interval": confirmation["interval"],
                         "confirmation quantity": confirmation["quantity"]})
    details = {("counterexample " if result["counterexample"] else "best point ") + name: value
               for name, value in (example.get("parameters") or {}).items()}
    if example:
        details.update({"instance seed": example.get("seed"), "measured": example.get("measured"),
                        "bound": example.get("bound"), **(example.get("details") or {})})
    if coverage:
        details["coverage"] = coverage["statement"]
    if search.get("shrink"):
        shrunk = search["shrink"]
        details["shrunk point"] = (f"{shrunk['parameters']}: {'reported' if shrunk['accepted'] else 'not reported'}, "
                                   f"{shrunk['reason']}")
    if result.get("counterexample_file"):
        details["replay"] = f"cflbounds falsify --replay {result['counterexample_file']}"
    if result.get("error"):
        details.update({f"error {key}": result["error"][key] for key in ("stage", "kind", "message", "where")})
        details["error traceback"] = "in falsify.json (the result's error.traceback)"
    return {"id": result["id"], "verdict": result["outcome"], "summary": result["summary"], "statement": statement,
            "trials": confirmation["trials"] if confirmation else None,
            "confidence": confirmation["confidence"] if confirmation else None, "seed": result["seed"],
            "seconds": result["seconds"], "plot": plots, "assumptions": example.get("assumptions") or [],
            "evidence": evidence, "details": details}
