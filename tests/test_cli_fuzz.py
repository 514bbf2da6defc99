"""The command line fed hostile argument lists: exit 0 or 2, never a traceback.

Hypothesis builds argument lists from a grammar of the real subcommands and options (each
subcommand's own flags, claim IDs and each formula's parameters) with hostile values: empty,
huge integers, 1e308, nan, inf, negatives, commas, unknown and repeated flags, and paths to a
file, a missing or read-only directory, a store with a corrupt cell or a finished one. Every
list must end in exit status 0, or 2 with exactly one line on stderr; an exception escaping
``main`` fails the test with its traceback.

The heavy entry points (computing sweep cells, running a claim's check, joining Ray, building
the PDF) are replaced by recorders that return a plausible result, so examples stay fast and the
flow goes on after them: a refusal (exit 2) that comes after one of them would mean validation happened
after work had started, and fails the test.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import itertools
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cflbounds.reports.outputs as outputs
import cflbounds.sweeps.executors as executors
import cflbounds.sweeps.ray_cluster as ray_cluster
import cflbounds.verify.run as verify_run
from cflbounds.cli import main
from cflbounds.sweeps.grid import cell_key
from cflbounds.sweeps.ifca_fig2 import fig2_cells
from cflbounds.sweeps.store import ResultStore
from cflbounds.verify.registry import CLAIMS
from cflbounds.verify.verdict import Verdict

HOSTILE = st.one_of(
    st.sampled_from(["", " ", "0", "1", "2", "-1", "0.5", "1e308", "-1e308", "1e-300", "5e-324", "nan", "inf", "-inf",
                     "99999999999999999999", str(2**63), str(2**53 + 1), ",", "1,,2", "1,1", "2,4", "a,b", "abc",
                     "-", "--", "=", "official", "paper-text", "a", "b,c", "float16", "float64", "e", "2", "local",
                     "ray", "cpu", "cuda", "auto", "smoke", "huge", "IFCA.C1"]),
    st.integers(min_value=-10**25, max_value=10**25).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)
PLAUSIBLE = st.sampled_from(["1", "2", "3", "4", "8", "10", "20", "0.1", "0.5", "1.0", "a", "b,d", "official",
                             "float64", "cpu", "local", "smoke", "e"])  # valid somewhere: examples get past parsing
UNKNOWN = st.sampled_from(["--bogus", "-x", "--json=1", "--", "---", "--m=1", "-h"])
FORMULAS = [claim.id for claim in CLAIMS.values() if claim.bound is not None]
SWEEP_VALUED = ["--panel", "--variant", "--k", "--m", "--n", "--d", "--r", "--sigma", "--trials", "--restarts",
                "--iterations", "--dtype", "--seed", "--executor", "--address", "--device", "--threads"]
SWEEP_FLAGS = ["--shared-inits", "--resume"]
# verify's --out validation is another change (merged separately): verify always gets a fresh --out here
VERIFY_VALUED = ["--scale", "--device", "--executor", "--address", "--seed", "--threads", "--search",
                 "--search-evaluations"]
VERIFY_FLAGS = ["--json", "--strict", "--raise"]


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    """Directories and files an --out or DIR may point at."""
    base = tmp_path_factory.mktemp("fuzz")
    (base / "file").write_text("not a directory")
    (base / "readonly").mkdir(mode=0o555)
    (base / "empty").mkdir()
    cell = fig2_cells(("a",), ("official",), {"m": [8], "n": [10], "d": [20], "r": [0.5], "sigma": [0.1]},
                      trials=3, restarts=2, iterations=20)[0]
    ResultStore(base / "store").write(cell_key(cell), pd.DataFrame({"trial": [0]}))
    ResultStore(base / "corrupt").write(cell_key(cell), pd.DataFrame({"trial": [0]}))
    next((base / "corrupt").glob("cell-*.parquet")).write_bytes(b"")
    return {"missing": base / "missing", "file": base / "file", "inside-file": base / "file" / "store",
            "readonly": base / "readonly" / "store", "empty": base / "empty", "store": base / "store",
            "corrupt": base / "corrupt"}


@pytest.fixture()
def heavy(monkeypatch, tmp_path) -> list[str]:
    """Record the heavy calls instead of making them; each returns what its caller expects."""
    calls: list[str] = []

    def cells(cell_list, compute, store, **kwargs):
        calls.append("run_cells")
        return {"computed": len(cell_list), "skipped": 0, "runs": 0, "seconds": 0.0}

    def check(claim_id, context, raise_errors=False, search=None, timeout=None):
        calls.append("check")
        return Verdict(claim_id, "holds", {}, context.seed, 1, 0.95), {}

    def sweep_outputs(store, cell_list, manifest=None):
        calls.append("write_sweep_outputs")
        return {"figures": [], "report": store.directory / "report.pdf", "summary_text": ""}

    def report(directory, record=None):
        calls.append("write_report")
        return Path(directory) / "report.pdf"

    monkeypatch.setattr(executors, "run_cells", cells)
    monkeypatch.setattr(verify_run, "check_claim", check)
    monkeypatch.setattr(verify_run, "_checks_in_workers", verify_run._checks_here)  # each claim's process is work too
    # --executor ray: joining or starting Ray is work too; the claims then run here, recorded
    monkeypatch.setattr(ray_cluster, "connect", lambda address=None: calls.append("connect"))
    monkeypatch.setattr(verify_run, "_checks_on_ray", verify_run._checks_here)
    monkeypatch.setattr(outputs, "write_sweep_outputs", sweep_outputs)
    monkeypatch.setattr(outputs, "write_report", report)
    monkeypatch.chdir(tmp_path)  # a default --out (reports/...) lands here
    return calls


def _options(valued, flags, values=st.one_of(HOSTILE, PLAUSIBLE)):
    """A list of option groups: valued options with a hostile value (``--x v`` or ``--x=v``),
    bare flags, unknown flags; repeats allowed."""
    groups = [UNKNOWN.map(lambda flag: [flag])]
    if valued:
        groups.append(st.tuples(st.sampled_from(valued), values, st.booleans()).map(
            lambda o: [f"{o[0]}={o[1]}"] if o[2] else [o[0], o[1]]))
    if flags:
        groups.append(st.sampled_from(flags).map(lambda flag: [flag]))
    return st.lists(st.one_of(groups), max_size=5).map(lambda chosen: list(itertools.chain.from_iterable(chosen)))


@st.composite
def argument_lists(draw, places):
    command = draw(st.sampled_from(["claims", "bound", "bound", "sweep", "sweep", "sweep", "report", "verify",
                                    "nonsense"]))
    if command == "claims":
        return ["claims", *draw(_options([], ["--json", "--markdown", "--check"]))]
    if command == "bound":
        claim_id = draw(st.sampled_from(FORMULAS + ["NOPE.X", "IFCA.TAB1", ""]))
        names = list(inspect.signature(CLAIMS[claim_id].bound).parameters) if claim_id in FORMULAS else ["sigma"]
        flags = [f"--{name}" for name in names] + [f"--{name.replace('_', '-')}" for name in names]
        return ["bound", claim_id, *draw(_options(flags, ["--json", "--help"]))]
    if command == "sweep":
        out = draw(st.sampled_from([*places.values(), None]))
        name = draw(st.sampled_from(["ifca-fig2"] * 4 + ["ifca-fig3"]))
        return ["sweep", name, *draw(_options(SWEEP_VALUED, SWEEP_FLAGS)), *(["--out", str(out)] if out else [])]
    if command == "report":
        return ["report", str(draw(st.sampled_from(list(places.values())))), *draw(_options([], []))]
    if command == "verify":
        ids = draw(st.lists(st.sampled_from(["IFCA.A2", "MGD.*", "IFCA.T?", "NOPE.X", "Z*", "IFCA.T2", ""]),
                            max_size=3))
        fresh = places["missing"].parent / "verify" / str(draw(st.integers(0, 10**9)))
        return ["verify", *ids, *draw(_options(VERIFY_VALUED, VERIFY_FLAGS)), "--out", str(fresh)]
    return [draw(st.sampled_from(["nonsense", "", "--json", "-h"])), *draw(_options(["--m"], []))]


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_argument_list_exits_0_or_2_with_one_line(places, heavy, data):
    argv = data.draw(argument_lists(places), label="argv")
    heavy.clear()
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv)
    err = stderr.getvalue()
    assert code in (0, 2), (argv, code, err)
    assert "Traceback" not in err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and re.match(r"cflbounds( [\w.-]+)*: error: ", err), (argv, err)
        assert heavy == [], f"{argv}: refused after work had started ({heavy})"
