"""The catalogue's algorithms batched against a straightforward per-run loop, side by side in one run.

    python benchmarks/bench_catalogue.py                 # default-scale sizes: about 2-4 minutes on 2 cores
    python benchmarks/bench_catalogue.py --quick         # small sizes: about 20 s
    python benchmarks/bench_catalogue.py --runs 200 --loop-runs 5 --threads 1

Each case draws one batch of heterogeneous quadratics (d, N clients, ``--runs`` problems, one run
each) and runs the batched algorithm once over the whole batch, then the per-run loop of
``reference_catalogue.py`` (one run at a time, a Python loop over clients and local steps, NumPy
mat-vecs) on the first ``--loop-runs`` runs. The loop's cost is linear in the runs by
construction, so its time for the whole batch is its measured time per run times ``--runs``;
printed: both times, their ratio (target at least 30x at the default scale's sizes), and the
largest relative difference between the loop's models and the batched run's on the runs both
computed (they are the same numbers: exit 1 above 1e-9). Cases: FedAvg (Li et al.) with the
paper's decaying step, full participation and Schemes I and II, recording the gradients' second
moments (G^2 is measured on them); FedAvg with two step sizes and SCAFFOLD options I and II with
S of N clients per round; local GD synchronising every H steps; FedProx with K of N devices per
round (the paper's sampling) solving exactly, by E gradient steps, and by gradient steps until
gamma-inexact (the experiments' sampling); CFL by cosine splits (Sattler et al.) on quadratic true
risks of ``--distributions`` distributions over the N clients, with gradients and with weight
updates after E local steps (the loop: labels and models compared, as one vector per run).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cflbounds.algorithms.cosine_cfl import cosine_cfl  # noqa: E402
from cflbounds.algorithms.fedavg_noniid import fedavg_noniid  # noqa: E402
from cflbounds.algorithms.fedprox import fedprox  # noqa: E402
from cflbounds.algorithms.local_gd import local_gd, sync_times  # noqa: E402
from cflbounds.algorithms.local_updates import paper_step  # noqa: E402
from cflbounds.algorithms.scaffold import fedavg_two_steps, scaffold  # noqa: E402
from cflbounds.synthetic.cfl_quadratics import make_cfl_quadratics  # noqa: E402
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics  # noqa: E402
from reference_catalogue import (reference_cosine_cfl, reference_fedavg, reference_fedprox,  # noqa: E402
                                 reference_local_gd, reference_scaffold)

TARGET = 30.0


def _cases(problem, args):
    """``{name: (batched call, loop of run b)}``."""
    R, E, S, T, H = args.rounds, args.local_steps, args.sampled, args.rounds * args.local_steps, args.local_steps
    x0 = np.ones(problem.d)
    step = paper_step(problem, E)
    decaying = lambda b: (lambda t: 2.0 / (step.mu[b] * (step.gamma[b] + t + 1)))
    cases = {}
    for scheme in ("full", "scheme-I", "scheme-II"):
        K = None if scheme == "full" else S
        cases[f"FedAvg {scheme} (E={E}{'' if K is None else f', K={K}'})"] = (
            lambda scheme=scheme, K=K: fedavg_noniid(problem, rounds=R, local_steps=E, step_size=step, scheme=scheme,
                                                     sampled=K, init=x0).points,
            lambda b, scheme=scheme, K=K: reference_fedavg(problem, b, 0, R, E, decaying(b), scheme, K, x0,
                                                           moments=True)[0])
    eta_l = 0.5 / float(problem.smoothness.max()) / E
    cases[f"FedAvg two steps (K={E}, S={S})"] = (
        lambda: fedavg_two_steps(problem, rounds=R, local_steps=E, local_step_size=eta_l, sampled=S, init=x0).points,
        lambda b: reference_scaffold(problem, b, 0, R, E, eta_l, 1.0, S, None, x0))
    for option in ("I", "II"):
        cases[f"SCAFFOLD option {option} (K={E}, S={S})"] = (
            lambda option=option: scaffold(problem, rounds=R, local_steps=E, local_step_size=eta_l, sampled=S,
                                           option=option, init=x0).points,
            lambda b, option=option: reference_scaffold(problem, b, 0, R, E, eta_l, 1.0, S, option, x0))
    gamma = 1.0 / (4.0 * float(problem.smoothness.max()) * H)  # Theorem 1's largest step
    cases[f"local GD (T={T}, H={H})"] = (
        lambda: local_gd(problem, steps=T, step_size=gamma, sync=H, init=x0).points,
        lambda b: reference_local_gd(problem, b, T, gamma, set(sync_times(H, T).tolist()), x0))
    mu, gd_step = 1.0, 1.0 / (float(problem.smoothness.max()) + 1.0)
    for name, options in ((f"FedProx exact (K={S})", dict(local_solver="exact")),
                          (f"FedProx {E} GD steps (K={S})", dict(local_solver="gd", local_steps=E,
                                                                 local_step_size=gd_step)),
                          (f"FedProx GD to gamma=0.1 (K={S}, exp.)", dict(local_solver="gd", local_steps=100,
                                                                         local_step_size=gd_step, inexactness=0.1,
                                                                         sampling="experiments"))):
        cases[name] = (
            lambda options=options: fedprox(problem, rounds=R, mu=mu, sampled=S, init=x0, **options).points,
            lambda b, options=options: reference_fedprox(problem, b, 0, R, mu, S, options.get("sampling", "paper"),
                                                         options["local_solver"], options.get("local_steps"),
                                                         options.get("local_step_size"), options.get("inexactness"),
                                                         x0)[0])
    return cases


def _cfl_cases(problem, args):
    """CFL's training on quadratic true risks: ``{name: (batched call, loop of run b)}``, each giving
    a run's labels of every round and final models as one vector. The thresholds separate the
    distributions' gradients at the mixture's theta* (norms >= 1.29 at the default sizes) from
    their relative errors (0.1 of them): every run splits k - 1 times, each split correct."""
    R, E, eta = args.rounds, args.local_steps, 0.5 / 4.0
    x0 = np.zeros(problem.d)
    cases = {}
    for name, options in ((f"CFL gradients, exact split (m={problem.m})", dict(updates="gradients", local_steps=1,
                                                                             bipartition="exact", eps1=0.05,
                                                                             eps2=0.6)),
                          (f"CFL {E} local steps, complete linkage", dict(updates="weight-updates", local_steps=E,
                                                                          bipartition="agglomerative",
                                                                          eps1=0.05 * eta * E, eps2=0.6 * eta * 2))):
        settings = dict(gamma_max=0.3, split_test="paper", weighting="data", first_split_round=1, **options)

        def batched(settings=settings):
            trace = cosine_cfl(problem, rounds=R, step_size=eta, init=x0, **settings)
            return np.concatenate([trace.labels.reshape(problem.batch_size, -1),
                                   trace.final_models.reshape(problem.batch_size, -1)], axis=1)

        def looped(b, settings=settings):
            labels, models, _ = reference_cosine_cfl(
                problem, b, R, eta, settings["eps1"], settings["eps2"], settings["gamma_max"],
                settings["local_steps"], settings["updates"], settings["bipartition"], settings["split_test"],
                settings["weighting"], settings["first_split_round"], x0)
            return np.concatenate([labels.ravel(), models.ravel()])

        cases[name] = (batched, looped)
    return cases


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (d=10, N=10, 50 rounds, 50 runs)")
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--local-steps", type=int, default=5, help="E (FedAvg), K (SCAFFOLD), H (local GD)")
    parser.add_argument("--sampled", type=int, default=10, help="K of Schemes I/II, S of SCAFFOLD")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--loop-runs", type=int, default=3, help="runs the per-run loop times (default 3)")
    parser.add_argument("--distributions", type=int, default=4, help="CFL's distributions k (default 4)")
    parser.add_argument("--only", default=None, help="run only the cases whose name contains this text")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = parser.parse_args(argv)
    if args.quick:
        args.d, args.clients, args.rounds, args.runs, args.sampled = 10, 10, 50, 50, 5
    if args.threads:
        torch.set_num_threads(args.threads)
    problem = make_heterogeneous_quadratics(args.clients, args.d, strong_convexity=1.0, smoothness=10.0,
                                            heterogeneity=1.0, hessian_spread=0.5, noise_std=0.5,
                                            batch_size=args.runs, seed=0)
    print(f"d={args.d}, N={args.clients}, rounds={args.rounds}, local steps={args.local_steps}, "
          f"sampled={args.sampled}, runs={args.runs} (loop timed on {args.loop_runs}), torch threads "
          f"{torch.get_num_threads()}, float64")
    print(f"{'case':<38} {'batched s':>10} {'loop s/run':>11} {'loop s':>9} {'ratio':>7} {'max rel diff':>13}")
    failed, ratios = False, []
    risks = make_cfl_quadratics(args.distributions, args.clients, args.d, strong_convexity=1.0, smoothness=4.0,
                                relative_error=0.1, batch_size=args.runs, seed=0)
    cases = {**_cases(problem, args), **_cfl_cases(risks, args)}
    for name, (batched, looped) in cases.items():
        if args.only and args.only not in name:
            continue
        start = time.perf_counter()
        points = batched()
        batched_seconds = time.perf_counter() - start
        start = time.perf_counter()
        loop_points = [looped(b) for b in range(args.loop_runs)]
        per_run = (time.perf_counter() - start) / args.loop_runs
        difference = max(float(np.max(np.abs(points[b] - p) / np.maximum(np.abs(p), 1e-12)))
                         for b, p in enumerate(loop_points))
        ratio = per_run * args.runs / batched_seconds
        ratios.append(ratio)
        failed |= not difference <= 1e-9
        print(f"{name:<38} {batched_seconds:>10.2f} {per_run:>11.3f} {per_run * args.runs:>9.1f} {ratio:>6.1f}x "
              f"{difference:>13.1e}")
    print(f"smallest ratio {min(ratios):.1f}x (target {TARGET:g}x: {'met' if min(ratios) >= TARGET else 'not met'})")
    if failed:
        print("OUTCOME CHECK FAILED: a loop run differs from its batched run")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
