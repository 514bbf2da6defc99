"""Theorem 1's condition (A38) ``rho0 <= (l/32)(mu/L)^(3/2) Delta`` under both readings of
rho0's drift term: as printed (``c4 l``, eq. 31 and A27; the default, what MGD.T1's verdict
rests on) and as the proof derives it (``beta c4 l``: A22's last term with ``eta = 1/L`` and
A26's ``||grad phi_1|| <= L``; :mod:`cflbounds.bounds.cfl_mgd`, ``c4_term``).

Every other term of rho0 vanishes as n', m grow, so A38 can hold iff the drift term is
below the threshold; l cancels and v, sigma, P do not enter. Over every admissible problem
at once the threshold is largest at ``mu = L`` (A1-A2 allow no more) and at the largest
separation Assumption 4 allows, ``Delta <= 2 max||chi*|| <= 2 C`` (``max||chi*|| <~ 1`` read
``<= C``): as printed A38 needs ``c4 < C/16`` (``C > 16 c4 = 4``); in the derivation's
reading ``beta c4 < C/16`` (``beta < C/(16 c4) = 1/4`` with ``C = 1``).
"""
from __future__ import annotations

import math

from cflbounds.bounds import cfl_mgd as bounds
from .problems import A4_CONSTANT, FAILURE, P, PROPORTION, Family, init_radius

__all__ = ["a38_on_every_problem", "a38_family", "a38_evidence"]

C4 = bounds.PROOF_CONSTANTS["c4"]


def a38_on_every_problem(c4: float = C4, C: float = A4_CONSTANT, c4_term: str = "printed", beta: float = 0.5):
    """A38 on the admissible problem where it is easiest (``mu = L``, ``Delta = 2 C``): it holds
    on some admissible problem iff it holds there (module docstring)."""
    return bounds.a38_satisfiability(v=1.0, sigma=1.0, L=1.0, mu=1.0, l=PROPORTION, P=P, delta=2.0 * C, beta=beta,
                                     failure=FAILURE, max_center_norm=C, c4=c4, points=2, c4_term=c4_term)


def a38_family(family: Family, seed: int, beta: float, c4_term: str, points: int = 13):
    """A38 at a family's exact constants (sigma^2, v^2 over Assumption 4's ball), with the
    smallest ``m n'`` over a geometric grid of ``points`` values of m when it can hold."""
    problem, _ = family.problems([seed], 4, 4, 1, "split")
    sigma2, v2 = family.variance_bounds(problem, init_radius(family))
    return bounds.a38_satisfiability(v=math.sqrt(v2), sigma=math.sqrt(sigma2), L=family.smoothness,
                                     mu=family.strong_convexity, l=PROPORTION, P=P, delta=family.delta, beta=beta,
                                     failure=FAILURE, max_center_norm=family.delta / math.sqrt(2), points=points,
                                     c4_term=c4_term)


def a38_evidence(families: list[Family], seed: int, betas) -> tuple[dict, str, list, bool]:
    """A38 under both readings, for every admissible problem and on each family (the first one
    with the smallest n', m searched): ``(evidence, summary sentence, assumption rows,
    satisfiable on some admissible problem as printed)``."""
    first = families[0]
    printed = a38_on_every_problem()
    evidence = {"a38_satisfiable_on_some_admissible_problem": printed.derived["satisfiable"], "a38_c4": C4,
                "a4_constant": A4_CONSTANT, "a38_a4_constant_needed": 16 * C4, "a38_families": len(families),
                "a38_derivation_beta_limit_on_every_problem": A4_CONSTANT / (16 * C4)}
    rows, outcome = [], {}
    for reading in bounds.C4_TERMS:
        for beta in betas:
            name = f"a38_{reading}_beta{beta:g}"
            results = [a38_family(family, seed, beta, reading, 13 if family is first else 2) for family in families]
            if reading == "printed" and beta == betas[-1]:
                rows = [row.as_dict() for result in results for row in result.assumptions]
            outcome[reading, beta] = results[0]
            evidence.update({
                f"{name}_satisfiable_on_some_admissible_problem":
                    a38_on_every_problem(c4_term=reading, beta=beta).derived["satisfiable"],
                f"{name}_satisfiable_families": int(sum(r.derived["satisfiable"] for r in results)),
                f"{name}_first_family_satisfiable": results[0].derived["satisfiable"],
                f"{name}_first_family_best_m": float(results[0].derived["best_m"]),
                f"{name}_first_family_best_n_prime": float(results[0].derived["best_n_prime"]),
                f"{name}_first_family_smallest_m_n_prime": float(results[0].value),
            })
    judged = outcome["printed", betas[-1]].derived
    evidence.update({"a38_satisfiable_families": evidence[f"a38_printed_beta{betas[-1]:g}_satisfiable_families"],
                     "a38_separation_needed_first_family": float(judged["separation_needed"]),
                     "a38_separation_allowed_by_A4": float(judged["separation_allowed_by_A4"]),
                     "a38_derivation_beta_limit_first_family": float(judged["beta_limit"])})
    satisfiable = bool(printed.derived["satisfiable"])
    return evidence, _summary(evidence, outcome, betas, first, satisfiable), rows, satisfiable


def _summary(evidence: dict, outcome: dict, betas, family: Family, satisfiable: bool) -> str:
    count = evidence["a38_families"]
    printed = ("on no admissible problem" if not satisfiable else "on some admissible problems, but on "
               f"{evidence['a38_satisfiable_families']}/{count} of the families tried")

    def derived(beta):
        result = outcome["derivation", beta]
        if not result.derived["satisfiable"]:
            return f"beta = {beta:g}: no n', m"
        return (f"beta = {beta:g}: smallest m n' = {result.value:.3g} (m = {result.derived['best_m']:.0f}, "
                f"n' = {result.derived['best_n_prime']:.3g})")

    some = [f"{beta:g}" for beta in betas
            if evidence[f"a38_derivation_beta{beta:g}_satisfiable_on_some_admissible_problem"]]
    return (
        f"A38 (rho0 <= (l/32)(mu/L)^(3/2) Delta) as printed (drift term c4 l = l/4, A27) can hold {printed}: "
        f"rho0 > c4 l for every n', m and lambdas, so A38 needs Delta > 32 c4 (L/mu)^(3/2) >= 8 "
        f"(= {evidence['a38_separation_needed_first_family']:.3g} on {family.label}), while Assumption 4's "
        f"max||chi*|| <~ 1, read with constant 1 (as A10 and A26 use it), allows Delta <= 2; this rests on that "
        f"constant: A38 needs it above 16 c4 (L/mu)^(3/2) >= {evidence['a38_a4_constant_needed']:.3g}; it fails on "
        f"{count - evidence['a38_satisfiable_families']}/{count} families tried. With the drift term as the proof "
        f"derives it (beta c4 l: A22's (eta beta/m)|C1 ∩ C1*| grad phi_1(chi_1) with eta = 1/L and A26's "
        f"||grad phi_1|| <= L) A38 can hold on an admissible problem iff beta < C/(16 c4) = "
        f"{evidence['a38_derivation_beta_limit_on_every_problem']:.3g} (mu = L, Delta = 2C): of the betas checked "
        f"({', '.join(f'{b:g}' for b in betas)}), for {', '.join(some) or 'none'}; on {family.label} only for "
        f"beta < {evidence['a38_derivation_beta_limit_first_family']:.3g}: "
        + "; ".join(derived(beta) for beta in betas)
    )
