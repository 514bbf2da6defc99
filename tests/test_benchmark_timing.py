"""The benchmarks' timing of the early-exit certificate (benchmarks/timed_certificate.py) counts
the work it names, inside the product's own calls: bench_certificate.py and bench_ifca_fig2.py
print the certificate's share and its floor from these counters."""
from __future__ import annotations

import os
import time

import torch

from cflbounds.sweeps import ifca_fig2
from cflbounds.sweeps.ifca_fig2 import fig2_cells, run_fig2_cell
from conftest import load_benchmark

TRIALS = 3


def test_timed_certificate_counts_its_floor_inside_the_product(monkeypatch):
    for name in ("FinalDistanceCertificate", "ClusterQuadratics", "step_waves"):
        monkeypatch.setattr(ifca_fig2, name, getattr(ifca_fig2, name))  # time_certificate replaces them: restored after
    timed_certificate = load_benchmark("timed_certificate")
    timed = timed_certificate.time_certificate(time.perf_counter)
    (cell,) = fig2_cells(("a",), ("paper-text",), {"d": [64], "m": [24], "n": [24], "r": [0.25], "sigma": [0.1]},
                         seed=0, early_exit=True, trials=TRIALS, restarts=3, iterations=150)
    rows = run_fig2_cell(cell)
    successes = rows.loc[rows["certified"] == "success", "trial"].nunique()
    assert successes > 0  # the cell exercises the certificate's proofs
    # a certified success proves both true clusters' lambda_min; a block is counted once per problem
    assert 2 * successes <= timed.blocks <= 2 * TRIALS
    assert timed.gram_seconds > 0 and timed.machine_gram_seconds > 0  # the machines' Grams: partition certainty
    assert timed.gram_seconds + timed.machine_gram_seconds <= timed.seconds  # both are inside the certificate
    cholesky = timed_certificate.cholesky_seconds(64, time.perf_counter)
    assert cholesky > 0
    assert timed.floor_seconds(cholesky) == timed.gram_seconds + timed.machine_gram_seconds + timed.blocks * cholesky
    assert timed.floor_seconds(cholesky, 2) == timed.gram_seconds + timed.machine_gram_seconds + timed.blocks * cholesky / 2
    timed.reset()
    assert (timed.seconds, timed.gram_seconds, timed.machine_gram_seconds, timed.blocks) == (0, 0, 0, 0)


def test_the_floors_cholesky_is_timed_on_one_thread_as_the_certificate_factorises(monkeypatch, two_threads):
    """The floor's ``lambda_min`` test is the certificate's: on one torch thread whatever the
    caller's count (on two, MKL would factorise about twice as fast, a floor the certificate,
    whose numbers must not follow the count, cannot reach)."""
    timed_certificate = load_benchmark("timed_certificate")
    counts, factorise = [], torch.linalg.cholesky_ex

    def counted(matrix):
        counts.append(torch.get_num_threads())
        return factorise(matrix)

    monkeypatch.setattr(torch.linalg, "cholesky_ex", counted)
    assert timed_certificate.cholesky_seconds(64, time.perf_counter, repeats=3) > 0
    assert torch.get_num_threads() == 2  # the caller's count comes back
    assert counts == [1] * 4


def test_bench_busy_core_counts_the_judgments_of_the_default_only():
    """bench_busy_core.py bounds the quiet cost of following the load by the judgments a run
    makes: the default judges (each batched computation reads /proc/stat), torch's own fixed
    count never does; each run in a fresh process, as the script runs it."""
    bench = load_benchmark("bench_busy_core")
    measure, _, judgments = bench.run_once("falsify FC.H s", "default", 2)
    assert measure > 0 and judgments >= 1
    assert bench.run_once("falsify FC.H s", "fixed", 2)[2] == 0
    assert bench.judgment_seconds(50) > 0
    assert os.environ["CFLBOUNDS_THREADS"] == "fixed"  # the session's setting is given back


def test_bench_loop_kernels_compares_each_kernel_with_its_plain_expression(monkeypatch, capsys):
    """bench_loop_kernels.py finds each library kernel bitwise equal to the expression it replaced
    (planted infinities, NaN and a signed zero included), and reports a kernel that is not."""
    bench = load_benchmark("bench_loop_kernels")
    monkeypatch.setattr(bench, "SHAPES", {"small": (2, 3, 4, 5, 3, 2)})
    assert bench.main(["--repeats", "1"]) == 0
    assert capsys.readouterr().out.count("bitwise equal") == 4

    def first_model_only(residual, chosen):  # a wrong kernel: the first model's residual, whatever was chosen
        return residual[..., 0].clone()

    monkeypatch.setattr(bench, "chosen_residuals", first_model_only)
    assert bench.main(["--repeats", "1"]) == 1
    assert "small: chosen model's residual" in capsys.readouterr().out
