"""Tight references for CFL-MGD's contraction claims: the performance-estimation worst case
of the step the theory analyses, beside the paper's factor ``1 - l mu/(8L)``.

With ``eta = 1/L`` (Lemma 2, Theorem 1) and every client of cluster p correctly assigned,
the server's step on cluster p is heavy ball on ``phi_p`` with effective step
``eta |C_p|/m = l_p / L``; the proof only uses ``eta^ >= l/(4L)`` (A6-A7), where the tight
gradient-step factor is ``1 - l mu/(4L)``. For each beta (beta = 0 is IFCA's gradient
step): one step from the state ball (the factor a lemma of Lemma 2's form could claim) at
both effective steps; from rest at ``l/L``, the per-step rate over every horizon up to T,
``max_{t <= T} (worst case after t steps)^(1/t)`` (:func:`~cflbounds.bounds.pep.heavy_ball_rate`;
one horizon's T-th root can be 0 where the worst case crosses zero at T), and the spectral
radius of the step on the quadratics of ``F_{mu,L}`` (its asymptotic rate there).
"""
from __future__ import annotations

from cflbounds.bounds import cfl_mgd as bounds
from cflbounds.bounds.pep import heavy_ball_rate, heavy_ball_spectral_radius, heavy_ball_worst_case

__all__ = ["tight_factors", "factor_plot"]


def tight_factors(mu: float, L: float, l: float, betas, steps: int) -> list[dict]:
    """One row per beta: the paper's factor, the tight one-step factors at the two effective
    steps, the tight rate from rest over horizons ``t <= steps`` (and the t attaining it), the
    spectral radius on the quadratics, and the precision the tight values were certified to
    (the largest duality gap and replay residual over the row's solves; how many solves are
    certified brackets rather than tight values, whose upper ends are reported, and the
    largest relative width)."""
    rows = []
    for beta in betas:
        step, proof_step = l / L, l / (4 * L)
        from_rest = heavy_ball_rate(L, mu, step, beta, steps, "at-rest")
        one_step = heavy_ball_worst_case(L, mu, step, beta, 1, "state")
        proof = heavy_ball_worst_case(L, mu, proof_step, beta, 1, "state")
        solves = (from_rest, one_step, proof)
        rows.append({
            "beta": float(beta),
            "paper_factor": bounds.contraction_factor(l, mu, L),
            "pep_one_step": one_step["worst_case"],
            "pep_rate_from_rest": from_rest["rate"],
            "pep_rate_from_rest_horizon": from_rest["horizon"],
            "pep_one_step_proof_step": proof["worst_case"],
            "spectral_radius": heavy_ball_spectral_radius(L, mu, step, beta),
            "pep_duality_gap_max": max(solved["duality_gap"] for solved in solves),
            "pep_primal_residual_max": max(solved["primal_residual"] for solved in solves),
            "pep_brackets": from_rest["brackets"] + sum(solved["certified"] == "bracket"
                                                        for solved in (one_step, proof)),
            "pep_width_max": max(solved["width"] for solved in solves),
        })
    return rows


def factor_plot(title: str, rows: list[dict], measured: dict, steps: int) -> dict:
    """A bar chart per beta: the paper's factor, the tight ones (labelled as upper ends when some
    solve is a certified bracket) and the measured ``measured[label]`` (lists over the same betas)."""
    bracketed = " (upper ends of certified brackets)" if any(r["pep_brackets"] for r in rows) else ""
    series = [{"label": "paper: 1 - l mu/(8L)", "y": [r["paper_factor"] for r in rows]},
              {"label": f"tight, one step from the state ball (eta l/L){bracketed}",
               "y": [r["pep_one_step"] for r in rows]},
              {"label": f"tight rate from rest, max over t <= {steps} (eta l/L){bracketed}",
               "y": [r["pep_rate_from_rest"] for r in rows]},
              {"label": "spectral radius on the quadratics (asymptotic)", "y": [r["spectral_radius"] for r in rows]}]
    series += [{"label": label, "y": values} for label, values in measured.items()]
    return {"kind": "bar", "title": title, "xlabel": "beta", "ylabel": "factor on ||chi - chi*||",
            "x": [f"beta={r['beta']:g}" for r in rows], "series": series}
