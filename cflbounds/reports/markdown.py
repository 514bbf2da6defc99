"""A verify run's verdicts as a Markdown table: per claim the designed experiment's verdict, what
the search of its domain found, and the final verdict (the stronger of the two,
:data:`cflbounds.verify.verdict.PRECEDENCE`). ``cflbounds report DIR --markdown`` prints it; the
README's claim table is its output for a default run."""
from __future__ import annotations

from ..verify.domain import format_ratio

__all__ = ["verdict_table"]

COLUMNS = ("claim", "designed experiment", "search", "final verdict")


def _search_cell(verdict: dict) -> str:
    """What the search found, in a few words: ``violated (ratio 4.056)``, ``none found (best
    0.97; violating volume < 0.0025)``, ``error`` or ``-`` (no domain, or no search in the run)."""
    search = verdict.get("search")
    if not search:
        return "-"
    outcome = search["outcome"]
    evaluations = f"{search['evaluations']} evaluations"
    if outcome == "violated":
        return f"violated (measured/allowed {format_ratio(search['best_ratio'])}; {evaluations})"
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
