"""The product's early-exit certificate with its own time measured, for the benchmarks."""
from __future__ import annotations

import functools
from typing import Callable

from cflbounds.sweeps import ifca_fig2

__all__ = ["time_certificate"]


def time_certificate(clock: Callable[[], float]) -> type:
    """Make ``run_fig2_cell`` use a certificate that sums, in the returned class's ``seconds``,
    the ``clock`` seconds (wall: ``time.perf_counter``, CPU: ``time.process_time``) spent on
    early exit outside the IFCA loop, over all batches of trials: the certificate's looks,
    making each problem's ``ClusterQuadratics`` (its float64 copy of the data) and ordering the
    step sizes (the true partition's quadratics; ``run_fig2_cell`` looks all three names up at
    call time). Of those, ``gram_seconds`` sums the true clusters' Gram matrices: the floor of
    a certificate that proves ``lambda_min`` of each true cluster's Hessian from its data (a Gram
    matrix or a factorisation of its points, ``N d^2`` flops at least)."""

    class TimedCertificate(ifca_fig2.FinalDistanceCertificate):
        seconds = 0.0
        gram_seconds = 0.0

    def timed(function, counter: str = "seconds"):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            start = clock()
            try:
                return function(*args, **kwargs)
            finally:
                setattr(TimedCertificate, counter, getattr(TimedCertificate, counter) + clock() - start)
        return wrapper

    class TimedQuadratics(ifca_fig2.ClusterQuadratics):
        of_problem = classmethod(timed(ifca_fig2.ClusterQuadratics.of_problem.__func__))
        _block = timed(ifca_fig2.ClusterQuadratics._block, "gram_seconds")

    TimedCertificate.__call__ = timed(ifca_fig2.FinalDistanceCertificate.__call__)
    ifca_fig2.FinalDistanceCertificate = TimedCertificate
    ifca_fig2.ClusterQuadratics = TimedQuadratics
    ifca_fig2.step_waves = timed(ifca_fig2.step_waves)
    return TimedCertificate
