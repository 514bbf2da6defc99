"""The IFCA loop's elementwise work on the squared loss, the library's kernels against the plain
expressions they replace, alternating in one process.

    python benchmarks/bench_loop_kernels.py                  # about 30 s on 2 cores
    python benchmarks/bench_loop_kernels.py --repeats 200 --threads 1

Per shape ``(B, m, n, d, C, k)`` (problems, machines, points, dimensions, run slots, models):

* each machine's residual at its chosen model: ``(residual * chosen[:, :, None]).sum(dim=-1)``
  against :func:`cflbounds.algorithms.squared_loss.chosen_residuals`;
* the residuals: ``bmm(...).view(...) - responses[..., None, None]`` against
  :func:`~cflbounds.algorithms.squared_loss.residuals` (the subtraction in place);
* the machines' gradients: ``matmul(...) * scale`` against
  :func:`~cflbounds.algorithms.squared_loss.machine_gradients` (the scaling in place);
* the one-hot choice: ``F.one_hot(assignment + 1, k + 1)[..., 1:].to(dtype)`` against
  :func:`cflbounds.algorithms.rounds.one_hot` (a comparison with ``0..k-1``), machines outside
  the round (``-1``) included.

Each pair runs ``--repeats`` times, alternating, on the same tensors; printed: the median and
the fastest of each, their ratio, and whether the two are bitwise equal (NaN where NaN) on
residuals with planted infinities, NaN and signed zeros. Exit 1 if a pair differs.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cflbounds.algorithms.rounds import one_hot  # noqa: E402
from cflbounds.algorithms.squared_loss import chosen_residuals, machine_gradients, residuals  # noqa: E402

SHAPES = {  # name -> (B, m, n, d, C, k)
    "IFCA.F2 default cell, first wave": (40, 32, 32, 100, 10, 2),
    "IFCA.F2 default cell, both waves": (40, 32, 32, 100, 20, 2),
    "IFCA.F2 default-size cell at k = 4": (40, 32, 32, 100, 10, 4),
    "paper-size Fig. 2(a) trial, first wave": (1, 100, 100, 1000, 10, 2),
    "a small problem at k = 4": (10, 16, 16, 50, 10, 4),
}
SCALE = 2 / 32  # any float: the gradients' scaling


def _pairs(shape):
    """``{name: (plain expression, library kernel)}`` on one shape's tensors."""
    B, m, n, d, C, k = shape
    generator = torch.Generator().manual_seed(0)
    features, responses = torch.randn(B, m, n, d, generator=generator), torch.randn(B, m, n, generator=generator)
    models = torch.randn(B, C, k, d, generator=generator)
    residual = residuals(features, responses, models)
    residual[0, 0, 0, 0, -1], residual[0, -1, 0, 0, 0], residual[0, 0, -1, -1, 0] = float("inf"), float("nan"), -0.0
    assignment = residual.square().sum(dim=2).argmin(dim=-1)
    assignment[:, 0] = -1  # a machine outside the round
    chosen = one_hot(assignment, k, residual.dtype)
    own = chosen_residuals(residual, chosen).nan_to_num()

    def plain_residuals():
        products = torch.bmm(features.reshape(B, m * n, d), models.reshape(B, C * k, d).transpose(1, 2))
        return products.view(B, m, n, C, k) - responses[..., None, None]

    return {
        "chosen model's residual": (lambda: (residual * chosen[:, :, None]).sum(dim=-1),
                                    lambda: chosen_residuals(residual, chosen)),
        "residuals": (plain_residuals, lambda: residuals(features, responses, models)),
        "machine gradients": (lambda: torch.matmul(own.transpose(-1, -2), features) * SCALE,
                              lambda: machine_gradients(features, own, SCALE)),
        "one-hot choice": (lambda: torch.nn.functional.one_hot(assignment + 1, k + 1)[..., 1:].to(residual.dtype),
                           lambda: one_hot(assignment, k, residual.dtype)),
    }


def _bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    nan = a.isnan()
    return torch.equal(nan, b.isnan()) and torch.equal(a[~nan], b[~nan]) and torch.equal(a[~nan].signbit(),
                                                                                         b[~nan].signbit())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=60, help="alternating calls of each pair (default 60)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own count)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    print(f"bench_loop_kernels: torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{args.repeats} alternating calls per pair; ms median (fastest)")
    differs = []
    for name, shape in SHAPES.items():
        print(f"\n{name}: (B, m, n, d, C, k) = {shape}")
        for kernel, (plain, library) in _pairs(shape).items():
            times = {plain: [], library: []}
            plain(), library()  # warm-up
            for _ in range(args.repeats):
                for function in (plain, library):
                    start = time.perf_counter()
                    function()
                    times[function].append(time.perf_counter() - start)
            before, after = (1e3 * statistics.median(times[f]) for f in (plain, library))
            same = _bitwise_equal(plain(), library())
            if not same:
                differs.append(f"{name}: {kernel}")
            print(f"  {kernel:<24} plain {before:6.2f} ({1e3 * min(times[plain]):.2f})  library {after:6.2f} "
                  f"({1e3 * min(times[library]):.2f})  ratio {before / after:4.2f}x  "
                  f"{'bitwise equal' if same else 'DIFFERENT'}")
    if differs:
        print(f"\n{len(differs)} pair(s) differ: " + "; ".join(differs))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
