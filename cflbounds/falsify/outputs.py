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
* ``report.pdf`` and ``report.html`` (the same content, :mod:`cflbounds.reports`; ``cflbounds
  report DIR`` rebuilds both from falsify.json): a summary table, then a page (a section, in
  HTML) per claim: the search's best score so far (the objective it maximises) against
  evaluations, the end of its coverage phase marked and its statement under it, beside it
  measured against bound on the fresh confirmation seeds, the counterexample's (or best
  point's) parameters, the command that replays it, the evidence and, where there is room,
  the assumption rows (or, for a claim that ended in ``error``, what raised, where, and the
  traceback).

Outputs are never overwritten: a directory that holds any of them is refused unless the run
resumes it (``--resume``: the same :data:`RESUME_SETTINGS`; finished claims are kept, claims
that ended in ``error`` are searched again) or replaces it (``--overwrite``: the earlier run's
outputs are removed first). Other files in the directory are left alone, as ``verify`` does.
Reading ``falsify.json`` back executes nothing: it is JSON, checked against its schema before use
(:mod:`cflbounds._schemas`).
"""
from __future__ import annotations

import json
import math
import shlex
import shutil
from datetime import datetime, timezone
from pathlib import Path

from .. import __version__
from .._files import atomic_write, atomic_write_text, open_run_directory
from .._read_json import check_unique_ids, read_json
from .._schemas import FALSIFY_FILE
from .._validation import InvalidParameterError
from ..verify.domain import format_against, format_point, format_ratio
from ..verify.registry import domain_parameters
from ..verify.verdict import json_safe
from .records import counterexample_file, write_counterexample
from .run import OUTCOMES, result_summary

__all__ = ["FalsifyRecord", "RECORD_NAME", "RESUME_SETTINGS", "read_falsify_record", "report_entry", "write_report"]

RECORD_NAME = "falsify.json"
RUN_FILES = (RECORD_NAME, "report.pdf", "report.html")  # what a falsify run writes: these files,
RUN_FOLDERS = ("counterexamples",)  # and this folder's
OUTPUTS = RUN_FILES + RUN_FOLDERS
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
        where none of the outputs, nor anything in counterexamples/, is a symbolic link
        (:func:`~cflbounds._files.open_run_directory`, which also removes the temporary files of
        a killed run), holding no falsify output, or with ``resume`` an earlier falsify run of
        the same :data:`RESUME_SETTINGS` (its finished results kept), or with ``overwrite``
        anything (the earlier outputs removed). Refusals raise :class:`InvalidParameterError`."""
        directory = open_run_directory(directory, option, files=RUN_FILES, folders=RUN_FOLDERS)
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
            written = write_counterexample(self.directory, result)
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
        """Write report.pdf and report.html of the results kept (:func:`write_report`);
        returns the PDF's path."""
        return write_report(self.directory, self.results, self.metadata)["report"]

    def _write(self) -> None:
        atomic_write_text(self.path, json.dumps(self.as_dict(), indent=2, allow_nan=False), within=self.directory)


def read_falsify_record(path) -> dict:
    """The checked content of a ``falsify.json`` as ``{"metadata", "results"}``: checked against
    its schema (:data:`cflbounds._schemas.FALSIFY_FILE`) before it is used, else
    :class:`InvalidParameterError` naming the file, the field and what is wrong. A best ratio
    written as ``"inf"``/``"nan"`` (strict JSON) comes back as a float."""
    data = read_json(path, FALSIFY_FILE, what="the JSON `cflbounds falsify` writes")
    check_unique_ids(path, data["results"], "results")
    for result in data["results"]:
        result["best_ratio"] = _number(result["best_ratio"])
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


SEARCH_HEIGHT = 1.8  # inches of the search figure's data area: it shares its page with the confirmation
CONFIRMATION_HEIGHT = 1.5  # the confirmation's where it has a row of its own (HTML): twenty points need little


def search_figure(result: dict) -> dict:
    """The search against evaluations: the best score so far (the objective the search
    maximises, non-decreasing), a sample of the evaluations' scores, the line at 0 where a
    violation starts, and where the coverage phase ended, with what it rules out as the
    caption under the figure; the axis spans the best-so-far curve, sampled points below it
    marked at the edge."""
    trace = result["search"]["trace"]
    # a falsify.json written before the scores were traced holds ratios ("cflbounds report" may read one)
    objective, key = (trace["objective"], "score") if "objective" in trace else ("measured / allowed", "ratio")
    best = [value for value in _finite(trace["best"][key]) if value is not None]
    ylim = None
    if best:
        low, high = min(best + [0.0]), max(best + [0.0])
        span = (high - low) or 1.0
        ylim = [low - 0.1 * span, high + 0.1 * span]
    references = [{"y": 0.0, "label": "bound"}]
    covered = trace.get("coverage_evaluations", 0)
    if covered:
        references.append({"x": covered, "label": f"coverage: {covered} uniform points"})
    coverage = result.get("coverage")
    caption = "" if not coverage else f"Coverage: {coverage['statement']}." if not coverage["points"] else \
        f"Coverage (the first {coverage['points']} evaluations, drawn uniformly): {coverage['statement']}."
    return {"kind": "line", "title": f"Search: best {objective} so far (above 0: violated)",
            "xlabel": "evaluations", "ylabel": objective, "logx": True, "logy": False, "ylim": ylim,
            "height": SEARCH_HEIGHT, "caption": caption, "share": 3,
            "nonfinite_label": "ratio inf or 0",
            "series": [{"label": "evaluation (sampled)", "x": trace["sampled"]["evaluation"],
                        "y": trace["sampled"][key], "style": "points", "color": "0.6"},
                       {"label": "best so far", "x": trace["best"]["evaluation"], "y": trace["best"][key],
                        "style": "line", "color": "C3"}],
            "reference": references}


def confirmation_figure(result: dict) -> dict:
    """Measured against bound at the reported point on each fresh confirmation seed
    (numbered 1, 2, ...: integer ticks), drawn beside the search on the claim's PDF page."""
    confirmation = result["confirmation"]
    fresh = list(range(1, len(confirmation["measured"]) + 1))
    point = (result.get("confirmed") or {}).get("point", "reported")
    which = {"search best": "the search's best point", "shrunk": "the shrunk point"}.get(point, f"the {point} point")
    return {"kind": "line", "title": f"Confirmation at {which}: {len(fresh)} fresh seeds",
            "xlabel": "fresh seed",
            "ylabel": "measured, bound", "x": fresh, "xinteger": True, "beside": True,
            "height": CONFIRMATION_HEIGHT, "share": 2,
            "series": [{"label": "measured", "y": _finite(confirmation["measured"]), "style": "points", "group": "m"},
                       {"label": "bound", "y": _finite(confirmation["bounds"]), "style": "dashed", "group": "m"}]}


def replay_command(path) -> str:
    """The command that replays a counterexample file, quoted for a POSIX shell."""
    return shlex.join(["cflbounds", "falsify", "--replay", str(path)])


def falsify_command(claim_id: str, metadata: dict) -> str:
    """The command that searches ``claim_id`` again as the run of ``metadata`` did (its seed,
    its limit: evaluations or seconds, its confidence; the device when it was CUDA), quoted
    for a POSIX shell."""
    parts = ["cflbounds", "falsify", str(claim_id)]
    if metadata.get("max_evaluations"):
        parts += ["--evaluations", str(metadata["max_evaluations"])]
    elif metadata.get("budget_seconds"):
        parts += ["--budget", f"{float(metadata['budget_seconds']):g}"]
    if metadata.get("seed") is not None:
        parts += ["--seed", str(metadata["seed"])]
    if metadata.get("confidence") not in (None, 0.95):
        parts += ["--confidence", f"{float(metadata['confidence']):g}"]
    if str(metadata.get("device", "")).startswith("cuda"):
        parts += ["--device", "cuda"]
    return shlex.join(parts)  # each argument quoted: the ID and the seed come from the run's files


def report_entry(result: dict, statement: str, directory=None) -> dict:
    """``result`` as the verdict-like dict both reports lay out (one claim's section): the
    search figure with the coverage statement under it, the confirmation on fresh seeds, the
    counterexample (or the search's best point), the command that replays it (its file under
    ``directory``/counterexamples when there is one), the evidence and the assumptions."""
    search, confirmation = result["search"], result["confirmation"]
    trace = search.get("trace") or {}
    plots = [search_figure(result)] if (trace.get("sampled") or {}).get("evaluation") else []  # none evaluated: none
    if confirmation and confirmation.get("measured"):
        plots.append(confirmation_figure(result))
    example = result["counterexample"] or search.get("best") or {}
    confirmed, coverage = result.get("confirmed"), result.get("coverage")
    limit = (f"{search['max_evaluations']} evaluations" if search.get("max_evaluations") else
             f"{_number(search.get('budget_seconds')):g} s" if search.get("budget_seconds") else "-")
    ratio = lambda value: format_ratio(_number(value))  # noqa: E731 (the digits that show the distance to 1)
    interval = f"[{', '.join(map(ratio, confirmed['interval']))}]" if confirmed else None
    evidence = {"confirmed measured/allowed": ratio(confirmed["ratio"]) if confirmed else None,
                "confirmed interval or range": interval,
                "raw best ratio (one seed, biased up)": ratio((result.get("raw_best") or {}).get("ratio")),
                "evaluations (admissible, rejected)": f"{result['evaluations']} ({search['admissible']}, "
                                                      f"{search['rejected']})",
                "limit": limit, "restarts": search["restarts"], "search seconds": search["search_seconds"]}
    if confirmation:
        evidence["confirmation trials"] = confirmation["trials"]
    if coverage:
        evidence.update({"coverage points (admissible, violating)": f"{coverage['points']} ({coverage['admissible']}, "
                                                                     f"{coverage['violating']})",
                         f"coverage volume bound ({coverage['confidence']:.0%})": coverage["volume_bound"]})
    point, parameters = None, domain_parameters(result["id"])
    if example:
        from ..reports.content import point_coordinates  # matplotlib only where a report is written

        measured, bound = format_against(_number(example.get("measured")), _number(example.get("bound")))
        values = {**point_coordinates(example.get("parameters"), result["id"]),
                  "instance seed": example.get("seed"), "measured": measured, "bound": bound}
        point = {"title": "Counterexample" if result["counterexample"] else "The search's best point", "values": values}
    details = {**({"raw best (one seed)": _raw_text(result["raw_best"])} if result.get("raw_best") else {}),
               **(example.get("details") or {})}
    if search.get("shrink"):
        shrunk = search["shrink"]
        details["shrunk point"] = (f"{format_point(shrunk['parameters'], parameters)}: "
                                   f"{'reported' if shrunk['accepted'] else 'not reported'}, {shrunk['reason']}")
    if confirmation:
        details.update({"confirmation": confirmation.get("summary"), "confirmation quantity": confirmation["quantity"]})
    replay = counterexample_file(directory, result["id"]) if directory is not None else None
    if result["counterexample"] is not None:
        details["replay"] = replay_command(replay if replay is not None and replay.exists() else
                                           result.get("counterexample_file", replay))
    if result.get("error"):
        details.update({f"error_{key}": result["error"][key] for key in ("stage", "kind", "message", "where")})
        if result["error"].get("traceback"):
            details["error_traceback"] = result["error"]["traceback"]
    try:
        summary = result_summary(result, parameters)
    except (KeyError, TypeError):  # a falsify.json of an earlier version: its own words
        summary = result["summary"]
    return {"id": result["id"], "verdict": result["outcome"], "summary": summary,
            "statement": statement,
            "trials": confirmation["trials"] if confirmation else None,
            "confidence": confirmation["confidence"] if confirmation else None, "seed": result["seed"],
            "seconds": result["seconds"], "plot": plots, "point": point,
            "assumptions": example.get("assumptions") or [], "essential_assumptions": 0, "evidence": evidence,
            "details": details}


def write_report(directory, results: list[dict] | None = None, metadata: dict | None = None) -> dict:
    """Write ``report.pdf`` and ``report.html`` of the falsify run in ``directory`` (its
    ``results`` and ``metadata``, else those of its falsify.json, checked), each atomically;
    returns their paths as ``{"report", "html"}``."""
    from ..reports.html import build_html
    from ..reports.pdf import build_report
    from ..verify.registry import claims

    directory = Path(directory)
    if results is None:
        record = read_falsify_record(directory / RECORD_NAME)
        results, metadata = record["results"], record["metadata"]
    metadata = metadata or {}
    registered = claims()
    entries = [report_entry(result, registered[result["id"]].statement if result["id"] in registered else
                            "(the claim is not registered in this environment)", directory) for result in results]
    options = {"title": "cflbounds falsify", "metadata": metadata,
               "reproduce": lambda entry: falsify_command(entry["id"], metadata)}
    html = atomic_write(directory / "report.html", lambda temporary: build_html(entries, temporary, **options),
                        within=directory)
    pdf = atomic_write(directory / "report.pdf", lambda temporary: build_report(entries, temporary, **options),
                       within=directory)
    return {"report": pdf, "html": html}
