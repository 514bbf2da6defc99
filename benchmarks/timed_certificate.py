"""The product's early-exit certificate with its own time measured, for the benchmarks."""
from __future__ import annotations

from typing import Callable

from cflbounds.sweeps import ifca_fig2

__all__ = ["time_certificate"]


def time_certificate(clock: Callable[[], float]) -> type:
    """Make ``run_fig2_cell`` use a certificate that sums, in the returned class's ``seconds``,
    the ``clock`` seconds (wall: ``time.perf_counter``, CPU: ``time.process_time``) spent inside
    its looks, over all its instances (``run_fig2_cell`` makes one per batch of trials and looks
    the class up at call time)."""

    class TimedCertificate(ifca_fig2.FinalDistanceCertificate):
        seconds = 0.0

        def __call__(self, view):
            start = clock()
            try:
                return super().__call__(view)
            finally:
                TimedCertificate.seconds += clock() - start

    ifca_fig2.FinalDistanceCertificate = TimedCertificate
    return TimedCertificate
