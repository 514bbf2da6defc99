"""What the report says, decided once for its two renderers (the PDF and the HTML page).

A run becomes a :class:`RunSummary` (the verdicts at a glance: one line per claim, the counts
by verdict, the run's settings) and one :class:`ClaimEntry` per claim: a list of blocks in
reading order — statement, verdict, the figure that decided it, the error with its traceback,
the counterexample with the command that replays it, the evidence, the assumptions — and the
command that reproduces the claim. Blocks marked ``optional`` (further figures, assumption
rows with room to spare, notes) are what a renderer with a page budget may leave out; it says
so. Entries are plain verdict dicts (``Verdict.to_dict()``), so the falsify run directory's
entries (:func:`cflbounds.falsify.outputs.report_entry`) pass through the same builder.
"""
from __future__ import annotations

import numbers
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from .._words import first_clause
from ..verify.domain import format_against, format_coordinate, format_point
from ..verify.registry import domain_parameters
from ..verify.verdict import PRECEDENCE, figure_specs
from .figures import has_plot_content, single_value, spec_problem

__all__ = ["VERDICT_COLORS", "VERDICT_ORDER", "Paragraph", "Code", "Plot", "Table", "ClaimEntry", "ClaimLine",
           "RunSummary", "claim_entry", "entries_of", "with_evidence_shown", "run_summary", "format_value", "anchor",
           "verify_command", "replay_code", "REPLAY", "shortened", "SHOWN_TEXT", "headline", "point_coordinates",
           "severity", "detail_text"]

VERDICT_COLORS = {
    "holds": "#8fd19e",
    "rate-consistent": "#8fd19e",
    "violated": "#f1948a",
    "rate-inconsistent": "#f1948a",
    "vacuous": "#f8c471",
    "unsatisfiable": "#f8c471",
    "inconclusive": "#b0b0b0",
    "not-implemented": "#e6e6e6",
    "error": "#c39bd3",  # the claim's own code failed: not judged
    "no counterexample found": "#aed6f1",  # cflbounds falsify: the search and its confirmation found none
}
# the verdicts' precedence (PRECEDENCE), most serious first, with falsify's outcome among them: the counts on
# page 1 read in this order, and sorting the HTML table by verdict follows it
VERDICT_ORDER = (*PRECEDENCE[:PRECEDENCE.index("rate-consistent") + 1], "no counterexample found",
                 *PRECEDENCE[PRECEDENCE.index("rate-consistent") + 1:])
ESSENTIAL_ASSUMPTIONS = 3  # assumption rows always shown: every failing one, then the tightest up to this many
ESSENTIAL_EVIDENCE = 24  # evidence always shown: the claim's first quantities (it lists the deciding ones first)
_COMMAND_DETAILS = ("replay",)  # details that are commands: shown as code, not as a table cell
# Characters of one text a report prints (a paragraph, a table cell, a traceback) and of a
# figure's text (a title, a label, a note): a run's file may hold 100,000 (cflbounds/_schemas.py),
# which would take a claim 80 pages and minutes to print. A default run's longest: 1,886.
SHOWN_TEXT = 10_000
SHOWN_FIGURE_TEXT = 1_000
_FIGURE_TEXTS = ("title", "note", "caption", "xlabel", "ylabel", "colorbar", "nonfinite_label")


def shortened(text, limit: int = SHOWN_TEXT, keep_end: bool = False) -> str:
    """``text`` as a report prints it: whole up to ``limit`` characters, else its first (with
    ``keep_end``, its last: a traceback's) ``limit`` and how many more the run's file holds."""
    text = str(text)
    if len(text) <= limit:
        return text
    cut = f"… ({len(text) - limit} more characters in the run's file)"
    return f"{cut}\n{text[-limit:]}" if keep_end else f"{text[:limit]} {cut}"


@dataclass(frozen=True)
class Paragraph:
    """Text under an optional heading; ``role`` "lead" (the verdict's own words), "body" or "muted"."""
    text: str
    title: str = ""
    role: str = "body"
    optional: bool = False

    def __post_init__(self):
        object.__setattr__(self, "text", shortened(self.text))


@dataclass(frozen=True)
class Code:
    """Monospace text to copy or read as is: a command, a traceback (its end kept)."""
    text: str
    title: str = ""
    optional: bool = False

    def __post_init__(self):
        object.__setattr__(self, "text", shortened(self.text, keep_end=True))


@dataclass(frozen=True)
class Plot:
    """A figure spec (:func:`cflbounds.reports.figures.plot_from_spec`) and the ``caption``
    printed under it (what the figure's own labels cannot say, e.g. what a search's coverage
    phase rules out)."""
    spec: dict
    optional: bool = False
    caption: str = ""
    beside: dict | None = None  # a second spec drawn to its right on a printed page (after it in HTML)


@dataclass(frozen=True)
class Table:
    """Rows of text cells; ``widths`` shares of the text width; ``fills`` a background colour
    (or None) per cell; ``pairs`` marks a quantity-value table a renderer may fold into two
    pairs per row when it has more than ``fold_after`` rows."""
    title: str
    columns: list
    rows: list
    widths: list
    fills: list | None = None
    pairs: bool = False
    optional: bool = False
    fold_after: int = 8

    def __post_init__(self):
        object.__setattr__(self, "rows", [[shortened(cell) for cell in row] for row in self.rows])


@dataclass(frozen=True)
class ClaimEntry:
    """One claim's section: its ID, verdict, the anchor naming it in the HTML page, one line
    of run facts (trials, confidence, seed, scale, seconds), the command that checks it again
    (shown under its name) and its blocks."""
    id: str
    verdict: str
    anchor: str
    facts: str
    reproduce: str = ""
    blocks: list = field(default_factory=list)


@dataclass(frozen=True)
class ClaimLine:
    """A claim's line on page 1: ID, verdict, the summary's first clause, its paper."""
    id: str
    verdict: str
    headline: str
    paper: str
    anchor: str

    def __post_init__(self):
        object.__setattr__(self, "headline", shortened(self.headline, SHOWN_FIGURE_TEXT))


@dataclass(frozen=True)
class RunSummary:
    """Page 1: the title, the run's settings as (name, value), the counts by verdict (most
    serious first) and one line per claim."""
    title: str
    settings: list
    counts: list
    lines: list


def severity(verdict: str) -> int:
    """Where ``verdict`` stands in :data:`VERDICT_ORDER` (0: the most serious); a word it does
    not know comes after every one it knows."""
    return VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER)


def format_value(value) -> str:
    """Numbers to 4 significant digits (integers exactly; inf and nan by name), None as a dash,
    lists per item."""
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        shown = ", ".join(format_value(v) for v in value[:4])
        return f"[{shown}, … ({len(value)} values)]" if len(value) > 4 else f"[{shown}]"
    return str(value)


def detail_text(value) -> str:
    """A detail as a reader reads it: text as it is, numbers by :func:`format_value`, a mapping
    as ``name: value; ...`` and a list as ``a, b, c`` (never a Python repr with its braces and
    quotes)."""
    if isinstance(value, dict):
        return "; ".join(f"{name}: {detail_text(item)}" for name, item in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(detail_text(item) for item in value)
    return value if isinstance(value, str) else format_value(value)


def anchor(claim_id: str) -> str:
    """The HTML id of a claim's section: ``claim-`` and the ID, any character outside
    letters, digits, ``.``, ``-`` and ``_`` replaced by ``_`` (``claim-IFCA.A3-6``)."""
    return "claim-" + re.sub(r"[^A-Za-z0-9._-]", "_", str(claim_id))


def verify_command(verdict: dict, device: str | None = None) -> str:
    """The command that checks this claim again as this run did (a CUDA run's device named:
    its sums differ in the last digits), each argument quoted for a POSIX shell
    (``shlex.join``): the ID and seed come from the run's files, and the command is pasted."""
    parts = ["cflbounds", "verify", str(verdict.get("id", ""))]
    if verdict.get("scale"):
        parts += ["--scale", str(verdict["scale"])]
    if verdict.get("seed") is not None:
        parts += ["--seed", str(verdict["seed"])]
    if isinstance(device, str) and device.startswith("cuda"):
        parts += ["--device", "cuda"]
    return shlex.join(parts)


REPLAY = ("cflbounds", "falsify", "--replay")


def replay_code(text) -> str | None:
    """A stored replay command (``cflbounds falsify --replay FILE`` of a run's files) as the
    command to paste, FILE quoted as one argument (``shlex.join``) whether it was stored
    quoted or not (an older cflbounds wrote it bare); None for text that is not such a command
    (shown as text, with no copy button)."""
    prefix = " ".join(REPLAY) + " "
    text = str(text)
    if not text.startswith(prefix) or "\n" in text or len(text) > SHOWN_TEXT:
        return None
    rest = text[len(prefix):]
    try:
        words = shlex.split(rest)
    except ValueError:  # an unbalanced quote: the bare path of an older file
        words = []
    return shlex.join([*REPLAY, words[0] if len(words) == 1 else rest])


# what page 1 says beside a smoke run's scale (docs/verdicts.md, "Smoke and default")
SMOKE_SETTING = (" (small problems and short searches, for a quick look: the default scale's verdicts are the "
                 "reference)")


def headline(verdict: dict) -> str:
    """A verdict's line in a table of claims: its ``headline`` if it has one, else its summary's
    first clause (:func:`~cflbounds._words.first_clause`)."""
    return first_clause(verdict.get("headline") or verdict.get("summary"))


def run_summary(verdicts: list[dict], title: str, metadata: dict | None, generated) -> RunSummary:
    """Page 1's content: settings from the run's metadata (scale, seed, device, version,
    revision, date, command) or, without metadata, what the verdicts state; a claim's line
    is its verdict's ``headline`` if it has one, else its summary's first clause."""
    metadata = metadata or {}
    settings = []
    for name in ("scale", "seed"):
        values = sorted({str(v[name]) for v in verdicts if v.get(name) not in (None, "")})
        value = metadata.get(name, ", ".join(values) if values else None)
        if value not in (None, ""):
            settings.append((name, str(value) + (SMOKE_SETTING if (name, str(value)) == ("scale", "smoke") else "")))
    for name, key in (("device", "device"), ("executor", "executor")):
        if metadata.get(key):
            settings.append((name, str(metadata[key])))
    version = metadata.get("cflbounds")
    revision = metadata.get("revision")
    if version or revision:
        settings.append(("cflbounds", " ".join(filter(None, [version, f"({str(revision)[:12]})" if revision else ""]))))
    when = metadata.get("finished") or metadata.get("started")
    settings.append(("date", str(when).replace("T", " ") if when else f"{generated:%Y-%m-%d %H:%M:%S %Z} (report)"))
    if metadata.get("command"):
        settings.append(("command", shlex.join(str(word) for word in metadata["command"])))
    counts = Counter(v.get("verdict", "") for v in verdicts)
    ordered = sorted(counts.items(), key=lambda item: (severity(item[0]), item[0]))
    lines = [ClaimLine(str(v.get("id", "")), str(v.get("verdict", "")),
                       headline(v), str(v.get("id", "")).split(".")[0],
                       anchor(v.get("id", ""))) for v in verdicts]
    return RunSummary(title, settings, ordered, lines)


def _facts(verdict: dict) -> str:
    facts = [f"{name} {format_value(verdict.get(name))}" for name in ("trials", "confidence", "seed")
             if verdict.get(name) is not None]
    facts += [f"scale {verdict['scale']}"] if verdict.get("scale") else []
    facts += [f"{float(verdict['seconds']):.1f} s"] if verdict.get("seconds") else []
    return " · ".join(facts)


def _figure_blocks(specs: list[dict]) -> list:
    """The deciding figure (the first spec), then the others as optional; a spec's
    ``"caption"`` goes under its figure, and one marked ``"beside"`` beside the figure before
    it (:attr:`Plot.beside`: essential with it); a bar chart whose bars all have one value is
    said in a sentence instead of drawn, and a spec that cannot be drawn (:func:`.figures.spec_problem`:
    a crafted or damaged file) says why instead."""
    blocks = []
    for index, spec in enumerate(_readable(s) for s in specs if has_plot_content(s)):
        problem = spec_problem(spec)
        if problem:  # a run's file that the figure cannot be drawn from: said where the figure would be
            blocks.append(Paragraph(f"{spec.get('title') or 'Figure'} — not drawn: {problem}.", role="muted",
                                    optional=index > 0))
            continue
        value = single_value(spec)
        if value is None and spec.get("beside") and blocks and isinstance(blocks[-1], Plot) \
                and blocks[-1].beside is None:
            blocks[-1] = replace(blocks[-1], beside=spec)  # one row of two figures
            continue
        if value is None:
            blocks.append(Plot(spec, optional=index > 0, caption=spec.get("caption", "")))
            continue
        names = [str(x) for x in spec.get("x", [])]
        failing = [name for s in spec["series"] for name, fail in zip(names, s.get("fails") or []) if fail]
        label = spec["series"][0].get("label") or spec.get("ylabel") or "value"
        which = f"the one {spec.get('xlabel') or 'bar'} ({names[0]})" if len(names) == 1 else \
            f"each of the {len(names)} {spec.get('xlabel') or 'bars'}s"
        text = (f"{spec.get('title') or 'Figure'} — not drawn: {label} is {format_value(value)} for {which}"
                + (f"; failing: {', '.join(failing)}" if failing else "") + ".")
        blocks.append(Paragraph(text, role="muted", optional=index > 0))
    return blocks


def _readable(spec: dict) -> dict:
    """``spec`` with its texts (title, note, labels) shortened to :data:`SHOWN_FIGURE_TEXT`."""
    def texts(item: dict) -> dict:
        return {**item, **{key: shortened(item[key], SHOWN_FIGURE_TEXT) for key in (*_FIGURE_TEXTS, "label")
                           if isinstance(item.get(key), str)}}

    return {**texts(spec), **{key: [texts(item) if isinstance(item, dict) else item for item in spec[key]]
                              for key in ("series", "reference") if isinstance(spec.get(key), list)}}


def _error_blocks(details: dict) -> list:
    """A claim whose own code failed: what raised where, and the traceback as code."""
    if not any(key.startswith("error_") for key in details):
        return []
    where = " ".join(filter(None, [details.get("error_kind", ""), f"at {details['error_where']}"
                                   if details.get("error_where") else ""]))
    text = (f"The claim's own code failed during its {details.get('error_stage', 'check')}: {where}: "
            f"{details.get('error_message', '')}")
    blocks = [Paragraph(text, title="Error")]
    if details.get("error_traceback"):
        blocks.append(Code(str(details["error_traceback"]).rstrip(), title="Traceback"))
    return blocks


def _point(parameters: dict, claim_id) -> str:
    """A point of ``claim_id``'s domain in the digits that matter (:func:`format_point`)."""
    return format_point(parameters or {}, domain_parameters(str(claim_id)))


def point_coordinates(parameters: dict, claim_id) -> dict:
    """A point's coordinates as text, each in the digits that matter (:func:`format_coordinate`)."""
    ends = {p.name: (p.low, p.high) for p in domain_parameters(str(claim_id)) or ()}
    return {name: format_coordinate(value, ends.get(name, ())) for name, value in (parameters or {}).items()}


def _point_table(title: str, values: dict, rows: list | None = None) -> Table:
    """A point of a claim's domain (a counterexample, a search's best point) as a
    parameter-value table: ``values`` formatted, then ``rows`` as they are."""
    cells = [[str(name), format_value(value)] for name, value in values.items()] + list(rows or [])
    return Table(title, ["parameter", "value"], cells, [0.42, 0.58], pairs=True, fold_after=4)  # room for a seed


def _search_blocks(verdict: dict) -> list:
    """The designed experiment's own result and the search's, when ``verify`` searched the
    claim (they replace the combined summary, which says the same in one line); the
    counterexample with the command that replays it."""
    designed, search = verdict.get("designed"), verdict.get("search")
    lines = []
    if designed:
        lines.append(f"designed experiment: {designed.get('verdict', '')}"
                     + (f" — {designed['summary']}" if designed.get("summary") else ""))
    if not search:
        return [Paragraph("\n".join(lines), title="Verdict", role="lead")] if lines else []
    if search.get("reason"):  # not run
        lines.append(f"search: {search.get('outcome', '')} — {search['reason']}")
        return [Paragraph("\n".join(lines), title="Verdict", role="lead")]
    example = search.get("counterexample")
    found = f" at {_point(example.get('parameters'), verdict.get('id'))}" if example and example.get("parameters") else ""
    counts = [f"best measured/allowed {format_value(search.get('best_ratio'))}" if search.get("best_ratio") is not None
              else "", f"{format_value(search.get('evaluations'))} evaluations" if search.get("evaluations") is not None
              else "", f"{float(search['seconds']):.1f} s" if search.get("seconds") is not None else ""]
    lines.append(f"search: {search.get('outcome', '')}{found} ({', '.join(filter(None, counts))})"
                 + (f"; coverage: {search['coverage']['statement']}" if search.get("coverage") else ""))
    blocks = [Paragraph("\n".join(lines), title="Verdict", role="lead")]  # the summary, reading by reading
    if example:
        values = {**point_coordinates(example.get("parameters"), verdict.get("id")),
                  **{name: example.get(name) for name in ("seed", "measured", "bound", "ratio") if name in example}}
        if isinstance(values.get("measured"), numbers.Real) and isinstance(values.get("bound"), numbers.Real):
            values["measured"], values["bound"] = format_against(values["measured"], values["bound"])
        rows = []
        confirmation = search.get("confirmation")
        if confirmation:
            rows += [["confirmation trials", format_value(confirmation.get("trials"))],
                     ["confirmation interval", format_value(confirmation.get("interval"))]]
            if confirmation.get("summary"):
                rows.append(["confirmation", str(confirmation["summary"])])
        blocks.append(_point_table("Counterexample", values, rows))
    if search.get("replay"):
        blocks.append(_command_block(search["replay"], "Replay the counterexample"))
    return blocks


def _command_block(text, title: str):
    """A stored command as code to copy when it is one (:func:`replay_code`), else as text."""
    command = replay_code(text)
    return Code(command, title=title) if command else Paragraph(str(text), title=title, role="muted")


def _evidence_blocks(rows: list, shown: int) -> list:
    """The evidence: its first ``shown`` quantities (a claim lists the deciding ones first),
    then the others as an optional table."""
    blocks = [Table("Evidence", ["quantity", "value"], rows[:shown], [0.68, 0.32], pairs=True)] if rows else []
    if len(rows) > shown:
        blocks.append(Table(f"Evidence: the other {len(rows) - shown} quantities", ["quantity", "value"],
                            rows[shown:], [0.68, 0.32], pairs=True, optional=True))
    return blocks


def with_evidence_shown(entry: ClaimEntry, shown: int) -> ClaimEntry:
    """``entry`` with only the first ``shown`` evidence quantities essential (what a page with
    little room prints; the others stay in the entry, optional)."""
    evidence = [b for b in entry.blocks if isinstance(b, Table) and b.title.startswith("Evidence")]
    if not evidence:
        return entry
    rows = [row for table in evidence for row in table.rows]
    at = entry.blocks.index(evidence[0])
    blocks = [b for b in entry.blocks if b not in evidence]
    return replace(entry, blocks=blocks[:at] + _evidence_blocks(rows, shown) + blocks[at:])


def _assumption_blocks(assumptions: list[dict], essential: int = ESSENTIAL_ASSUMPTIONS) -> list:
    """The assumption rows, failing first then by slack: those and the tightest up to
    ``essential``, then the rest (optional)."""
    keys = ["name", "lhs", "relation", "rhs", "slack", "holds", "source"]
    widths = [0.2, 0.11, 0.09, 0.12, 0.11, 0.07, 0.30]

    def slack(row):
        try:
            return float(row.get("slack"))
        except (TypeError, ValueError):
            return float("inf")

    ordered = sorted(assumptions, key=lambda row: (bool(row.get("holds")), slack(row)))
    shown = max(essential, sum(not row.get("holds") for row in ordered))

    def table(rows, title, optional):
        cells = [[format_value(row.get(key)) for key in keys] for row in rows]
        fills = [[None] * 5 + [VERDICT_COLORS["holds" if row.get("holds") else "violated"], None] for row in rows]
        return Table(title, keys, cells, widths, fills, optional=optional)

    blocks = [table(ordered[:shown], "Assumptions", False)] if ordered and shown else []
    if len(ordered) > shown:
        rest = "Assumptions" + (f": the other {len(ordered) - shown} rows (all hold with more room)" if shown else
                                " (all hold)")
        blocks.append(table(ordered[shown:], rest, True))
    return blocks


def claim_entry(verdict: dict, *, reproduce: str | None = None) -> ClaimEntry:
    """The blocks of one claim's section. ``reproduce``: the command that checks the claim
    again (:func:`verify_command` for a verify run; a falsify run gives its own). A
    verdict's ``point`` (``{"title", "values"}``: a falsify result's counterexample or best
    point) is a parameter table after its figures; its ``essential_assumptions`` (default
    :data:`ESSENTIAL_ASSUMPTIONS`) how many assumption rows that hold a page must show (a
    falsify result's point is admissible: every row holds, and they are shown where there
    is room)."""
    details = dict(verdict.get("details") or {})
    blocks = []
    if verdict.get("statement"):
        blocks.append(Paragraph(str(verdict["statement"]), title="Statement"))
    if verdict.get("summary") and not verdict.get("designed"):
        blocks.append(Paragraph(str(verdict["summary"]), title="Verdict", role="lead"))
    blocks += _search_blocks(verdict)
    blocks += _error_blocks(details)
    figures = _figure_blocks(figure_specs(verdict.get("plot")))
    blocks += [b for b in figures if not b.optional]
    point = verdict.get("point")  # a falsify result's counterexample or best point
    if point:
        blocks.append(_point_table(point["title"], point["values"]))
    for key in _COMMAND_DETAILS:
        if details.get(key):
            blocks.append(_command_block(details[key], key.capitalize()))
    blocks += _evidence_blocks([[str(name), format_value(value)]
                                for name, value in (verdict.get("evidence") or {}).items()], ESSENTIAL_EVIDENCE)
    blocks += _assumption_blocks(verdict.get("assumptions") or [],
                                 verdict.get("essential_assumptions", ESSENTIAL_ASSUMPTIONS))
    blocks += [b for b in figures if b.optional]
    notes = {key: value for key, value in details.items()
             if not key.startswith("error_") and key not in _COMMAND_DETAILS}
    if notes:
        blocks.append(Table("Details", ["detail", "value"], [[str(k), detail_text(v)] for k, v in notes.items()],
                            [0.22, 0.78], optional=True))
    return ClaimEntry(str(verdict.get("id", "")), str(verdict.get("verdict", "")), anchor(verdict.get("id", "")),
                      _facts(verdict), reproduce or "", blocks)


def entries_of(verdicts: list[dict], reproduce=None) -> list[ClaimEntry]:
    """The claim entries of ``verdicts`` in their order; ``reproduce(verdict)`` gives a
    claim's command (none without it: a verify run passes :func:`verify_command`, a falsify
    run its own)."""
    return [claim_entry(v, reproduce=reproduce(v) if reproduce else None) for v in verdicts]
