"""Shared test settings: the Hypothesis profiles and one torch thread (or ``$CFLBOUNDS_TEST_THREADS``).

Property tests take their settings from :func:`examples`, never from a bare
``settings(max_examples=..., derandomize=...)``: the loaded profile decides how many
examples run and whether they are drawn from a fixed seed (``tests/test_hypothesis_settings.py``
keeps it so).
"""
import contextlib
import os
import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import settings

from cflbounds._threads import ThreadGovernor
from cflbounds.verify import registry, workers

# A test states its count for the deterministic profile; a profile's max_examples over
# Hypothesis's default (100) scales every test's count.
_DEFAULT_EXAMPLES = 100
# deterministic (the default): each test's own count, drawn from a fixed seed, so CI never fails
# on an example it happened to draw this time. explore: fresh examples, ten times as many (a
# property of the default cost runs 1000; see docs/development.md, "Deterministic property tests", for its time).
settings.register_profile("deterministic", max_examples=_DEFAULT_EXAMPLES, derandomize=True, database=None,
                          deadline=None)
settings.register_profile("explore", max_examples=10 * _DEFAULT_EXAMPLES, derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

_GOVERNED = {"max_examples", "derandomize", "database", "deadline"}


def examples(count: int, **options) -> settings:
    """Settings of a property test that runs ``count`` examples under the deterministic profile,
    scaled by the loaded profile (``count * max_examples / 100``); derandomization, the database
    and the deadline are the profile's. ``options`` add other settings (e.g. a suppressed health
    check)."""
    if not (isinstance(count, int) and count >= 1):
        raise ValueError(f"examples(count): count must be an int >= 1. Got {count!r} instead.")
    if _GOVERNED & set(options):
        raise ValueError(f"examples(): {sorted(_GOVERNED & set(options))} are the profile's to set.")
    return settings(max_examples=max(1, round(count * settings.default.max_examples / _DEFAULT_EXAMPLES)), **options)


THREADS_ENV = "CFLBOUNDS_TEST_THREADS"
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def session_threads() -> int | None:
    """``$CFLBOUNDS_TEST_THREADS`` as a thread count (None when unset)."""
    text = os.environ.get(THREADS_ENV, "")
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise pytest.UsageError(f"{THREADS_ENV} must be an int >= 1 (a thread count). Got {text!r} instead.")
    return int(text)


def pytest_configure(config):
    session_threads()  # a bad value stops the session before any test, in one line


GOVERNOR_SET = ThreadGovernor._set  # the real one, for the tests of the thread setting


def _record_only(governor, count: int) -> None:
    """:meth:`cflbounds._threads.ThreadGovernor._set` without setting torch's count."""
    if not governor.chosen or governor.chosen[-1] != count:
        governor.chosen.append(count)


@pytest.fixture(scope="session", autouse=True)
def single_torch_thread():
    """One intra-op thread for the whole suite. The runs are thousands of small torch ops; with
    torch's default 2 OpenMP threads on a busy 2-core machine the threads spin-wait (measured
    7-50x slower, a Fig. 2 cell 0.3 s vs 17 s) while the results are bit-identical.
    The CLI's ``--threads auto`` (its default) would change it mid-session when a test runs a
    command in-process, so the CLI's thread governor records its choice without applying it
    (tests of the thread setting record torch's calls with their own monkeypatch), and the
    library's own load following (``cflbounds._threads.follow_load``) is off
    (``CFLBOUNDS_THREADS=fixed``; its tests turn it on). torch's own
    ``set_num_threads`` stays real: ``cflbounds._threads.one_torch_thread`` must reach one
    thread for the work whose stored digits would follow the count (with it a no-op, a session
    at ``CFLBOUNDS_TEST_THREADS=2`` stored other certificate intervals than a 1-CPU Ray task).

    ``CFLBOUNDS_TEST_THREADS=N`` runs the session on N threads everywhere instead: torch's,
    numpy's and scipy's BLAS and OpenMP (threadpoolctl), and, through ``OMP_NUM_THREADS``,
    ``MKL_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS``, every process a test starts. A test may
    only assert what holds at any thread count (DESIGN.md, "Determinism"): the suite passes
    unset and at 1 (``.ci/run`` runs the floating-point files at 1)."""
    threads = session_threads()
    previous = torch.get_num_threads()
    torch.set_num_threads(threads or 1)
    with pytest.MonkeyPatch.context() as patch, contextlib.ExitStack() as limits:
        patch.setattr(ThreadGovernor, "_set", _record_only)
        patch.setenv("CFLBOUNDS_THREADS", "fixed")  # the library keeps the session's count too (follow_load)
        if threads is not None:
            import scipy.linalg  # noqa: F401  (scipy's own BLAS loaded, so that the limit reaches it)
            from threadpoolctl import threadpool_limits

            limits.enter_context(threadpool_limits(limits=threads))
            for name in _THREAD_VARIABLES:
                patch.setenv(name, str(threads))
        yield
    torch.set_num_threads(previous)


pytest_plugins = ("pytester",)  # tests/test_pytest_plugin.py runs pytest sessions of its own

# The suite checks cflbounds' own claims: a plugin installed beside it (CI installs
# examples/textbook after the suite; a developer may have it) must not change what the tests
# see. Tests about plugins (tests/test_registry.py) add theirs as fake entry points.
_installed_entry_points = registry.entry_points
registry.entry_points = lambda group: [point for point in _installed_entry_points(group=group)
                                       if point.dist is None or point.dist.metadata["Name"] == "cflbounds"]
registry.reload()
REAL_ENTRY_POINTS = registry.entry_points  # cflbounds' own
EXAMPLE = Path(__file__).parents[1] / "examples" / "textbook"


def load_benchmark(name: str):
    """The script ``benchmarks/<name>.py`` as a module (the benchmarks are scripts, not a package),
    for tests of the pieces a benchmark and the suite share."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def interpolation_constraints(points, gram, L: float, mu: float) -> list:
    """The interpolation conditions of F_{mu,L} (Taylor, Hendrickx & Glineur 2017, Thm 4) for
    every ordered pair of ``points`` ``(x, g, f)``, with ``x``, ``g`` coordinate vectors in the
    basis whose Gram matrix is the cvxpy variable ``gram``: the independent performance-estimation
    problems the tests check the toolkit's certified PEP against."""
    constraints = []
    for i, (xi, gi, fi) in enumerate(points):
        for j, (xj, gj, fj) in enumerate(points):
            if i != j:
                dx, dg = xi - xj, gi - gj
                constraints.append(fi >= fj + gj @ gram @ dx + (dg @ gram @ dg / L + mu * (dx @ gram @ dx)
                                                                - 2 * mu / L * (dg @ gram @ dx)) / (2 * (1 - mu / L)))
    return constraints


class FakeEntryPoint:
    """An entry point of a package named ``package`` whose ``load()`` gives ``target`` (or raises it)."""

    def __init__(self, package, name, target, value="plugin_module:CLAIMS"):
        self.name, self.value, self.target = name, value, target
        self.dist = SimpleNamespace(metadata={"Name": package})

    def load(self):
        if isinstance(self.target, BaseException):
            raise self.target
        return self.target


@pytest.fixture
def two_threads():
    """torch on two threads for one test (work that runs pieces at once, one per thread), the
    session's count given back afterwards."""
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def plugins(monkeypatch):
    """Install fake entry points beside the real ones: ``plugins(point, ...)``. They exist in this
    process only, so the commands run claims here (``--isolation none``) unless a test asks for
    worker processes, which find claims among the installed plugins (cflbounds.verify.workers;
    tests/test_isolation.py installs a real plugin package for them)."""
    def install(*points):
        monkeypatch.setattr(registry, "entry_points", lambda group: [*REAL_ENTRY_POINTS(group=group), *points])
        monkeypatch.setattr(workers, "DEFAULT_ISOLATION", "none")
        registry.reload()

    yield install
    monkeypatch.setattr(registry, "entry_points", REAL_ENTRY_POINTS)
    registry.reload()


@pytest.fixture
def textbook(plugins, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for name in [m for m in sys.modules if m.startswith("cflbounds_textbook")]:
        monkeypatch.delitem(sys.modules, name)
    plugins(EntryPoint("textbook", "cflbounds_textbook:CLAIMS", registry.GROUP))
    return registry.claims()
