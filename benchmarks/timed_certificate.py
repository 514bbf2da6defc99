"""The product's early-exit certificate with its own time measured, for the benchmarks."""
from __future__ import annotations

import functools
import statistics
from typing import Callable

import torch

from cflbounds._threads import one_torch_thread
from cflbounds.sweeps import ifca_fig2

__all__ = ["cholesky_seconds", "time_certificate"]


def time_certificate(clock: Callable[[], float]) -> type:
    """Make ``run_fig2_cell`` use a certificate that sums, in the returned class's ``seconds``,
    the ``clock`` seconds (wall: ``time.perf_counter``, CPU: ``time.process_time``) spent on
    early exit outside the IFCA loop, over all batches of trials: the certificate's looks,
    making each problem's ``ClusterQuadratics`` (its float64 copy of the data) and ordering the
    step sizes (the true partition's quadratics; ``run_fig2_cell`` looks all three names up at
    call time). Of those, ``gram_seconds`` sums the true clusters' Gram matrices: the floor of
    a certificate that proves ``lambda_min`` of each true cluster's Hessian from its data (a Gram
    matrix or a factorisation of its points, ``N d^2`` flops at least). ``machine_gram_seconds``
    sums the machines' small Gram matrices (the spectral norms' bounds, which the proof that
    no machine switches needs), and ``blocks`` counts the true clusters' Gram matrices computed:
    with :func:`cholesky_seconds` per block (its ``lambda_min`` test) these make the
    certificate's floor (benchmarks/README.md)."""

    class TimedCertificate(ifca_fig2.FinalDistanceCertificate):
        seconds = 0.0
        gram_seconds = 0.0
        machine_gram_seconds = 0.0
        blocks = 0

        @classmethod
        def reset(cls):
            cls.seconds = cls.gram_seconds = cls.machine_gram_seconds = 0.0
            cls.blocks = 0

        @classmethod
        def floor_seconds(cls, cholesky: float, threads: int = 1) -> float:
            """The certificate's floor: its Gram matrices (as timed: on every thread) and one
            ``cholesky`` (seconds, one thread) per block, ``threads`` blocks' tests at once (a
            partition's quadratics are solved at once, one thread each)."""
            return cls.gram_seconds + cls.machine_gram_seconds + cls.blocks * cholesky / threads

    def timed(function, counter: str = "seconds"):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            start = clock()
            try:
                return function(*args, **kwargs)
            finally:
                setattr(TimedCertificate, counter, getattr(TimedCertificate, counter) + clock() - start)
        return wrapper

    timed_block = timed(ifca_fig2.ClusterQuadratics._block, "gram_seconds")

    class TimedQuadratics(ifca_fig2.ClusterQuadratics):
        of_problem = classmethod(timed(ifca_fig2.ClusterQuadratics.of_problem.__func__))
        _machine_grams = timed(ifca_fig2.ClusterQuadratics._machine_grams, "machine_gram_seconds")

        def _block(self, cluster):
            TimedCertificate.blocks += cluster not in self._blocks
            return timed_block(self, cluster)

    TimedCertificate.__call__ = timed(ifca_fig2.FinalDistanceCertificate.__call__)
    ifca_fig2.FinalDistanceCertificate = TimedCertificate
    ifca_fig2.ClusterQuadratics = TimedQuadratics
    ifca_fig2.step_waves = timed(ifca_fig2.step_waves)
    return TimedCertificate


def cholesky_seconds(d: int, clock: Callable[[], float], repeats: int = 5) -> float:
    """The median ``clock`` seconds of one Cholesky factorisation of a ``d x d`` float64 matrix
    on one torch thread, as the certificate factorises (a ``lambda_min`` test; its time does not
    depend on the values). MKL factorises a paper-size matrix about 2x faster on two threads (26
    against 14 ms, medians of 15 alternating, 2026-11-28), but the certificate's numbers must not
    follow the thread count (:func:`cflbounds._threads.one_torch_thread`): its floor runs one test
    per thread at once (:meth:`floor_seconds`)."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2 * d, d, dtype=torch.float64, generator=generator)
    matrix = x.T @ x
    times = []
    with one_torch_thread():
        for _ in range(repeats + 1):  # the first is a warm-up
            start = clock()
            torch.linalg.cholesky_ex(matrix)
            times.append(clock() - start)
    return statistics.median(times[1:])
