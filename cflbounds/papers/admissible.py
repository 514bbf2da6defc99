"""What the catalogue's claims judged on exact instances share: a deterministic verdict over the
instances that meet the theorem's hypotheses (FedProx, CFL).

A table has one row per instance with ``measured``, ``bound``, ``admissible`` (every hypothesis
row holds) and ``rows`` (those rows, ``Inequality.as_dict()``); an inadmissible instance is
counted and never judged.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from cflbounds.claims import Verdict, rules

__all__ = ["judged", "saved_and_judged", "measured_over_bound"]


def measured_over_bound(measured, bound) -> np.ndarray:
    """``measured / bound``; against a bound <= 0, ``inf`` when exceeded and 0 otherwise."""
    measured, bound = np.asarray(measured, dtype=float), np.asarray(bound, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(bound > 0, measured / np.where(bound > 0, bound, 1.0), np.where(measured > bound, np.inf, 0.0))


def judged(claim_id: str, ctx, table: pd.DataFrame, rtol: float, quantity: str, details: dict, describe,
           evidence: dict | None = None) -> Verdict:
    """``rules.deterministic`` (tolerance ``rtol``) on the admissible rows of ``table``
    (``inconclusive`` when there is none); the summary adds the inadmissible count, for one-round
    decrease claims (columns ``decrease``, ``promised``) the smallest realised/promised decrease,
    and the instance closest to its bound (``describe(row)``), whose rows are the verdict's
    assumption rows (for a count against 0, the instance with the smallest ``margin`` when no
    count is positive); ``evidence`` adds entries."""
    admissible = table[table["admissible"]]
    if admissible.empty:
        return Verdict(claim_id, "inconclusive", {"instances": len(table), "admissible_instances": 0}, ctx.seed,
                       len(table), 1.0, f"inconclusive: none of the {len(table)} instances meets the theorem's "
                       "hypotheses (their rows are the first instance's)", assumptions=list(table.iloc[0]["rows"]),
                       details=details)
    decision = rules.deterministic(admissible["measured"].to_numpy(), admissible["bound"].to_numpy(), rtol=rtol,
                                   quantity=quantity, title=f"{claim_id}: {quantity} over the bound, per instance")
    ratio = pd.Series(measured_over_bound(admissible["measured"], admissible["bound"]), index=admissible.index)
    implication = bool((admissible["bound"] == 0).all())  # "no instance has any": a count against 0
    closest = admissible.loc[ratio.idxmax() if ratio.max() > 0 or "margin" not in admissible else
                             admissible["margin"].idxmin()]
    evidence = {**(evidence or {}), "admissible_instances": len(admissible),
                "inadmissible_instances": len(table) - len(admissible), "measured_over_bound_max": float(ratio.max()),
                "measured_over_bound_median": float(ratio.median())}
    if "promised" in admissible:
        with np.errstate(divide="ignore", invalid="ignore"):
            kept = admissible["decrease"] / admissible["promised"]
        evidence.update(decrease_over_promised_min=float(kept.min()),
                        decrease_over_promised_median=float(kept.median()))
    kept = (f"; the realised decrease is at least {evidence['decrease_over_promised_min']:.4g} times the promised "
            f"rho ||grad f(w^t)||^2 (median {evidence['decrease_over_promised_median']:.3g})"
            if "decrease_over_promised_min" in evidence else "")
    core = (f"{quantity} > 0 on {decision.evidence['violations']} of {len(admissible)} admissible instances (bound 0)"
            if implication else f"{decision.summary.split(': ', 1)[1]} over {len(admissible)} admissible instances")
    summary = (f"{decision.verdict}: {core} ({len(table) - len(admissible)} inadmissible){kept}; closest: "
               f"{describe(closest)}")
    return replace(decision, summary=summary).as_verdict(claim_id, ctx, evidence=evidence, details=details,
                                                         assumptions=list(closest["rows"]))




def saved_and_judged(claim_id: str, ctx, name: str, table: pd.DataFrame, rtol: float, quantity: str, details: dict,
                     describe, evidence: dict | None = None) -> Verdict:
    """``table`` saved as the run's table ``name`` (without its rows of dicts), then :func:`judged`."""
    ctx.save_table(name, table.drop(columns="rows"))
    return judged(claim_id, ctx, table, rtol, quantity, details, describe, evidence)
