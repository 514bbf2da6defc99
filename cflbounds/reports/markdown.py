"""A verify run's verdicts as a Markdown table: per claim the designed experiment's verdict, what
the search of its domain found, and the final verdict (the stronger of the two,
:data:`cflbounds.verify.verdict.PRECEDENCE`). ``cflbounds report DIR --markdown`` prints it; the
README's claim table is its output for a default run."""
from __future__ import annotations

import math

from ..verify.domain import format_against, format_ratio

__all__ = ["verdict_table"]

COLUMNS = ("claim", "designed experiment", "search", "final verdict")


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
        lines.append(f"| {verdict['id']} | {designed} | {_search_cell(verdict)} | {shown} |")
    return "\n".join(lines) + "\n"
