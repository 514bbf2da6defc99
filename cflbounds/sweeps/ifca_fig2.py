"""The success-probability protocol of IFCA Sec. 6.1 / Fig. 2 (DESIGN.md, "IFCA Fig. 2 protocol").

Two variants, named in every result row and report:

``official`` (default; what the authors' code does): theta*_j with i.i.d. Bernoulli(0.5) * r
coordinates (not normalised), Bernoulli(0.5) initial models in {0, 1}, mean squared loss,
gradient averaging over all machines with ``/m``, no re-sampling, 300 iterations, 10
restarts x 3 step sizes; a run's distance is ``(1/k) sum_j min_j' ||theta_j - theta*_j'||``.
``paper-text``: theta*_j rescaled to norm R, initial models with the same scaling, and
models matched to truths one-to-one.

A data seed (trial) succeeds if the smallest final distance over its finite runs is
below ``0.6 sigma`` (``0.6 sigma + 0.001`` on the noise panels a, b); a trial whose runs
all diverge fails (the authors' code counts it as a success by accident).

With ``early_exit`` (default) a run leaves the batch once its final distance is certainly
on one side of the threshold, and a trial once one of its runs certainly succeeds
(:mod:`cflbounds.sweeps.certificate`); outcomes are unchanged, but such runs have no
final distance in the rows (``certified`` says why, ``final_lower/upper`` bound it).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .._torch import resolve_device
from .._validation import InvalidParameterError
from ..algorithms import ifca
from ..algorithms.trace import matched_distances
from ..algorithms.squared_loss import LOSS_CONVENTIONS, iteration_flops
from ..synthetic import make_mixed_linear_regression
from ..synthetic.batch_draws import chunk_machines
from .certificate import FinalDistanceCertificate
from .cluster_quadratics import ClusterQuadratics
from .grid import cell_key, expand, trial_seeds
from .resources import available_memory, format_bytes
from .step_order import step_waves

__all__ = ["VARIANTS", "PANELS", "fig2_cells", "run_fig2_cell", "trial_outcomes", "stable_step_sizes", "trials_per_batch",
           "cell_memory", "cell_flops", "cell_seconds", "check_memory", "assumed_rate", "runs_per_trial", "ASSUMED_FLOPS"]

VARIANTS = ("official", "paper-text")
STEP_SIZES = {2: (1.0, 0.1, 0.01), 4: (2.0, 1.0, 0.5)}
_NOISE_AXES = {"r": [0.1, 0.25, 0.5, 0.75, 1.0], "sigma": [0.0, 0.1, 0.2, 0.4]}

# panel -> (fixed parameters, swept axes); the paper's Fig. 2 panels (a)-(d)
PANELS = {
    "a": ({"k": 2, "m": 100, "n": 100, "d": 1000, "noise_panel": True}, _NOISE_AXES),
    "b": ({"k": 4, "m": 400, "n": 100, "d": 1000, "noise_panel": True}, _NOISE_AXES),
    "c": ({"k": 2, "d": 1000, "sigma": 0.1, "noise_panel": False},
          {"m": [50, 70, 100, 150, 200, 300, 400], "n": [50, 100, 200], "r": [0.1, 0.25]}),
    "d": ({"k": 4, "d": 1000, "sigma": 0.1, "noise_panel": False},
          {"m": [100, 200, 300, 400, 800], "n": [50, 100, 200], "r": [0.5, 0.75]}),
}
AXES = ("k", "m", "n", "d", "r", "sigma")
PROTOCOL = {"trials": 40, "restarts": 10, "iterations": 300, "dtype": "float32", "shared_inits": False,
            "early_exit": True}
# data per chunk of trials: a fixed budget per device, so chunking is part of the config. On
# the CPU small (trials share no data, and at paper size one trial per batch runs fastest,
# benchmarks/README.md); a GPU needs many trials at once to fill it.
_BATCH_BYTES = {"cpu": 64 << 20, "cuda": 2 << 30}


# iterations between the certificate's looks, by whether a batch holds one trial. A look's Python
# work grows with the batch's runs, its saving with the cost of an iteration: with one paper-size
# trial per batch, looks every 5 iterations took 4 % less CPU than every 10 (benchmark cells); with
# IFCA.F2's default-scale batches of 40 small trials, every 10 took 13 % less time than every 5
_LOOK_EVERY = {True: 5, False: 10}


def fig2_cells(panels=tuple(PANELS), variants=("official",), overrides: dict | None = None, *,
               seed: int = 0, **protocol) -> list[dict]:
    """The cells of the selected panels and variants.

    ``overrides`` maps a parameter (``m, n, d, r, sigma``) to the values to use in every
    selected panel: it replaces a swept axis's values, or a panel's fixed value (several
    values then make it an axis). ``protocol`` overrides the protocol settings
    (``trials``, ``restarts``, ``iterations``, ``dtype``, ``shared_inits``).
    """
    overrides = overrides or {}
    cells = []
    for panel in panels:
        fixed, axes = PANELS[panel]
        fixed = {key: value for key, value in fixed.items() if key not in overrides}
        axes = {**axes, **overrides}
        for variant in variants:
            settings = {**PROTOCOL, **protocol, "sweep": "ifca-fig2", "variant": variant, "panel": panel, "seed": seed}
            cells += expand({**fixed, **settings}, axes)
    return cells


def stable_step_sizes(cell: dict) -> list[float]:
    """The cell's step sizes at which every partition's gradient descent is stable: ``gamma *
    lambda_max < 2`` for the full data's Hessian ``(2/mn) X^T X`` (which bounds every cluster's),
    with its Marchenko-Pastur edge ``2 (1 + sqrt(d/mn))^2`` and a 10 % margin. Runs at larger
    steps oscillate or blow up and may amplify rounding without limit (two runs from the same
    start whose float64 arithmetic differed in the last bit ended 41 % apart on one CPU;
    tests/test_certificate.py), so their final distances can be reported but not compared
    between two computations that may round differently."""
    edge = 2.0 * (1.0 + math.sqrt(cell["d"] / (cell["m"] * cell["n"]))) ** 2
    return [step for step in STEP_SIZES[cell["k"]] if step * edge * 1.1 < 2.0]


def trials_per_batch(cell: dict, device: str = "cpu") -> int:
    """How many trials of the cell run as one batch: a fixed data budget per device type."""
    return max(1, _BATCH_BYTES[resolve_device(device).type] // (cell["m"] * cell["n"] * cell["d"] * 4))


def batches_drawn_at_once(cell: dict, device: str = "cpu") -> int:
    """How many of the cell's batches of trials have their problems drawn together: enough to give
    each torch thread a problem (one problem's stream is drawn on one thread,
    :mod:`cflbounds.synthetic.batch_draws`), at most the cell's batches. With one paper-size trial
    per batch, two threads draw two batches' problems in the time of one."""
    import torch

    batch = min(cell["trials"], trials_per_batch(cell, device))
    return max(1, min(-(-cell["trials"] // batch), -(-torch.get_num_threads() // batch)))


def runs_per_trial(cell: dict) -> int:
    """Restarts x step sizes: the runs of one trial (data seed)."""
    return cell["restarts"] * len(STEP_SIZES[cell["k"]])


# bytes of one run's row in the returned frame (_rows: 26 columns of at most 8 bytes), and the
# Python objects per run and per trial besides (certificate dicts, outcome tuples, row lists, seeds)
_ROW_BYTES, _RUN_OBJECTS, _TRIAL_OBJECTS = 26 * 8, 1024, 256
# a problem's ClusterQuadratics besides its arrays: its tensors' and dicts' objects (measured: 38 KB
# per problem at m = 8, n = 10, d = 20, of which 14 KB arrays)
_PROBLEM_OBJECTS = 24 << 10
# what a cell's peak resident memory held beyond the arrays counted below, measured on cells of
# 0.1-0.5 GB (tests/test_sweeps.py): at most 40 MB of interpreter, torch and allocator overhead
_OVERHEAD = 64 << 20


def cell_memory(cell: dict, device: str = "cpu") -> dict[str, tuple[int, str]]:
    """The peak bytes :func:`run_fig2_cell` and storing its rows need, by part:
    ``{part (and the options that set it): (bytes, "device" or "host")}``.

    Counted from the shapes it allocates (``B`` trials per batch, ``R`` runs per trial, ``s``
    bytes per float). The problems of :func:`batches_drawn_at_once` batches are drawn together,
    one per torch thread at a time, in float64 on the host a few machines at a time
    (:func:`~cflbounds.synthetic.batch_draws.gaussian_features`), then cast (``B (m n d + m n) s``
    per batch) and held until their batches end; a run holds its batch's data (twice when ``B > 1``: a
    batch that loses a problem is compacted into a copy), each iteration's four ``B m n R k``
    tensors (predictions, residuals, squares, masked) and the models, and the early-exit
    certificate: per problem its float64 copy of the data, the true clusters' ``k`` Gram
    matrices, the machines' ``m x d`` offsets, a few quadratics' fixed points and residual norms
    and their objects; six ``d x d`` work matrices (an assembled Hessian, its triangle copies, a
    shifted copy, a Cholesky factor, an identity) per quadratic solved at once, one per torch
    thread up to ``k`` (each thread's allocator keeps its own: the peak on two threads measured
    427-474 MB on a cell whose data and copies come to 400 MB), a gathered copy of machines' data
    for a Gram and the ``m n x n`` Gram matrices of the spectral norms; the larger
    of the two phases counts. The previous batches' data and the previous batch's trace live on
    while the next batches are drawn; a batch's float64 copy becomes the next batch's
    (:meth:`~cflbounds.sweeps.cluster_quadratics.ClusterQuadratics.release`). On the host: the
    trace's ``(B, R, T+1, k, k)`` float64 distances and every trial's rows, held three times
    while a cell is stored (frames, their concatenation, the Parquet table), and a fixed
    overhead. Sizes are exact integers: an absurd size gives an absurd number, never an
    overflow.
    """
    import torch

    k, m, n, d, T = cell["k"], cell["m"], cell["n"], cell["d"], cell["iterations"]
    B, R = min(cell["trials"], trials_per_batch(cell, device)), runs_per_trial(cell)
    s = 4 if cell["dtype"] == "float32" else 8
    data = B * (m * n * d + m * n)
    copy = data * 8 if cell["early_exit"] and s == 4 else 0  # the certificate's; .double() of float64 is no copy
    place = "device" if resolve_device(device).type == "cuda" else "host"
    ahead = batches_drawn_at_once(cell, device)
    drawn = ahead * data * s  # the problems drawn together, held until their batches end
    run = {"data (--m, --n, --d)": (drawn + (data * s if B > 1 else 0), place),
           "iteration tensors (--m, --n, --restarts)": (4 * B * m * n * R * k * s + 4 * B * R * k * d * s, place)}
    if cell["early_exit"]:
        per_problem = (k * d * d + m * d + 4 * (d + m)) * 8 + _PROBLEM_OBJECTS
        solving = min(torch.get_num_threads(), k)  # a partition's quadratics solved at once, one per thread
        run["early-exit certificate (--d, --m, --n)"] = (
            copy + (6 * d * d * solving + m * n * d + 2 * m * n * n) * 8 + B * per_problem, place)
    at_once = min(torch.get_num_threads(), ahead * B)  # one per thread
    generation = {"data (--m, --n, --d)": (drawn, place),
                  "float64 draws of the problems drawn at once (--m, --n, --d)": (
                      at_once * (chunk_machines(m, n, d) * n * d + 3 * m * n) * 8, "host")}
    parts = max(run, generation, key=lambda phase: sum(size for size, _ in phase.values()))
    trace = B * R * ((T + 1) * k * k * 8 + 2 * T * 4 + 2 * k * d * 8)
    if cell["trials"] > B:
        if cell["trials"] > ahead * B:
            parts["previous trial batches (--m, --n, --d)"] = (drawn, place)
        trace *= 2
    rows = cell["trials"] * (R * (3 * (_ROW_BYTES + len(cell_key(cell))) + _RUN_OBJECTS) + _TRIAL_OBJECTS)
    return {**parts, "trace (--iterations, --restarts)": (trace, "host"),
            "result rows (--trials, --restarts)": (rows, "host"), "interpreter and allocator": (_OVERHEAD, "host")}


def cell_flops(cell: dict) -> float:
    """Flops of every run of the cell over all its iterations (none leaving early), by
    :func:`~cflbounds.algorithms.squared_loss.iteration_flops`."""
    per_iteration = iteration_flops(cell["m"], cell["n"], cell["d"], cell["k"], runs_per_trial(cell))["total"]
    return float(cell["trials"]) * cell["iterations"] * per_iteration


# a time estimate's assumptions, deliberately slow: one busy core of this project's 2-core CPU ran
# the float32 GEMMs of small cells at 22-24 GFLOP/s (benchmarks/README.md: 57 per thread, idle),
# and an iteration of a small batch in 0.3-0.5 ms
ASSUMED_FLOPS = {"cpu": 20e9, "cuda": 1e12}  # per CPU thread; per GPU
_SECONDS_PER_BATCH_ITERATION = 1e-3


def assumed_rate(device: str = "cpu") -> float:
    """The flop rate a time estimate assumes: ``ASSUMED_FLOPS`` per torch CPU thread, or per GPU."""
    import torch

    kind = resolve_device(device).type
    return ASSUMED_FLOPS[kind] * (torch.get_num_threads() if kind == "cpu" else 1)


def cell_seconds(cell: dict, device: str = "cpu") -> float:
    """A rough time for the cell with no run leaving early: its flops at :func:`assumed_rate`
    plus a fixed cost per iteration of each batch of trials."""
    batches = -(-cell["trials"] // min(cell["trials"], trials_per_batch(cell, device)))
    return cell_flops(cell) / assumed_rate(device) + float(batches) * cell["iterations"] * _SECONDS_PER_BATCH_ITERATION


def check_memory(cells: list[dict], device: str = "cpu") -> None:
    """Refuse, before anything is allocated, a cell whose estimated peak (:func:`cell_memory`)
    exceeds the memory free now on the device or the host, saying how much and for what."""
    free = {}
    for cell in cells:
        parts = cell_memory(cell, device)
        for place in {where for _, where in parts.values()}:
            needed = {part: size for part, (size, where) in parts.items() if where == place}
            if place not in free:
                free[place] = available_memory(str(resolve_device(device)) if place == "device" else "cpu")
            if sum(needed.values()) > free[place]:
                largest = max(needed, key=needed.get)
                raise InvalidParameterError(
                    f"A cell of panel {cell['panel']} (k={cell['k']}, m={cell['m']}, n={cell['n']}, d={cell['d']}, "
                    f"{cell['trials']} trials, {cell['restarts']} restarts, {cell['iterations']} iterations) needs "
                    f"about {format_bytes(sum(needed.values()))} of {'CUDA' if place == 'device' else 'host'} "
                    f"memory ({format_bytes(needed[largest])} for the {largest}), but {format_bytes(free[place])} "
                    "is available.")


def _problem_key(cell) -> dict:
    """What defines a cell's problems: its data seeds depend on these only, so execution
    settings (dtype, early exit, restarts, iterations, trial count) never change the data."""
    return {key: cell[key] for key in ("sweep", "variant", "panel", "noise_panel", *AXES)}


def _threshold(cell) -> float:
    return 0.6 * cell["sigma"] + (0.001 if cell["noise_panel"] else 0.0)


def run_fig2_cell(cell: dict, device: str = "cpu") -> pd.DataFrame:
    """All runs of one cell: one row per (trial, restart, step size) with its final state.

    With early exit the runs of a batch of trials go in two waves of step sizes
    (:mod:`cflbounds.sweeps.step_order`); without it, all at once to the end."""
    check_memory([cell], device)  # a cell that cannot fit is refused before anything is allocated
    k, n = cell["k"], cell["n"]
    seeds = trial_seeds(cell["seed"], _problem_key(cell), cell["trials"])
    chunk = trials_per_batch(cell, device)
    decided = dict.fromkeys(STEP_SIZES[k], 0)  # step size -> trials of the cell a run at it succeeded in
    frames, storages = [], []  # the float64 copies of the previous batch's data, for the next batch's quadratics
    for start, problem in _batches(cell, seeds, chunk, device):
        trials = np.arange(start, start + problem.batch_size)
        if not cell["early_exit"]:
            frames.append(_rows(cell, trials, _run(cell, problem, STEP_SIZES[k]), {}))
            continue
        quadratics = [ClusterQuadratics.of_problem(problem.features[b], problem.responses[b], problem.membership,
                                                   LOSS_CONVENTIONS["mean"](n), storages.pop() if storages else None)
                      for b in range(problem.batch_size)]
        waiting = np.arange(problem.batch_size)  # trials of the batch no run has decided yet
        for steps in step_waves(STEP_SIZES[k], decided, quadratics):
            if waiting.size < problem.batch_size:
                frames.append(_stopped_rows(cell, problem, trials, np.setdiff1d(trials - start, waiting), steps))
            if waiting.size == 0:
                continue
            wave = problem if waiting.size == problem.batch_size else problem.subset(waiting)
            certificate = FinalDistanceCertificate(
                wave.theta_star_exact, [quadratics[b] for b in waiting], wave.membership, cell["iterations"],
                _threshold(cell), "nearest" if cell["variant"] == "official" else "matched",
                look_every=_LOOK_EVERY[problem.batch_size == 1])
            rows = _rows(cell, trials[waiting], _run(cell, wave, steps, certificate), certificate.outcomes)
            frames.append(rows)
            succeeded = rows[_run_succeeded(rows)]
            for step in steps:
                decided[step] += succeeded.loc[succeeded["step_size"] == step, "trial"].nunique()
            waiting = waiting[~np.isin(trials[waiting], succeeded["trial"].to_numpy())]
        storages = [quadratics_of.release() for quadratics_of in quadratics]
    order = {step: position for position, step in enumerate(STEP_SIZES[k])}
    rows = pd.concat(frames, ignore_index=True)
    return rows.sort_values(["trial", "restart", "step_size"], key=lambda column: column.map(order)
                            if column.name == "step_size" else column, kind="stable", ignore_index=True)


def _batches(cell, seeds, chunk: int, device):
    """``(first trial, problem batch)`` for each batch of ``chunk`` trials of the cell, their
    problems drawn :func:`batches_drawn_at_once` batches together (views of one draw)."""
    together = chunk * batches_drawn_at_once(cell, device)
    for group in range(0, len(seeds), together):
        drawn = make_mixed_linear_regression(
            cell["k"], cell["m"], cell["n"], cell["d"], sigma=cell["sigma"], truth=cell["variant"], scale=cell["r"],
            batch_size=len(seeds[group:group + together]), seed=list(seeds[group:group + together]),
            dtype=cell["dtype"], device=device,
        )
        for start in range(0, drawn.batch_size, chunk):
            yield group + start, drawn.slice(start, min(start + chunk, drawn.batch_size))


def _run(cell, problem, steps, certificate=None):
    """IFCA on the batch's problems at ``steps``, every restart: the trace."""
    return ifca(problem, iterations=cell["iterations"], step_sizes=steps, restarts=cell["restarts"],
                init=cell["variant"], shared_inits=cell["shared_inits"], seed=cell["seed"], monitor=certificate,
                monitor_every=certificate.look_every if certificate else 10)


def _rows(cell, trials, trace, outcomes) -> pd.DataFrame:
    """The rows of the runs of ``trace`` (of the problems of ``trials``), with the
    certificate's ``outcomes``."""
    B, R = trace.diverged.shape
    certified = [[outcomes.get((b, r), ("",) + (np.nan,) * 3) for r in range(R)] for b in range(B)]
    final = trace.distances[:, :, -1]  # NaN rows for diverged runs stay NaN
    return _frame(cell, trials, trace.problem_seeds, trace.run_restart, trace.run_step_size, {
        "dist_nearest": final.min(axis=-1).mean(axis=-1).ravel(),
        "dist_matched": matched_distances(final).mean(axis=-1).ravel(),
        "misassigned": trace.misassigned[:, :, -1].ravel(),
        "diverged": trace.diverged.ravel(),
        "diverged_at": trace.diverged_at.ravel(),
        "collapsed": trace.collapsed.ravel(),
        "retired_at": trace.retired_at.ravel(),
        "certified": [c[0] for row in certified for c in row],  # success/failure/stopped, "" if ran to T
        "final_lower": [c[2] for row in certified for c in row],
        "final_upper": [c[3] for row in certified for c in row],
    })


def _stopped_rows(cell, problem, trials, positions, steps) -> pd.DataFrame:
    """Rows of runs never started because their trial (batch ``positions``) was decided:
    ``stopped`` at iteration 0, no final state."""
    runs = len(positions) * cell["restarts"] * len(steps)
    restart = np.repeat(np.arange(cell["restarts"]), len(steps))
    step = np.tile(np.asarray(steps, float), cell["restarts"])
    return _frame(cell, trials[positions], [problem.seeds[b] for b in positions], restart, step, {
        "dist_nearest": np.full(runs, np.nan), "dist_matched": np.full(runs, np.nan),
        "misassigned": np.full(runs, -1, dtype=np.int32), "diverged": np.zeros(runs, bool),
        "diverged_at": np.full(runs, -1), "collapsed": np.zeros(runs, bool), "retired_at": np.zeros(runs, int),
        "certified": ["stopped"] * runs, "final_lower": np.full(runs, np.nan), "final_upper": np.full(runs, np.nan)})


def _frame(cell, trials, seeds, restart, step, runs: dict) -> pd.DataFrame:
    """The result rows' layout: the cell's keys, then per run (trial-major, ``restart`` and
    ``step`` per run of one trial) its identity, then the ``runs`` columns."""
    per_trial = len(restart)
    return pd.DataFrame({
        "variant": cell["variant"],
        "panel": cell["panel"],
        **{axis: cell[axis] for axis in AXES},
        "threshold": _threshold(cell),
        "trial": np.repeat(np.asarray(trials), per_trial),
        "problem_seed": np.repeat(np.array(seeds, dtype=np.uint64), per_trial),
        "restart": np.tile(restart, len(trials)),
        "step_size": np.tile(step, len(trials)),
        **runs,
    })


def _run_distance(rows: pd.DataFrame) -> np.ndarray:
    """A run's final distance by its variant's metric (NaN for a diverged or retired run)."""
    return np.where(rows["variant"] == "official", rows["dist_nearest"], rows["dist_matched"])


def _run_succeeded(rows: pd.DataFrame) -> np.ndarray:
    """Runs that end below the threshold: finished there, or certified to."""
    return (_run_distance(rows) < rows["threshold"].to_numpy()) | (rows["certified"] == "success").to_numpy()


def trial_outcomes(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per trial (data seed) of the runs of :func:`run_fig2_cell`.

    A run's distance is ``dist_nearest`` for ``official``, ``dist_matched`` for ``paper-text``.
    Columns besides the cell's keys and the run counts:

    * ``success``: some run ends below ``threshold`` (a finished run's distance, or a certified
      success); a trial whose runs all diverge fails;
    * ``best_finished_distance``: the smallest distance over the runs that ran all T
      iterations without diverging; NaN when none did. With early exit most runs leave
      before T, so it is *not* the trial's best run: a failed trial may show one oscillating
      run's 1e12 while its retired runs were certified to end near the threshold;
    * ``best_distance_lower``, ``best_distance_upper``: the smallest final distance over the
      trial's runs that do not diverge, bracketed: a finished run gives its distance, a
      certified run its ``final_lower`` / ``final_upper``. A run stopped because its trial was
      already decided (``certified == "stopped"``) is not known, so the lower end is NaN in
      a trial that has one; the upper end stands. Without early exit both equal
      ``best_finished_distance``.
    """
    distance = _run_distance(rows)
    rows = rows.assign(
        distance=distance,  # NaN for a diverged or retired run
        lower=pd.Series(distance, index=rows.index).fillna(rows["final_lower"]),
        upper=pd.Series(distance, index=rows.index).fillna(rows["final_upper"]),
        certified_success=rows["certified"] == "success",
        stopped=rows["certified"] == "stopped",
    )
    keys = ["variant", "panel", *AXES, "threshold", "trial"]
    table = rows.groupby(keys, sort=True).agg(
        best_finished_distance=("distance", "min"), best_distance_lower=("lower", "min"),
        best_distance_upper=("upper", "min"), runs=("distance", "size"), diverged_runs=("diverged", "sum"),
        collapsed_runs=("collapsed", "sum"), certified_success=("certified_success", "any"),
        stopped=("stopped", "any")).reset_index()
    table.loc[table.pop("stopped"), "best_distance_lower"] = np.nan
    # NaN (no run finished) compares False
    table["success"] = (table["best_finished_distance"] < table["threshold"]) | table["certified_success"]
    return table
