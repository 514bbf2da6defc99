"""Assumption reports: a claim's assumption inequalities on the problems a check used.

Rows are :meth:`cflbounds.claims.Inequality.as_dict` dicts (``name``, ``lhs``, ``rhs``,
``relation``, ``holds``, ``source``); :func:`assumption_verdict` turns them into a verdict
(``holds`` if every row holds) with the tightest row per inequality and its margin figure.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..verify.verdict import Verdict

__all__ = ["assumption_verdict", "labelled", "margins", "margin_plot"]


def margins(rows) -> np.ndarray:
    """Each inequality's margin: lhs/rhs for >= and >, rhs/lhs for <= and < (1 = tight, below 1
    it fails; both sides positive)."""
    with np.errstate(divide="ignore"):
        return np.array([r["lhs"] / r["rhs"] if r["relation"] in (">=", ">") else r["rhs"] / r["lhs"] for r in rows],
                        dtype=float)


def _tightest(rows) -> list[int]:
    """The index of the row with the smallest margin of each inequality (by name), in order."""
    margin = margins(rows)
    names = dict.fromkeys(r["name"] for r in rows)
    return [min((i for i, r in enumerate(rows) if r["name"] == name), key=lambda i: margin[i]) for name in names]


def margin_plot(claim_id, rows) -> dict:
    """Bars of each inequality's smallest margin over the problems used, against 1 (tight);
    on a log axis when they and 1 span more than a decade (a linear one reads better within it)."""
    margin, tightest = margins(rows), _tightest(rows)
    shown = np.append(margin[tightest][np.isfinite(margin[tightest]) & (margin[tightest] > 0)], 1.0)
    spread = shown.max() / shown.min()
    failing = {r["name"] for r in rows if not r["holds"]}  # as judged (a margin a rounding below 1 may hold)
    return {"kind": "bar", "title": f"{claim_id}: smallest margin per inequality (lhs/rhs for >=, rhs/lhs for <=)",
            "xlabel": "inequality", "ylabel": "margin (1 = tight)", "logy": bool(spread > 10),
            "x": [rows[i]["name"] for i in tightest],
            "series": [{"label": "smallest margin over the problems used", "y": [float(margin[i]) for i in tightest],
                        "fails": [rows[i]["name"] in failing for i in tightest]}],
            "reference": [{"y": 1.0, "label": "tight; below: fails"}]}


def assumption_verdict(ctx, claim_id, rows, configurations, reading) -> Verdict:
    """An assumption report on the problems used: ``holds`` if every inequality holds on
    every configuration, ``violated`` otherwise; the tightest row per inequality is shown."""
    paper, name = claim_id.split(".", 1)
    table_name = f"{paper.lower()}_assumptions_" + name.replace("-", "_").lower()
    ctx.save_table(table_name, pd.DataFrame(rows))
    failing = [r for r in rows if not r["holds"]]
    margin = margins(rows)
    evidence = {"inequalities": len(rows), "failing": len(failing), "configurations": configurations,
                "smallest_margin_ratio": float(margin.min()), "constant": 1.0}
    worst = rows[int(np.argmin(margin))]
    summary = (f"{len(rows) - len(failing)}/{len(rows)} inequalities hold on the problems used; "
               f"tightest: {worst['name']} in {worst['source']} (margin x{margin.min():.3g})")
    return Verdict(
        claim_id, "holds" if not failing else "violated", evidence, ctx.seed, configurations, 1.0, summary,
        assumptions=[rows[i] for i in _tightest(rows)], plot=[margin_plot(claim_id, rows)],
        details={"reading": reading,
                 "rows": f"the tightest problem per inequality is shown; every row is in the table {table_name}"},
    )


def labelled(rows, label):
    """``rows`` with `` (label)`` added to each row's ``source`` (which problem a row is from)."""
    return [{**row, "source": f"{row['source']} ({label})"} for row in rows]
