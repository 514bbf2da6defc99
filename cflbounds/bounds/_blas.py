"""One BLAS thread for a numerical routine whose result is reported to its last digit.

numpy's and scipy's OpenBLAS split work between threads by the thread count it is given
(the CPU count unless ``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS`` says otherwise), and
some of its kernels round differently on several threads even for tiny operands: SLSQP on
five variables (:func:`cflbounds.bounds.cfl_mgd.optimal_lambdas`) ended 1e-9 apart relative
at 1 and 2 threads (measured 2026-11-28, scipy 1.17, OpenBLAS 0.3.31), and the difference
reached MGD.L2's and MGD.T1's evidence. On one thread the same code runs whatever the
machine's count, so the result depends on the inputs alone (on one CPU type).
"""
from __future__ import annotations

import functools

__all__ = ["one_blas_thread"]


@functools.cache
def _controller():
    """threadpoolctl's view of the BLAS libraries loaded (found once: a lookup takes
    milliseconds, a limit through it tens of microseconds)."""
    import scipy.linalg  # noqa: F401  (loads scipy's own BLAS, so that the controller sees it)
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    """A context in which numpy's and scipy's BLAS compute on one thread (restored after)."""
    return _controller().limit(limits=1, user_api="blas")
