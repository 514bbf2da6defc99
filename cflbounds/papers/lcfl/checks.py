"""How LCFL's claims are measured and judged (claims LCFL.* of CLAIMS.md).

* LCFL.T1, LCFL.E4: :mod:`.discrepancy` (bounded problems with exact populations);
* LCFL.E8: the excess-loss identity of Sec. III and its eigenvalue sandwich (eq. 8), on
  random problems, against the population loss computed directly;
* LCFL.E9: the softmax shift invariance of Sec. IV (eq. 9), demonstrated on digits;
* LCFL.ACC: :mod:`.accuracy` (rotated digits).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from cflbounds.algorithms.baselines import common_initial_model
from cflbounds.algorithms.client_distances import diffnorm_distance, loss_discrepancy
from cflbounds.algorithms.clustering import cluster_distance_matrices
from cflbounds.algorithms.federated import local_steps
from cflbounds.algorithms.small_models import SoftmaxRegression
from cflbounds.bounds import lcfl as bounds
from cflbounds.claims import Verdict, VerifyContext
from cflbounds.claims.recovery import adjusted_rand
from cflbounds.synthetic.client_data import ClientData
from cflbounds.synthetic.digits import CLASSES, PIXELS, make_digit_clients
from cflbounds.synthetic.seeding import spawn_seeds, stream
from .accuracy import check_acc
from .discrepancy import check_e4, check_t1

__all__ = ["check_e4", "check_t1", "check_e8", "check_e9", "check_acc", "excess_loss_cases", "excess_loss_exact",
           "excess_loss_sides", "covariance"]

IDENTITY_TOLERANCE = 1e-9  # relative, as the issue asks
E8 = {"smoke": 300, "default": 2000, "paper": 20000}
E9 = {"smoke": {"m": 8, "trials": 2, "steps": 20}, "default": {"m": 16, "trials": 4, "steps": 50},
      "paper": {"m": 40, "trials": 10, "steps": 100}}


# -- E8 -----------------------------------------------------------------------------------
def excess_loss_exact(sigma_xx, sigma_xy, sigma_xy_hat, variance_y, digits: int = 50) -> float:
    """``L(w-hat) - L(w*)`` straight from the population loss of centred (X, y),
    ``L(w) = w^T S_XX w - 2 w^T S_Xy + Var y``, at ``w* = S_XX^-1 S_Xy`` and
    ``w-hat = S_XX^-1 S-hat_Xy``, in ``digits``-digit arithmetic (mpmath): the difference
    of two O(1) losses cancels most float64 digits when the excess is small."""
    import mpmath

    with mpmath.workdps(digits):
        matrix = mpmath.matrix(np.asarray(sigma_xx, dtype=float).tolist())
        s = mpmath.matrix(np.asarray(sigma_xy, dtype=float).tolist())
        s_hat = mpmath.matrix(np.asarray(sigma_xy_hat, dtype=float).tolist())
        loss = lambda w: (w.T * matrix * w)[0] - 2 * (w.T * s)[0] + mpmath.mpf(float(variance_y))  # noqa: E731
        return float(loss(mpmath.lu_solve(matrix, s_hat)) - loss(mpmath.lu_solve(matrix, s)))


def excess_loss_cases(count: int, seed: int) -> pd.DataFrame:
    """``count`` random problems (d in 1..8, Sigma_XX with eigenvalues log-uniform in
    [1e-2, 1e2], random Sigma_Xy and Sigma-hat_Xy, Var y large enough to be a
    covariance): the excess loss from the population loss (:func:`excess_loss_exact`),
    the identity's right side in float64, and the eigenvalue sandwich."""
    rng = stream(seed, 50)
    rows = []
    for case in range(count):
        d = int(rng.integers(1, 9))
        basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
        eigenvalues = 10.0 ** rng.uniform(-2, 2, size=d)
        sigma_xx = covariance(basis, eigenvalues)
        sigma_xy, sigma_xy_hat = rng.standard_normal(d), rng.standard_normal(d)
        variance_y = float(sigma_xy @ np.linalg.solve(sigma_xx, sigma_xy)) + rng.uniform(0.1, 2.0)
        rows.append({"case": case, "d": d, "condition_number": eigenvalues.max() / eigenvalues.min(),
                     **excess_loss_sides(sigma_xx, eigenvalues, sigma_xy, sigma_xy_hat, variance_y)})
    return pd.DataFrame(rows)


def covariance(basis, eigenvalues) -> np.ndarray:
    """``Sigma_XX = Q diag(lambda) Q^T`` (symmetrised) from an orthogonal ``Q`` and its eigenvalues."""
    sigma_xx = (basis * eigenvalues) @ basis.T
    return 0.5 * (sigma_xx + sigma_xx.T)


def excess_loss_sides(sigma_xx, eigenvalues, sigma_xy, sigma_xy_hat, variance_y,
                      identity=bounds.excess_loss_identity, sandwich=bounds.excess_loss_sandwich) -> dict:
    """Both sides of Sec. III's identity and eq. (8) on one problem: ``excess_loss`` from the
    population loss (:func:`excess_loss_exact`), ``identity`` its closed form in float64
    (``identity``, the bound function), ``lower`` and ``upper`` the sandwich (``sandwich``, with
    the extreme ``eigenvalues`` of ``sigma_xx``) and the identity's ``relative_error``."""
    excess = excess_loss_exact(sigma_xx, sigma_xy, sigma_xy_hat, variance_y)
    closed_form = identity(sigma_xx, sigma_xy, sigma_xy_hat)
    norm_sq = float(np.sum((np.asarray(sigma_xy_hat) - np.asarray(sigma_xy)) ** 2))
    sides = sandwich(norm_sq, float(np.min(eigenvalues)), float(np.max(eigenvalues)))
    return {"excess_loss": excess, "identity": closed_form,
            "relative_error": abs(excess - closed_form) / max(abs(excess), np.finfo(float).tiny),
            "lower": sides.terms["lower"], "upper": sides.terms["upper"]}


def check_e8(ctx: VerifyContext) -> Verdict:
    """LCFL.E8: the identity to 1e-9 relative and the sandwich, on every random problem."""
    cases = excess_loss_cases(E8[ctx.scale], ctx.seed)
    ctx.save_table("lcfl_e8_cases", cases)
    scale = np.maximum(cases["upper"], 1.0)
    lower_ok = cases["lower"] <= cases["identity"] + 1e-12 * scale
    upper_ok = cases["identity"] <= cases["upper"] + 1e-12 * scale
    identity_ok = cases["relative_error"] <= IDENTITY_TOLERANCE
    failing = int((~(lower_ok & upper_ok & identity_ok)).sum())
    tightness = cases["identity"] / cases["upper"]
    evidence = {"problems": len(cases), "failing": failing, "max_relative_error": float(cases["relative_error"].max()),
                "tolerance": IDENTITY_TOLERANCE, "identity_failures": int((~identity_ok).sum()),
                "sandwich_failures": int((~(lower_ok & upper_ok)).sum()),
                "max_condition_number": float(cases["condition_number"].max()),
                "identity_over_upper_median": float(tightness.median()),
                "lower_over_identity_median": float((cases["lower"] / cases["identity"]).median())}
    verdict = "holds" if failing == 0 else "violated"
    summary = (f"{verdict}: on {len(cases)} random problems (d <= 8, condition number up to "
               f"{evidence['max_condition_number']:.3g}) the identity matches L(w-hat) - L(w*) to "
               f"{evidence['max_relative_error']:.1e} relative (tolerance {IDENTITY_TOLERANCE:g}); the sandwich "
               f"(1/lambda_max)||.||^2 <= . <= (1/lambda_min)||.||^2 failed {evidence['sandwich_failures']} times; "
               f"median identity/upper {evidence['identity_over_upper_median']:.3f}")
    plot = {"kind": "scatter", "title": "LCFL.E8: excess loss vs the sandwich's sides (each dot a problem)",
            "xlabel": "L(w-hat) - L(w*)", "ylabel": "side of eq. (8)", "logx": True, "logy": True,
            "series": [{"label": "upper (1/lambda_min)||.||^2", "x": cases["excess_loss"].tolist(),
                        "y": cases["upper"].tolist()},
                       {"label": "lower (1/lambda_max)||.||^2", "x": cases["excess_loss"].tolist(),
                        "y": cases["lower"].tolist()}]}
    return Verdict("LCFL.E8", verdict, evidence, ctx.seed, len(cases), 1.0, summary, plot=[plot], details={
        "excess_loss": "computed from E(w^T X - y)^2 = w^T S_XX w - 2 w^T S_Xy + Var y at w* = S_XX^-1 S_Xy and "
                       "w-hat = S_XX^-1 S-hat_Xy in 50-digit arithmetic (mpmath), independently of the identity's "
                       "algebra; the identity's side in float64 (eigenvalue sides exact from the construction)",
        "deterministic": "an identity: confidence 1, every problem must pass"})


# -- E9 -----------------------------------------------------------------------------------
def _identical_within_clusters(data: ClientData, membership: np.ndarray) -> ClientData:
    """Every client gets the data of its cluster's first client."""
    first = np.array([np.flatnonzero(row == row[i])[0] for row in membership for i in range(len(row))])
    first = torch.as_tensor(first.reshape(membership.shape), device=data.device)
    rows = torch.arange(data.batch_size, device=data.device)[:, None]
    return ClientData(data.features[rows, first], data.labels[rows, first], data.mask[rows, first])


def _class_shift(model, phi: torch.Tensor) -> torch.Tensor:
    """Parameters of the shift ``W[:, c] += phi`` for every class c (biases untouched), ``(B, P)``."""
    weight = phi[:, :, None].expand(-1, model.features, model.classes)
    return torch.cat([weight.flatten(1), torch.zeros(phi.shape[0], model.classes, dtype=phi.dtype,
                                                     device=phi.device)], dim=1)


def _warm(model, start, data, steps):
    return local_steps(model, start[:, :, None], data, step_size=0.5, steps=steps)[:, :, 0]


def check_e9(ctx: VerifyContext) -> Verdict:
    """LCFL.E9: clients with identical data whose models differ by a common shift of the
    class weights. Gradient descent on softmax regression never changes the class-mean of
    the weights (the gradient's columns sum to zero), so a shift of the initial model
    persists through training: DiffNorm sees it, the loss metric (eq. 2) cannot."""
    cfg = E9[ctx.scale]
    problem = make_digit_clients(cfg["m"], 2, train_per_client=30, test_per_client=10, batch_size=cfg["trials"],
                                 seed=list(spawn_seeds(ctx.seed, cfg["trials"], 60)), dtype="float64",
                                 device=ctx.device)
    model = SoftmaxRegression(PIXELS, CLASSES)
    data = _identical_within_clusters(problem.train, problem.membership)
    B, m = data.batch_size, data.clients
    common = common_initial_model(model, problem.seeds, data).expand(B, m, model.size)
    unshifted = _warm(model, common, data, cfg["steps"])
    within = torch.as_tensor(problem.membership[:, :, None] == problem.membership[:, None, :], device=data.device)
    between_diffnorm = torch.where(within, 0.0, diffnorm_distance(unshifted)).amax(dim=(1, 2))  # (B,)
    # shift half of every cluster by phi with ||phi 1^T||_F = 2 x the largest between-cluster DiffNorm
    rng = stream(ctx.seed, 61)
    phi = torch.as_tensor(rng.standard_normal((B, PIXELS)), dtype=data.dtype, device=data.device)
    phi = phi / torch.linalg.vector_norm(phi, dim=1, keepdim=True) * (2.0 * between_diffnorm / np.sqrt(CLASSES))[:, None]
    shifted_clients = torch.as_tensor(np.tile(np.arange(m) % 2 == 1, (B, 1)), device=data.device)
    start = common + torch.where(shifted_clients[..., None], _class_shift(model, phi)[:, None], 0.0)
    warmed = _warm(model, start, data, cfg["steps"])
    loss_d, diffnorm = loss_discrepancy(model, warmed, data), diffnorm_distance(warmed)
    identical_pairs = within & ~torch.eye(m, dtype=torch.bool, device=data.device)
    shifted_pairs = identical_pairs & (shifted_clients[:, :, None] != shifted_clients[:, None, :])
    cross_loss = torch.where(within, torch.nan, loss_d).nanmedian(dim=-1).values.nanmedian(dim=-1).values
    same_loss = torch.where(identical_pairs, loss_d, 0.0).amax(dim=(1, 2))
    expected_shift = (2.0 * between_diffnorm)
    shift_error = torch.where(shifted_pairs, (diffnorm - expected_shift[:, None, None]).abs(), 0.0).amax(dim=(1, 2))
    clusters = {name: cluster_distance_matrices(matrix.cpu().numpy(), "kmedoids", k=2)
                for name, matrix in (("loss", loss_d), ("diffnorm", diffnorm))}
    ari = {name: adjusted_rand(problem.membership, found) for name, found in clusters.items()}
    relative_same_loss = (same_loss / cross_loss).cpu().numpy()
    evidence = {
        "trials": B, "clients": m, "warmup_steps": cfg["steps"],
        "max_loss_metric_identical_data": float(same_loss.max()),
        "max_loss_metric_identical_over_median_cross_cluster": float(relative_same_loss.max()),
        "median_loss_metric_cross_cluster": float(cross_loss.median()),
        "diffnorm_shifted_identical_pairs": float(expected_shift.min()),
        "diffnorm_shift_preserved_max_error": float(shift_error.max()),
        "max_diffnorm_between_clusters_unshifted": float(between_diffnorm.max()),
        "ari_loss_min": float(ari["loss"].min()), "ari_diffnorm_max": float(ari["diffnorm"].max()),
    }
    demonstrated = (np.all(ari["loss"] == 1.0) and np.all(ari["diffnorm"] < 1.0)
                    and np.all(relative_same_loss <= IDENTITY_TOLERANCE))
    verdict = "holds" if demonstrated else "violated"
    summary = (
        f"{verdict}: clients with identical data, half of them started from the same model shifted by a common "
        f"class-weight vector (||phi 1^T|| = 2x the largest between-cluster DiffNorm): after {cfg['steps']} GD steps "
        f"their DiffNorm is {evidence['diffnorm_shifted_identical_pairs']:.3g} (shift kept to "
        f"{evidence['diffnorm_shift_preserved_max_error']:.1e}) while their loss metric is at most "
        f"{evidence['max_loss_metric_identical_data']:.1e} ({evidence['max_loss_metric_identical_over_median_cross_cluster']:.1e}"
        f" of the cross-cluster median {evidence['median_loss_metric_cross_cluster']:.3g}); k-medoids (k=2) on the loss "
        f"metric recovers the two rotations (min ARI {evidence['ari_loss_min']:.2f}), on DiffNorm it does not "
        f"(max ARI {evidence['ari_diffnorm_max']:.2f})"
    )
    order = np.argsort(problem.membership[0] * 2 + shifted_clients[0].cpu().numpy(), kind="stable")
    boundaries = [int(np.sum(problem.membership[0] == 0))]
    plots = [{"kind": "heatmap", "title": f"LCFL.E9 trial 0: {name} between clients (identical data inside each "
                                          "rotation; odd clients shifted)",
              "matrix": matrix[0].cpu().numpy()[np.ix_(order, order)].tolist(), "colorbar": name,
              "boundaries": boundaries, "xlabel": "client (by rotation, then shift)", "ylabel": "client"}
             for name, matrix in (("loss metric d(i,j), eq. 2", loss_d), ("DiffNorm ||w_i - w_j||", diffnorm))]
    return Verdict("LCFL.E9", verdict, evidence, ctx.seed, B, 1.0, summary, plot=plots, details={
        "problem": f"digits rotated 0 and 90 degrees, {m} clients, every client of a rotation holding the same 30 "
                   "images; softmax regression, float64, full-batch GD with step 0.5",
        "criterion": "holds if, in every trial, the loss metric between identical-data clients is <= 1e-9 of the "
                     "cross-cluster median, k-medoids on it recovers the rotations exactly (ARI 1) and k-medoids on "
                     "DiffNorm does not (ARI < 1)"})
