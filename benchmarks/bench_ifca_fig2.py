"""Batched IFCA (``run_fig2_cell``) against a straightforward per-run NumPy reference, on the
Fig. 2(a) cell, same seeds, same outcomes, everything measured side by side in one run.

    python benchmarks/bench_ifca_fig2.py             # paper size (k=2, m=n=100, d=1000), quiet then busy: ~35-45 min
    python benchmarks/bench_ifca_fig2.py --load quiet --no-float64   # one pass: ~12 min
    python benchmarks/bench_ifca_fig2.py --quick     # d=200, m=n=40, ~1 min per pass
    python benchmarks/bench_ifca_fig2.py --trials 5 --r 0.25,0.5

Everything below runs once per pass of ``--load`` (default ``quiet,busy``): on the machine as
it is, then beside a process the script starts spinning on one core and stops by its id. The
end prints the headline rows of both passes side by side (speed ratio, loop vs GEMM, the
certificate's share against its floor's, the protocol projected and its flop floor, ``ifca()``
ms/iteration) and the targets: ``ifca()`` busy/quiet under the library's default <= 1.5, the
certificate's share <= 2x its floor's, the protocol <= 2.5x its flop floor and <= 3.0 h.

For every r, on the same trials (data seeds) of the same cell dict:

1. the reference (``benchmarks/reference_ifca.py``), one run at a time, float32;
2. the product, ``run_fig2_cell(cell)`` as configured (float32, early exit if the sweep has
   it): trial successes must be identical to the reference's, final distances of runs that
   ran all iterations in both must agree, certified verdicts must match the reference; the
   certificate's own time is measured inside it;
3. the same data and ``ifca()`` call without a monitor ("plain"), float32, between two
   measurements of torch's GEMM rate for the loop's residual GEMM ``(m n x d) @ (d x R k)``
   and of the mat-vec rates the reference lives on: the loop's flop rate as a fraction of the
   GEMM rate, and the roofline ratio GEMM / mat-vec;
4. the plain run in float64: the float32 saving, with identical trial outcomes required.

Savings: ``T_ref / T_product = batching x diverged-runs-leave x early exit``, where early exit
is ``T_plain / T_product`` (measured), diverged-runs-leave is all run-iterations over the
slot-iterations the plain loop worked on (estimated: time taken as proportional to slots),
and batching is the rest (reference cost per run-iteration over the batched cost per slot-
iteration). Shares are of the logarithm of the total. float32 vs float64 is reported apart:
the reference is float32 too (as the authors' torch code).

The summary projects the full official protocol (every panel, 40 trials) from the product's
measured seconds per flop, beside its flop floor at the GEMM rate measured in the same run and
a GPU estimate from the same flop counts.

The box is shared: each stage prints the CPU time other processes took meanwhile (from
``/proc/stat``), in cores. Exit status 1 if any outcome check fails (a target not met is a
measurement, not a failure).
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

# OpenMP threads that spin while waiting slow down badly when another process holds one of the
# two cores; waiting passively avoids that but costs wake-up latency on a quiet box (see the
# docs/performance.md, "A busy neighbour"). The product is measured in the environment it is given; --omp-passive sets
# OMP_WAIT_POLICY=PASSIVE, which must happen before torch (libgomp) is loaded.
if "--omp-passive" in sys.argv:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

import numpy as np
import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.flops import gemm_flops, iteration_flops, reference_flops, slots_per_iteration  # noqa: E402
from benchmarks.benchmark_cells import add_cell_options, benchmark_cells  # noqa: E402
from benchmarks.reference_ifca import cell_trial_seeds, reference_fig2_cell, threshold  # noqa: E402
from benchmarks.shared_box import Stage, busy_neighbour  # noqa: E402
from benchmarks.timed_certificate import cholesky_seconds, time_certificate  # noqa: E402
from cflbounds._threads import follow_load  # noqa: E402
from cflbounds.algorithms import ifca  # noqa: E402
from cflbounds.algorithms.trace import matched_distances  # noqa: E402
from cflbounds.sweeps import ifca_fig2  # noqa: E402
from cflbounds.sweeps.ifca_fig2 import (STEP_SIZES, fig2_cells, run_fig2_cell, stable_step_sizes,  # noqa: E402
                                        trial_outcomes)
from cflbounds.synthetic import make_mixed_linear_regression  # noqa: E402

RUN_RTOL, RUN_ATOL = 1e-3, 1e-6  # final distances, float32 runs that finished in both
# A machine whose two losses differ by less than float32 resolution (measured: 1.4e-7 relative,
# paper-size r=0.25 trial 0, restart 6, step 0.1, iteration 1) may pick the other model in one
# implementation: that run then follows another trajectory. Such isolated runs are listed and
# allowed up to this share of the compared runs, as long as they land on the same side of the
# threshold (trial outcomes are always required identical).
NEAR_TIE_SHARE = 0.05

FAILURES: list[str] = []


def check(ok: bool, what: str) -> bool:
    print(f"  [{'ok' if ok else 'FAIL'}] {what}")
    if not ok:
        FAILURES.append(what)
    return ok


TimedCertificate = time_certificate(time.perf_counter)  # the certificate's own wall time inside the product
GENERATION = {"seconds": 0.0}  # the product's data generation (its problems' draws), wall time
_generate = ifca_fig2.make_mixed_linear_regression


def _timed_generate(*args, **kwargs):
    start = time.perf_counter()
    try:
        return _generate(*args, **kwargs)
    finally:
        GENERATION["seconds"] += time.perf_counter() - start


ifca_fig2.make_mixed_linear_regression = _timed_generate  # run_fig2_cell looks it up at call time


# -- machine rates ----------------------------------------------------------------------------
def _times(fn, repeats: int) -> np.ndarray:
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return np.array(out)


def machine_rates(m: int, n: int, d: int, runs: int, k: int, repeats: int = 15) -> dict[str, float]:
    """GFLOP/s (median and best of ``repeats``) of the loop's and the reference's shapes, float32."""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(1, m * n, d, generator=gen)
    models = torch.randn(1, runs * k, d, generator=gen)
    residual = torch.randn(1, m, n, runs, generator=gen)
    v = torch.randn(d, generator=gen)
    Xn, vn, rn = X[0].reshape(m, n, d).numpy(), v.numpy(), residual[0, :, :, 0].numpy()
    Xm = X.view(1, m, n, d)

    def per_machine_matvec():  # the reference's X_i @ theta_j, streaming X machine by machine
        for i in range(m):
            Xn[i] @ vn

    def per_machine_rmatvec():  # the reference's X_i^T r
        for i in range(m):
            Xn[i].T @ rn[i]

    shapes = {
        "gemm": (lambda: torch.bmm(X, models.transpose(1, 2)), gemm_flops(m * n, d, runs * k)),
        "grad_gemm": (lambda: torch.matmul(residual.transpose(-1, -2), Xm), gemm_flops(m * n, d, runs)),
        "matvec_np": (per_machine_matvec, 2.0 * m * n * d),
        "rmatvec_np": (per_machine_rmatvec, 2.0 * m * n * d),
        "matvec_torch": (lambda: torch.mv(X[0], v), 2.0 * m * n * d),
    }
    rates = {}
    for name, (fn, flops) in shapes.items():
        t = _times(fn, repeats)
        rates[name] = flops / np.median(t) / 1e9
        rates[name + "_best"] = flops / t.min() / 1e9
    return rates


# -- the batched run without the product's wrapper ---------------------------------------------
def plain(cell: dict, dtype: str) -> dict:
    """``run_fig2_cell``'s data and ``ifca()`` call (same seeds, same chunking) without a monitor:
    per-run final distances, per-trial success, timings and the flops of the slots worked on."""
    k, m, n, d, T = cell["k"], cell["m"], cell["n"], cell["d"], cell["iterations"]
    variant = cell["variant"]
    seeds = cell_trial_seeds(cell)
    chunk = ifca_fig2.trials_per_batch(cell)
    out = {"ifca_seconds": 0.0, "flops": 0.0, "slot_iterations": 0.0}
    dists, diverged = [], []
    for start in range(0, len(seeds), chunk):
        chunk_seeds = list(seeds[start:start + chunk])
        problem = make_mixed_linear_regression(
            k, m, n, d, sigma=cell["sigma"], truth=variant, scale=cell["r"], batch_size=len(chunk_seeds),
            seed=chunk_seeds, dtype=dtype,
        )
        t0 = time.perf_counter()
        trace = ifca(problem, iterations=T, step_sizes=STEP_SIZES[k], restarts=cell["restarts"], init=variant,
                     shared_inits=cell["shared_inits"], seed=cell["seed"])
        out["ifca_seconds"] += time.perf_counter() - t0
        final = trace.distances[:, :, -1]
        dists.append(final.min(axis=-1).mean(axis=-1) if variant == "official"
                     else matched_distances(final).mean(axis=-1))
        diverged.append(trace.diverged_at)
        problems, width = slots_per_iteration(trace.diverged_at, T)
        out["slot_iterations"] += float((problems * width).sum())
        out["flops"] += float(sum(p * iteration_flops(m, n, d, k, int(w))["total"] for p, w in zip(problems, width)))
    dist, diverged_at = np.concatenate(dists), np.concatenate(diverged)
    B, R = dist.shape
    steps = STEP_SIZES[k]
    out["runs"] = pd.DataFrame({
        "trial": np.repeat(np.arange(B), R),
        "restart": np.tile(np.repeat(np.arange(cell["restarts"]), len(steps)), B),
        "step_size": np.tile(np.tile(steps, cell["restarts"]), B),
        "dist": dist.ravel(), "finished": diverged_at.ravel() < 0, "diverged_at": diverged_at.ravel(),
    })
    out["success"] = np.nan_to_num(dist, nan=np.inf).min(axis=1) < threshold(cell)
    return out


# -- OpenMP wait policy, side by side --------------------------------------------------------
POLICIES = ("default", "PASSIVE", "1 thread")
_POLICY_SNIPPET = """
import json, sys, time
from cflbounds.algorithms import ifca
from cflbounds.synthetic import make_mixed_linear_regression
c = json.loads(sys.argv[1])
p = make_mixed_linear_regression(c["k"], c["m"], c["n"], c["d"], sigma=c["sigma"], scale=c["r"], seed=[c["seed"]],
                                 dtype="float32")
run = lambda T: ifca(p, iterations=T, step_sizes=c["steps"], restarts=c["restarts"], seed=0)
run(2)
start = time.perf_counter()
run(c["iterations"])
print(time.perf_counter() - start)
"""


def wait_policy_check(cell: dict, iterations: int) -> dict[str, float]:
    """Seconds per iteration of ``ifca()`` on one trial in fresh processes: OpenMP's default wait
    policy (spin, then sleep), ``OMP_WAIT_POLICY=PASSIVE``, and one thread."""
    import json

    config = {key: cell[key] for key in ("k", "m", "n", "d", "sigma", "r", "restarts")}
    config.update(seed=int(cell_trial_seeds(cell)[0]), steps=list(STEP_SIZES[cell["k"]]), iterations=iterations)
    out = {}
    for policy in POLICIES:
        env = {key: value for key, value in os.environ.items()
               if key not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
        if policy == "PASSIVE":
            env["OMP_WAIT_POLICY"] = "PASSIVE"
        if policy == "1 thread":
            env["OMP_NUM_THREADS"] = "1"
        with Stage() as stage:
            done = subprocess.run([sys.executable, "-c", _POLICY_SNIPPET, json.dumps(config)], env=env,
                                  capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
        if done.returncode:
            print(f"  wait-policy check failed: {done.stderr.strip().splitlines()[-1:]}")
            return {}
        out[policy] = float(done.stdout.split()[-1]) / iterations
        out[policy + "_others"] = stage.others
    return out


# -- comparisons -------------------------------------------------------------------------------
def compare_runs(left: pd.DataFrame, right: pd.DataFrame, cell: dict, label: str) -> None:
    """Final distances (columns ``dist``, ``finished``) of runs that ran all T iterations in both."""
    keys = ["trial", "restart", "step_size"]
    both = left[keys + ["dist", "finished"]].merge(right[keys + ["dist", "finished"]], on=keys, suffixes=("_a", "_b"))
    a, b = both["dist_a"].to_numpy(), both["dist_b"].to_numpy()
    finished = both["finished_a"].to_numpy() & both["finished_b"].to_numpy() & np.isfinite(a) & np.isfinite(b)
    stable = both["step_size"].isin(stable_step_sizes(cell)).to_numpy()
    limit = threshold(cell)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(a - b) / np.maximum(np.abs(a), RUN_ATOL)
        close = np.abs(a - b) <= RUN_ATOL + RUN_RTOL * np.abs(a)
        same_side = (a < limit) == (b < limit)
    compared = finished & stable
    other = finished & ~stable
    worst = float(rel[compared].max()) if compared.any() else 0.0
    apart = compared & ~close
    allowed = max(1, int(NEAR_TIE_SHARE * compared.sum()))
    check(bool(np.all(same_side[compared])) and int(apart.sum()) <= allowed,
          f"{label}: {int(compared.sum())} finished runs at stable steps {stable_step_sizes(cell)}: all on the same side "
          f"of the threshold, {int((compared & close).sum())} within rtol {RUN_RTOL:g} (max rel diff {worst:.1e}), "
          f"{int(apart.sum())} apart (at most {allowed} allowed: float32 near-ties)")
    for _, row in both[apart].iterrows():
        print(f"       apart: trial {row['trial']} restart {row['restart']} step {row['step_size']}: "
              f"{row['dist_a']:.6g} vs {row['dist_b']:.6g}")
    finite_one = int((np.isfinite(a) != np.isfinite(b))[both["finished_a"] & both["finished_b"]].sum())
    print(f"       unstable steps (not compared): {int(other.sum())} finished runs, {int((~close[other]).sum())} "
          f"differ beyond rtol, {int((~same_side[other]).sum())} on the other side of the threshold; "
          f"{finite_one} runs finite in one only")


def compare_trials(reference, other, label: str) -> None:
    ref, oth = np.asarray(reference, dtype=bool), np.asarray(other, dtype=bool)
    check(ref.shape == oth.shape and bool(np.all(ref == oth)),
          f"{label}: trial successes identical ({int(ref.sum())}/{ref.size} vs {int(oth.sum())}/{oth.size})")


def check_verdicts(reference: pd.DataFrame, rows: pd.DataFrame, cell: dict) -> None:
    """Certified run verdicts of the product against the reference's final distances (run to T)."""
    keys = ["trial", "restart", "step_size"]
    both = rows[keys + ["certified"]].merge(reference[keys + ["dist"]], on=keys)
    limit = threshold(cell)
    success, failure = both["certified"] == "success", both["certified"] == "failure"
    wrong = int((success & ~(both["dist"] < limit)).sum() + (failure & (both["dist"] < limit)).sum())
    check(wrong == 0, f"certificate: {int(success.sum())} certified successes, {int(failure.sum())} certified "
          f"failures ({int((both['certified'] == 'stopped').sum())} runs stopped with their trial) "
          f"match the reference's final distances ({wrong} wrong)")


# -- one cell ----------------------------------------------------------------------------------
def bench_cell(cell: dict, args) -> dict:
    k, m, n, d, T = cell["k"], cell["m"], cell["n"], cell["d"], cell["iterations"]
    R = cell["restarts"] * len(STEP_SIZES[k])
    B = cell["trials"]
    run_iterations = B * R * T
    fig = {"r": cell["r"], "trials": B, "run_iterations": run_iterations, "cell_flops": ifca_fig2.cell_flops(cell)}
    print(f"\n=== Fig. 2({cell['panel']}) cell: k={k} m={m} n={n} d={d} r={cell['r']} sigma={cell['sigma']}, "
          f"{B} trials x {R} runs x {T} iterations, threshold {threshold(cell):g}, "
          f"early_exit={cell.get('early_exit', 'n/a')}")

    # 1. reference
    with Stage() as stage:
        ref_runs, ref_trials = reference_fig2_cell(cell, dtype=args.reference_dtype, verbose=True)
    fig["t_ref"] = stage.seconds
    ref_runs["dist"] = ref_runs["dist_nearest" if cell["variant"] == "official" else "dist_matched"]
    ref_runs["finished"] = True  # the reference always runs all T iterations
    ref_success = ref_trials.sort_values("trial")["success"].to_numpy()
    per_run = ref_runs["seconds"].mean()
    fig["ref_gflops"] = reference_flops(m, n, d, k) * T / per_run / 1e9
    print(f"  reference ({args.reference_dtype}): {stage}; {per_run:.2f} s/run, {fig['ref_gflops']:.1f} GFLOP/s; "
          f"successes {int(ref_success.sum())}/{B}")

    # 2. the product
    TimedCertificate.reset()
    GENERATION["seconds"] = 0.0
    with Stage() as stage:
        rows = run_fig2_cell(cell)
    fig["t_product"], fig["t_certificate"] = stage.seconds, TimedCertificate.seconds
    fig["t_gram"] = TimedCertificate.gram_seconds
    fig["t_generation"] = GENERATION["seconds"]
    fig["t_floor"] = TimedCertificate.floor_seconds(cholesky_seconds(d, time.perf_counter), torch.get_num_threads())
    outcomes = trial_outcomes(rows).sort_values("trial")
    print(f"  run_fig2_cell ({cell['dtype']}): {stage} -> {fig['t_ref'] / fig['t_product']:.1f}x the reference; "
          f"certificate {fig['t_certificate']:.2f} s ({100 * fig['t_certificate'] / fig['t_product']:.1f}%)")
    seeds = cell_trial_seeds(cell)
    check(list(rows.groupby("trial")["problem_seed"].first().astype(int)) == list(seeds),
          "run_fig2_cell uses the reference's data seeds")
    compare_trials(ref_success, outcomes["success"], "run_fig2_cell vs reference")
    has_exit = "retired_at" in rows.columns
    retired = rows["retired_at"].to_numpy() if has_exit else np.full(len(rows), -1)
    distance = "dist_nearest" if cell["variant"] == "official" else "dist_matched"
    product_runs = rows.assign(dist=rows[distance], finished=~rows["diverged"].to_numpy(bool) & (retired < 0))
    compare_runs(ref_runs, product_runs, cell, "run_fig2_cell vs reference")
    if "certified" in rows.columns:
        check_verdicts(ref_runs, rows, cell)
    diverged_at = rows["diverged_at"].to_numpy()
    fig["skipped_diverged_product"] = float(np.where(diverged_at >= 0, T - diverged_at, 0).sum()) / run_iterations
    kinds = rows["certified"].to_numpy() if "certified" in rows.columns else np.full(len(rows), "")
    skipped = np.where((retired >= 0) & (diverged_at < 0), T - retired, 0)
    fig["skipped_retired"] = float(skipped.sum()) / run_iterations
    fig["skipped_decided"] = float(skipped[kinds != "failure"].sum()) / run_iterations
    fig["skipped_failure"] = float(skipped[kinds == "failure"].sum()) / run_iterations
    fig["skipped_unstarted"] = float(skipped[(kinds == "stopped") & (retired == 0)].sum()) / run_iterations
    leave = np.where(diverged_at >= 0, diverged_at, retired).reshape(B, R)
    problems, width = slots_per_iteration(leave, T)
    fig["slot_fraction_product"] = float((problems * width).sum()) / run_iterations

    # 3. plain float32 between two measurements of the machine's rates
    with follow_load():  # the rates at the thread count the loop gets (the library follows the load)
        before = machine_rates(m, n, d, R, k)
    with Stage() as stage:
        base = plain(cell, "float32")
    with follow_load():
        after = machine_rates(m, n, d, R, k)
    rates = {key: (before[key] + after[key]) / 2 for key in before}
    fig.update({f"rate_{key}": value for key, value in rates.items()})
    fig["t_plain"], fig["t_plain_ifca"], fig["plain_flops"] = stage.seconds, base["ifca_seconds"], base["flops"]
    fig["loop_gflops"] = base["flops"] / base["ifca_seconds"] / 1e9
    fig["slot_fraction_plain"] = base["slot_iterations"] / run_iterations
    fig["skipped_diverged"] = float(np.where(base["runs"]["diverged_at"] >= 0, T - base["runs"]["diverged_at"],
                                             0).sum()) / run_iterations
    print(f"  torch float32 rates (median of 15, mean of before/after the loop): GEMM ({m * n}x{d})@({d}x{R * k}) "
          f"{rates['gemm']:.1f} GFLOP/s [before {before['gemm']:.1f}, after {after['gemm']:.1f}, best "
          f"{max(before['gemm_best'], after['gemm_best']):.1f}]; per-machine gradient GEMM ({R}x{n})@({n}x{d}) "
          f"{rates['grad_gemm']:.1f}; mat-vec: numpy per machine ({n}x{d})@v {rates['matvec_np']:.1f}, "
          f"X_i^T r {rates['rmatvec_np']:.1f}, torch ({m * n}x{d})@v {rates['matvec_torch']:.1f}")
    print(f"  roofline ratio GEMM / numpy per-machine mat-vec = {rates['gemm'] / rates['matvec_np']:.1f}x "
          f"(GEMM / torch mat-vec {rates['gemm'] / rates['matvec_torch']:.1f}x)")
    print(f"  plain ifca() float32: {stage}; loop {base['ifca_seconds']:.2f} s, {base['flops'] / 1e9:.0f} GFLOP "
          f"-> {fig['loop_gflops']:.1f} GFLOP/s = {100 * fig['loop_gflops'] / rates['gemm']:.0f}% of the GEMM rate")
    compare_trials(ref_success, base["success"], "plain float32 vs reference")
    compare_runs(ref_runs, base["runs"], cell, "plain float32 vs reference")
    print(f"  early exit: slot-iterations {100 * fig['slot_fraction_product']:.0f}% of all (plain "
          f"{100 * fig['slot_fraction_plain']:.0f}%)")

    # 4. float64
    if not args.no_float64:
        with Stage() as stage:
            wide = plain(cell, "float64")
        fig["t_plain64"] = stage.seconds
        print(f"  plain ifca() float64: {stage} -> float32 saves {fig['t_plain64'] / fig['t_plain']:.2f}x")
        compare_trials(wide["success"], base["success"], "float32 vs float64 (plain)")
        compare_runs(wide["runs"], base["runs"], cell, "float32 vs float64 (plain)")
    return fig


# a GPU's FP32 GEMM rate for the estimate (NVIDIA A100: 19.5 TFLOP/s peak without tensor cores),
# at the share of GEMM rate the loop sustains on this CPU
GPU_FP32_FLOPS = 19.5e12


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def protocol_projection(figs: list[dict], gemm_gflops: float, loop_gflops: float) -> tuple[list, dict]:
    """The full official protocol (every panel, 40 trials) from this run's measurements: the
    product's seconds per flop of the benchmark cells (all runs to T, as ``cell_flops``
    counts) applied to every cell's flops; beside it the flop floor (the work the product
    did, as a share of all, at the GEMM rate measured here) and a GPU estimate. Returns the
    summary's rows and ``{"protocol": seconds, "floor": seconds}``."""
    protocol = fig2_cells(variants=("official",))
    flops = sum(ifca_fig2.cell_flops(cell) for cell in protocol)
    bench_flops = sum(f["cell_flops"] for f in figs)
    seconds_per_flop = sum(f["t_product"] for f in figs) / bench_flops
    work = sum(f["slot_fraction_product"] * f["cell_flops"] for f in figs) / bench_flops  # share early exit leaves
    share = loop_gflops / gemm_gflops
    seconds = {"protocol": flops * seconds_per_flop, "floor": flops * work / (gemm_gflops * 1e9)}
    return [
        ("full protocol, this CPU", _hours(seconds["protocol"]),
         f"{len(protocol)} cells x 40 trials, {flops:.2g} flop with every run to T; extrapolated from the "
         f"product's {1e12 * seconds_per_flop:.2f} s per Tflop on the cells above, at the threads the library chose"),
        ("  flop floor at GEMM rate", _hours(seconds["floor"]),
         f"{100 * work:.0f}% of the flops left by early exit, at {gemm_gflops:.0f} GFLOP/s "
         f"(without early exit: {_hours(flops / (gemm_gflops * 1e9))})"),
        ("  GPU estimate", _hours(flops * work / (GPU_FP32_FLOPS * share)),
         f"same work at {GPU_FP32_FLOPS / 1e12:.1f} TFLOP/s FP32 x the loop's {100 * share:.0f}% of GEMM rate"),
    ], seconds


def print_summary(figs: list[dict], args) -> dict:
    """Print the summary table of the cells; return its headline figures (:func:`print_headlines`)."""
    def total(key):
        return sum(f[key] for f in figs)

    t_ref, t_product, t_plain = total("t_ref"), total("t_product"), total("t_plain")
    run_iterations = total("run_iterations")
    slot_plain = sum(f["slot_fraction_plain"] * f["run_iterations"] for f in figs) / run_iterations
    speedup = t_ref / t_product
    divergence = 1 / slot_plain
    exit_factor = t_plain / t_product
    batching = t_ref / (t_plain * divergence)
    gemm = np.mean([f["rate_gemm"] for f in figs])
    matvec = np.mean([f["rate_matvec_np"] for f in figs])
    loop_gflops = total("plain_flops") / total("t_plain_ifca") / 1e9

    def weighted(key):
        return sum(f[key] * f["run_iterations"] for f in figs) / run_iterations

    def share(x):
        return f"{100 * math.log(x) / math.log(speedup):.0f}%" if speedup > 1 else "n/a"

    cells = ", ".join(f"r={f['r']}" for f in figs)
    print(f"\n=== Summary: {len(figs)} cells ({cells}), times summed")
    table = [
        ("reference wall time", f"{t_ref:.1f} s", f"{args.reference_dtype}, one run at a time"),
        ("run_fig2_cell wall time", f"{t_product:.2f} s", "float32, as configured (early exit)"),
        ("speed ratio", f"{speedup:.1f}x", "target >= 30x"),
        ("torch GEMM rate", f"{gemm:.1f} GFLOP/s", "(mn x d)@(d x Rk) float32, median"),
        ("numpy mat-vec rate", f"{matvec:.1f} GFLOP/s", "(n x d)@v per machine, float32"),
        ("torch mat-vec rate", f"{np.mean([f['rate_matvec_torch'] for f in figs]):.1f} GFLOP/s", "(mn x d)@v"),
        ("roofline ratio", f"{gemm / matvec:.1f}x", "GEMM / numpy per-machine mat-vec"),
        ("reference achieved rate", f"{np.mean([f['ref_gflops'] for f in figs]):.1f} GFLOP/s", "incl. Python loop"),
        ("IFCA loop achieved rate", f"{loop_gflops:.1f} GFLOP/s", "plain ifca(), float32"),
        ("IFCA loop / GEMM rate", f"{100 * loop_gflops / gemm:.0f}%", "target >= 70%"),
        ("saving: batching", f"{batching:.1f}x ({share(batching)})", "ref cost per run-iteration / batched per slot"),
        ("saving: diverged runs leave", f"{divergence:.2f}x ({share(divergence)})",
         f"run-iterations skipped {100 * weighted('skipped_diverged'):.0f}%, slots worked {100 * slot_plain:.0f}%"),
        ("saving: early exit", f"{exit_factor:.2f}x ({share(exit_factor)})",
         f"run-iterations retired {100 * weighted('skipped_retired'):.0f}% (trial decided "
         f"{100 * weighted('skipped_decided'):.0f}%, of which never started: its second wave of step sizes "
         f"{100 * weighted('skipped_unstarted'):.0f}%; certified failures {100 * weighted('skipped_failure'):.0f}%)"),
        ("  early exit, work only", f"{slot_plain / weighted('slot_fraction_product'):.2f}x",
         "slot-iterations plain / with early exit"),
        ("certificate's own time", f"{100 * total('t_certificate') / t_product:.1f}%",
         f"{total('t_certificate'):.2f} s of the product's {t_product:.2f} s (timed inside it); target <= 10%"),
        ("  true clusters' Grams", f"{100 * total('t_gram') / t_product:.1f}%",
         f"{total('t_gram'):.2f} s, in the certificate (proving lambda_min needs them)"),
        ("  certificate's floor", f"{100 * total('t_floor') / (t_product - total('t_certificate') + total('t_floor')):.1f}%",
         f"{total('t_floor'):.2f} s: those Grams, the machines' Grams and one Cholesky test per true cluster, "
         "as a share of a product whose certificate cost only that"),
    ]
    # where the product's time goes: the loop's work at the GEMM rate (its flop floor), the loop beyond
    # it (narrow GEMMs, elementwise work, Python between calls, the looks' bookkeeping), the certificate,
    # the problems' draws
    floor = sum(f["slot_fraction_product"] * f["cell_flops"] for f in figs) / (gemm * 1e9)
    loop = t_product - total("t_certificate") - total("t_generation")
    table.append(("where the product's time goes", "", "(the four rows below sum to 100%)"))
    for name, seconds, note in (("  the loop's flop floor", floor, "its slot-iterations' flops at the GEMM rate"),
                                ("  the loop beyond it", loop - floor,
                                 "narrow GEMMs, elementwise work, Python, the looks' bookkeeping"),
                                ("  the certificate", total("t_certificate"), "as above"),
                                ("  the problems' draws", total("t_generation"), "NumPy's normals, one problem per thread")):
        table.append((name, f"{100 * seconds / t_product:.1f}%", f"{seconds:.2f} s; {note}"))
    rows, protocol = protocol_projection(figs, gemm, loop_gflops)
    table += rows
    if not args.no_float64:
        table.append(("saving: float32 vs float64", f"{total('t_plain64') / t_plain:.2f}x",
                      f"plain batched run; not in the ratio (reference is {args.reference_dtype})"))
    width = max(len(row[0]) for row in table)
    for name, value, note in table:
        print(f"  {name:<{width}}  {value:>16}  {note}")
    floor_share = total("t_floor") / (t_product - total("t_certificate") + total("t_floor"))
    return {"speedup": speedup, "loop_share": loop_gflops / gemm, "certificate_share": total("t_certificate") / t_product,
            "floor_share": floor_share, **protocol}


def one_pass(cells: list[dict], args, load: str) -> dict:
    """The whole benchmark once, on the machine as it is (``quiet``) or beside a process spinning
    on one core (``busy``, started here and stopped by its id): the headline figures."""
    where = "the machine as it is" if load == "quiet" else "beside a process this script starts spinning on one core"
    print(f"\n########## {load}: {where}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with busy_neighbour() if load == "busy" else contextlib.nullcontext(), Stage() as stage:
        policy = {} if args.no_policy_check else wait_policy_check(cells[0], args.policy_iterations)
        if policy:
            print(f"  ifca() one trial, {args.policy_iterations} iterations, fresh processes, ms/iteration: "
                  + ", ".join(f"{name} {1e3 * policy[name]:.1f} (other load {policy[name + '_others']:.1f} cores)"
                              for name in POLICIES))
        figs = [bench_cell(cell, args) for cell in cells]
    headline = print_summary(figs, args)
    if policy:
        print(f"  {'ifca() ms/iteration, 1 trial':<29}  {1e3 * policy['default']:>7.1f} default  "
              f"{1e3 * policy['PASSIVE']:.1f} OMP_WAIT_POLICY=PASSIVE, {1e3 * policy['1 thread']:.1f} one thread "
              f"(fresh processes, same moment)")
    print(f"  whole {load} pass: {stage}")
    return {**headline, "policy": policy, "others": stage.others}


# the targets (issue 28): busy/quiet of ifca() under the library's default, the certificate's share
# against its floor's, the protocol's projection against its flop floor (3.0 h when the floor was 1.2 h)
TARGETS = {"ifca_busy": 1.5, "certificate_floor": 2.0, "protocol_floor": 2.5, "protocol_hours": 3.0}


def print_headlines(headlines: dict[str, dict], small: bool) -> None:
    """The headline rows of every pass side by side, then each target and whether it is met."""
    loads = list(headlines)
    print(f"\n=== Headline, {' and '.join(loads)} (one run)")

    def row(name, cell):
        print(f"  {name:<46}" + "".join(f"{cell(headlines[load]):>26}" for load in loads))

    print(f"  {'':<46}" + "".join(f"{load:>26}" for load in loads))
    row("other load (cores)", lambda h: f"{h['others']:.1f}")
    row("speed ratio vs the per-run loop", lambda h: f"{h['speedup']:.1f}x")
    row("loop vs GEMM", lambda h: f"{100 * h['loop_share']:.0f} %")
    row("certificate's share / its floor's", lambda h: f"{100 * h['certificate_share']:.1f} % / "
                                                       f"{100 * h['floor_share']:.1f} %")
    row("full protocol projected (flop floor)", lambda h: f"{_hours(h['protocol'])} ({_hours(h['floor'])})")
    if all(h["policy"] for h in headlines.values()):
        row("ifca() ms/iteration: default / PASSIVE / 1 thread",
            lambda h: " / ".join(f"{1e3 * h['policy'][name]:.1f}" for name in POLICIES))

    def verdict(name, value, target, text, unit="x"):
        print(f"  {name:<58} {text:>12}  target <= {target:g}{unit}: {'met' if value <= target else 'NOT met'}")

    quiet = headlines.get("quiet")
    print(f"  targets (set for the paper-size cells{'; these are smaller' if small else ''}):")
    if quiet and "busy" in headlines and quiet["policy"] and headlines["busy"]["policy"]:
        ratio = headlines["busy"]["policy"]["default"] / quiet["policy"]["default"]
        verdict("ifca() busy/quiet, the library's default", ratio, TARGETS["ifca_busy"], f"{ratio:.2f}x")
    for load, h in headlines.items():
        ratio = h["certificate_share"] / h["floor_share"]
        verdict(f"certificate's share / its floor's ({load})", ratio, TARGETS["certificate_floor"], f"{ratio:.2f}x")
    for load, h in headlines.items():
        ratio = h["protocol"] / h["floor"]
        verdict(f"protocol projected / its flop floor ({load})", ratio, TARGETS["protocol_floor"], f"{ratio:.2f}x")
        verdict(f"protocol projected, hours ({load})", h["protocol"] / 3600, TARGETS["protocol_hours"],
                _hours(h["protocol"]), " h")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_cell_options(parser, trials=3)
    parser.add_argument("--quick", action="store_true", help="a smaller cell: d=200, m=n=40 (~1 minute per pass)")
    parser.add_argument("--seed", type=int, default=0, help="sweep seed")
    parser.add_argument("--reference-dtype", choices=("float32", "float64"), default="float32",
                        help="the per-run reference's dtype (default float32, as the authors' torch code)")
    parser.add_argument("--no-float64", action="store_true", help="skip the float64 batched run")
    parser.add_argument("--omp-passive", action="store_true", help="run with OMP_WAIT_POLICY=PASSIVE")
    parser.add_argument("--no-policy-check", action="store_true",
                        help="skip timing ifca() under OpenMP's wait policies and one thread in fresh processes")
    parser.add_argument("--policy-iterations", type=int, default=20, help="iterations of the wait-policy check")
    parser.add_argument("--load", default="quiet,busy",
                        help="comma-separated passes: 'quiet' (the machine as it is) and 'busy' (beside a process "
                             "this script starts spinning on one core and stops by its id); default both, in order")
    args = parser.parse_args(argv)
    loads = args.load.split(",")
    if not loads or any(load not in ("quiet", "busy") for load in loads) or len(set(loads)) < len(loads):
        parser.error(f"--load must list 'quiet' and/or 'busy', each once; got {args.load!r}")
    cells = benchmark_cells(args, {"m": [40], "n": [40], "d": [200]} if args.quick else None, seed=args.seed)

    print(f"bench_ifca_fig2: python {platform.python_version()}, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), numpy {np.__version__}, {os.cpu_count()} CPUs")
    print(f"  command: {' '.join(sys.argv)}")
    print(f"  OpenMP wait policy: OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, "
          f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT', '(unset)')}")
    with Stage() as stage:
        headlines = {load: one_pass(cells, args, load) for load in loads}
    print_headlines(headlines, small=args.quick or any(cell['d'] != 1000 for cell in cells))
    print(f"  whole benchmark: {stage.seconds:.0f} s")
    if FAILURES:
        print(f"\n{len(FAILURES)} check(s) FAILED:")
        for failure in FAILURES:
            print(f"  - {failure}")
        return 1
    print("\nall outcome checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
