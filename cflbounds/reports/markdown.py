"""Runs as Markdown tables. A verify run's verdicts: per claim the designed experiment's verdict,
what the search of its domain found, and the final verdict (the stronger of the two,
:data:`cflbounds.verify.verdict.PRECEDENCE`); the README's claim table is its output for a
default run. A falsify run's results: per claim what the search found, its seconds and the
counterexample's point; docs/falsify.md's table is its output. ``cflbounds report DIR --markdown``
prints the one of the run in DIR.

Every cell is text of a run's files (or of a plugin's claim), so it is made inert first
(:func:`markdown_text`): no raw HTML, no ``|`` that would split the row, no line break, no
terminal escape sequence."""
from __future__ import annotations

import math
import re

from ..verify.domain import format_against, format_ratio
from .content import point_coordinates

__all__ = ["verdict_table", "search_table", "markdown_text"]

COLUMNS = ("claim", "designed experiment", "search", "final verdict")
SEARCH_COLUMNS = ("claim", "search", "seconds", "counterexample")
# ANSI escape sequences (CSI ... final byte, OSC ... BEL or ST, a lone ESC and its next character),
# then any other control character
_TERMINAL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?|[\x00-\x08\x0b-\x1f\x7f-\x9f]",
                       re.S)
# what Markdown (CommonMark) would read as markup rather than text: "<" opening a tag (a name, then
# a space, "/" or ">"), a closing tag, a comment, a declaration or an autolink ("<scheme:"), and
# "&" opening an entity; "<T)" or "< 0.07" stay text
_MARKUP = re.compile(r"<(?=[A-Za-z][A-Za-z0-9-]*(?:[\s/>]|$)|[/!?]|[A-Za-z][A-Za-z0-9+.\-]{1,31}:)|&(?=#?\w+;)")
_ENTITIES = {"<": "&lt;", "&": "&amp;", "|": "&#124;"}


def markdown_text(text, *, cell: bool = True) -> str:
    """``text`` as inert Markdown on one line (a table cell, or with ``cell`` False a list
    item): terminal escape sequences and other control characters removed, line breaks made
    spaces, and what Markdown would read as raw HTML or an entity (and in a cell, ``|``: a
    column break) written as an entity, which renders as the character; a ``<`` that opens
    nothing stays as it is (``< 0.072``, ``sum_(t<T)``)."""
    text = _TERMINAL.sub("", str(text).replace("\r\n", " ").replace("\n", " ").replace("\t", " "))
    text = _MARKUP.sub(lambda match: _ENTITIES[match.group()], text)
    return text.replace("|", _ENTITIES["|"]) if cell else text


def _row(cells) -> str:
    return "| " + " | ".join(markdown_text(cell) for cell in cells) + " |"


def _search_cell(verdict: dict) -> str:
    """What the search found, in a few words: ``violated (measured/allowed 4.056; ...)`` (or
    measured against bound, where the bound is <= 0), ``none found (best measured/allowed 0.97;
    violating share of the volume < 0.0025 ...)``, ``not run (designed: violated)``, ``error``
    or ``-`` (no domain, or no search in the run)."""
    search = verdict.get("search")
    if not search:
        return "-"
    outcome = search["outcome"]
    if search.get("reason"):  # not run: the designed experiment's violation is final
        return f"{outcome} (designed: violated)"
    evaluations = f"{search['evaluations']} evaluations"
    if outcome == "violated":
        ratio = float(search["best_ratio"])
        example = search.get("counterexample") or {}
        if math.isinf(ratio) and "measured" in example:  # a bound <= 0 exceeded: the numbers say more
            measured, bound = format_against(example["measured"], example["bound"])
            return f"violated (measured {measured} > bound {bound}; {evaluations})"
        return f"violated (measured/allowed {format_ratio(ratio)}; {evaluations})"
    if outcome == "error":
        return "error"
    parts = [f"best measured/allowed {format_ratio(search['best_ratio'])}"] if search.get("best_ratio") is not None \
        else []
    coverage = search.get("coverage") or {}
    if coverage.get("admissible"):
        parts.append(f"violating share of the volume < {coverage['volume_bound']:.2g} at "
                     f"{coverage['confidence']:.0%}")
    return f"none found ({'; '.join(parts + [evaluations])})"


def verdict_table(verdicts: list[dict]) -> str:
    """``verdicts`` (``verdicts.json``'s list) as a Markdown table (module docstring)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for verdict in verdicts:
        designed = (verdict.get("designed") or {}).get("verdict", verdict["verdict"])
        final = verdict["verdict"]
        shown = f"**{final}**" if final != designed else final
        lines.append(_row([verdict["id"], designed, _search_cell(verdict), shown]))
    return "\n".join(lines) + "\n"


def search_table(results: list[dict]) -> str:
    """A falsify run's ``results`` (``falsify.json``'s list) as a Markdown table (module
    docstring): the search's finding as in :func:`verdict_table`, and the counterexample's
    parameters with what was measured against the bound at its seed."""
    lines = ["| " + " | ".join(SEARCH_COLUMNS) + " |", "|" + "---|" * len(SEARCH_COLUMNS)]
    for result in results:
        example = result.get("counterexample") or {}
        point = ", ".join(f"{name}={value}" for name, value in  # the digits that matter (format_coordinate)
                          point_coordinates(example.get("parameters"), result["id"]).items())
        if point and "measured" in example:
            point += "; measured {} vs bound {}".format(*format_against(example["measured"], example["bound"]))
        seconds = result.get("seconds")
        seconds = f"{seconds:.0f}" if isinstance(seconds, float) and math.isfinite(seconds) else "-"
        lines.append(_row([result["id"], _search_cell({"search": result}), seconds, point or "-"]))
    return "\n".join(lines) + "\n"
