"""A user's theorem cannot break a run (verify's side): one claim's failure is that claim's
``error`` verdict, with the plugin's file:line; every other claim's verdict is what it is in a run
without the broken claim; every output is written; the exit status says so (3). Plugins that fail
to import or declare a malformed parameter lose only what they must; two plugins' experiment keys
never meet; a crafted checkpoint is never executed.

The other claims' verdicts are compared with a run that has no broken claim at the same seed:
equal except for the time they took."""
from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from cflbounds.claims import Claim, Domain, Parameter, rules, validate_params
from cflbounds.cli import main
from cflbounds.papers import CLAIMS as PAPERS
from cflbounds.verify import VerifyContext, registry, verify_claims
from cflbounds.verify.checkpoints import CheckpointFormatError, checkpoint_type, decode, encode
from cflbounds.verify.failure import ClaimFailure

from conftest import FakeEntryPoint, examples

THIS_FILE = "tests/test_containment.py"


# -- plugin claims -----------------------------------------------------------------------------------
def _measurements(ctx):
    """A seeded experiment shared by the package's claims (ctx.shared)."""
    return ctx.shared(("experiment", ctx.seed), lambda: np.random.default_rng(ctx.seed).uniform(0, 1, 50))


def _check_good(ctx):
    measured = _measurements(ctx)
    ctx.save_table("good_runs", pd.DataFrame({"measured": measured}))
    decision = rules.deterministic(measured, np.ones_like(measured), rtol=0.0, quantity="u")
    return decision.as_verdict("MINE.GOOD", ctx)


def _check_raises(ctx):
    ctx.save_table("raises_runs", pd.DataFrame({"x": [1.0]}))  # saved, then the check fails
    settings = {"trials": 10}
    return settings["n"]  # KeyError: the plugin's own bug (this line is named in the verdict)


@validate_params({})
def _bound_raises():
    """A bound whose formula divides by zero.

    1 / 0.
    """
    return 1.0 / 0


def _check_calls_bound(ctx):
    return _bound_raises()


def _check_returns_a_number(ctx):
    return 0.5


GOOD = Claim("MINE.GOOD", "Uniform draws stay below 1.", check=_check_good)
RAISES = Claim("MINE.RAISES", "A check with a KeyError.", check=_check_raises)
BOUND = Claim("MINE.BOUND", "A bound that raises.", check=_check_calls_bound, bound=_bound_raises)
NUMBER = Claim("MINE.NUMBER", "A check returning a number.", check=_check_returns_a_number)


@pytest.fixture
def mine(plugins):
    plugins(FakeEntryPoint("my-plugin", "mine", [GOOD, RAISES, BOUND, NUMBER]))


def _without_time(verdict: dict) -> dict:
    return {key: value for key, value in verdict.items() if key != "seconds"}


def _alone(claim_id):
    (verdict,) = verify_claims([claim_id], VerifyContext(scale="smoke", seed=0))
    return _without_time(verdict.to_dict())


@pytest.mark.parametrize("broken, stage, kind, line", [
    ("MINE.RAISES", "check", "KeyError", "return settings[\"n\"]"),
    ("MINE.BOUND", "bound", "ZeroDivisionError", "return 1.0 / 0"),
    ("MINE.NUMBER", "contract", "ContractError", "def _check_returns_a_number"),
])
def test_a_failing_check_is_its_claims_error_and_the_others_are_unchanged(mine, broken, stage, kind, line):
    verdicts = verify_claims([broken, "MINE.GOOD"], VerifyContext(scale="smoke", seed=0))
    error, good = verdicts
    assert error.verdict == "error" and error.evidence == {} and error.trials == 0
    failure = ClaimFailure.from_details(error.details)
    assert (failure.stage, failure.kind) == (stage, kind)
    path, number = failure.where.rsplit(":", 1)
    assert path.endswith(THIS_FILE)
    assert line in open(path).read().splitlines()[int(number) - 1]
    assert error.summary.startswith(f"{stage} ") and failure.where in error.summary
    assert (kind in error.summary) != (stage == "contract")  # a contract break names the rule, not a type
    assert "Traceback" in failure.traceback
    assert _without_time(good.to_dict()) == _alone("MINE.GOOD")


def test_the_cli_writes_every_output_and_exits_3(mine, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["verify", "MINE.RAISES", "MINE.GOOD", "--scale", "smoke", "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert "MINE.RAISES  error" in captured.out and "KeyError" in captured.out
    assert "cflbounds verify: error: MINE.RAISES: check raised: KeyError" in captured.err
    record = json.loads((out / "verdicts.json").read_text())
    verdicts = {v["id"]: v for v in record["verdicts"]}
    assert verdicts["MINE.RAISES"]["verdict"] == "error"
    assert _without_time(verdicts["MINE.GOOD"]) == _alone("MINE.GOOD")
    assert record["metadata"]["finished"] is not None
    tables = sorted(path.name for path in (out / "tables").iterdir())
    assert tables == ["good_runs.parquet"]  # the failed claim's half-saved table is not kept
    assert (out / "report.pdf").stat().st_size > 0


def test_strict_keeps_its_meaning_and_error_comes_first(mine, plugins, tmp_path):
    def violated(ctx):
        return rules.deterministic([2.0], [1.0]).as_verdict("MINE.VIOLATED", ctx)

    plugins(FakeEntryPoint("my-plugin", "mine", [GOOD, RAISES, Claim("MINE.VIOLATED", "2 <= 1.", check=violated)]))
    run = ["verify", "--scale", "smoke", "--strict"]
    assert main([*run, "MINE.VIOLATED", "--out", str(tmp_path / "a")]) == 1
    assert main([*run, "MINE.VIOLATED", "MINE.RAISES", "--out", str(tmp_path / "b")]) == 3
    assert main([*run, "MINE.GOOD", "--out", str(tmp_path / "c")]) == 0


def test_raise_stops_at_the_first_error_with_its_traceback(mine, tmp_path):
    with pytest.raises(KeyError, match="'n'"):
        main(["verify", "MINE.RAISES", "MINE.GOOD", "--scale", "smoke", "--out", str(tmp_path / "run"), "--raise"])
    record = json.loads((tmp_path / "run" / "verdicts.json").read_text())
    assert record["verdicts"] == []


def test_resume_checks_an_errored_claim_again(mine, plugins, tmp_path):
    out = str(tmp_path / "run")
    assert main(["verify", "MINE.RAISES", "MINE.GOOD", "--scale", "smoke", "--out", out]) == 3

    def fixed(ctx):
        return rules.deterministic([0.5], [1.0]).as_verdict("MINE.RAISES", ctx)

    plugins(FakeEntryPoint("my-plugin", "mine", [GOOD, Claim("MINE.RAISES", "Fixed.", check=fixed)]))
    good_before = json.loads((tmp_path / "run" / "verdicts.json").read_text())["verdicts"][1]
    assert main(["verify", "MINE.RAISES", "MINE.GOOD", "--scale", "smoke", "--out", out, "--resume"]) == 0
    verdicts = {v["id"]: v for v in json.loads((tmp_path / "run" / "verdicts.json").read_text())["verdicts"]}
    assert verdicts["MINE.RAISES"]["verdict"] == "holds"
    assert verdicts["MINE.GOOD"] == good_before  # kept, not recomputed


def test_the_pytest_plugin_fails_an_errored_claim_with_its_traceback(pytester, monkeypatch):
    monkeypatch.setitem(registry.claims(), "MINE.RAISES", RAISES.from_package("my-plugin"))
    result = pytester.runpytest("--cflbounds", "MINE.RAISES", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*collected 1 item*", "*MINE.RAISES: error: the claim's own code failed*",
                                 "*check raised: KeyError: 'n'*", "*reproduce: cflbounds verify MINE.RAISES*--raise*",
                                 "*the claim's traceback*", "*return settings*"])


# -- plugins that cannot be registered whole -----------------------------------------------------------
PLUGIN_MODULE = '''
from cflbounds.claims import Claim, Domain, Instance, Parameter, rules


def check(ctx):
    return rules.deterministic([0.5], [1.0]).as_verdict(ctx.claim, ctx)


def evaluate(points, seeds, ctx):
    return [Instance(0.5, 1.0) for _ in points]


GOOD_DOMAIN = Domain([Parameter("x", 0.0, 1.0)], evaluate)
BAD_DOMAIN = Domain([Parameter("n", 200, 1, integer=True)], evaluate)   # low > high: line 14
CLAIMS = [Claim("MYTHM.A", "Fine.", check=check, domain=GOOD_DOMAIN),
          Claim("MYTHM.B", "A malformed domain.", check=check, domain=BAD_DOMAIN),
          Claim("mythm.c", "A malformed ID.", check=check),                  # line 17
          Claim("MYTHM.D", "Fine too.", check=check)]
'''


@pytest.fixture
def plugin_module(tmp_path, monkeypatch, plugins):
    """Write ``source`` as the module ``name`` in a fresh directory on sys.path and register its
    CLAIMS through an entry point, as an installed package would."""
    def install(name, source, package="mythm-plugin"):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, name, raising=False)
        plugins(_ModuleEntryPoint(package, name))
        return tmp_path / f"{name}.py"

    return install


class _ModuleEntryPoint(FakeEntryPoint):
    """An entry point that imports its module for real (so import errors are real ones)."""

    def __init__(self, package, module):
        super().__init__(package, "mythm", None, value=f"{module}:CLAIMS")
        self.module = module

    def load(self):
        import importlib

        return importlib.import_module(self.module).CLAIMS


def test_a_malformed_parameter_costs_only_its_claims_domain(plugin_module, capsys):
    path = plugin_module("mythm_plugin", PLUGIN_MODULE)
    claims = registry.claims()
    assert {"MYTHM.A", "MYTHM.B", "MYTHM.D"} <= set(claims) and "mythm.c" not in claims
    assert claims["MYTHM.A"].domain is not None and claims["MYTHM.B"].domain is None
    assert "malformed" in claims["MYTHM.B"].no_domain and "low <= high" in claims["MYTHM.B"].no_domain
    problems = [str(p) for p in registry.plugin_problems()]
    assert len(problems) == 2, problems
    domain, identifier = problems
    for text in problems:
        assert text.startswith("plugin mythm-plugin (entry point 'mythm'): ")
    assert "claim MYTHM.B" in domain and f"{path.name}:14" in domain and "kept without it" in domain
    assert "'mythm.c'" in identifier and f"{path.name}:17" in identifier
    # verify still checks MYTHM.B; falsify refuses it with the reason
    assert main(["claims", "--check"]) == 1
    listing = capsys.readouterr().out
    assert "mythm-plugin (entry point 'mythm' = mythm_plugin:CLAIMS): 3 claims, 2 problems" in " ".join(listing.split())
    assert main(["falsify", "MYTHM.B", "--evaluations", "5", "--out", str(path.parent / "f")]) == 2
    assert "its declared domain is malformed" in capsys.readouterr().err


def test_an_import_error_names_the_plugin_file_and_line(plugin_module):
    path = plugin_module("broken_plugin", "import math\nVALUE = {'a': 1}['b']\nCLAIMS = []\n")
    (problem,) = registry.plugin_problems()
    text = str(problem)
    assert "plugin mythm-plugin (entry point 'mythm'): failed to load broken_plugin:CLAIMS: KeyError: 'b'" in text
    assert text.endswith(f"(at {path}:2)") or text.endswith(f"{path.name}:2)"), text
    assert len([c for c in registry.claims().values() if c.package == "cflbounds"]) == len(PAPERS)  # the others work


# -- two plugins, one key ------------------------------------------------------------------------------------
def _keyed_check(claim_id, value):
    def check(ctx):
        shared = ctx.shared(("textbook-hoeffding", ctx.scale, ctx.seed), lambda: value)
        kept = ctx.checkpoint(("configurations", ctx.seed), lambda: {"value": value})
        seen = [shared, kept["value"]]  # holds exactly when both equal this claim's own value
        return rules.deterministic(seen + [-x for x in seen], [value] * 2 + [-value] * 2,
                                   rtol=0.0).as_verdict(claim_id, ctx)
    return check


def test_two_plugins_using_one_key_never_see_each_others_experiment(plugins, tmp_path):
    plugins(FakeEntryPoint("first-plugin", "first", [Claim("FIRST.X", "x", check=_keyed_check("FIRST.X", 1.0))]),
            FakeEntryPoint("second-plugin", "second", [Claim("SECOND.X", "x", check=_keyed_check("SECOND.X", 2.0))]))
    for workdir in (None, tmp_path):
        context = VerifyContext(scale="smoke", seed=0, workdir=workdir)
        first, second = verify_claims(["FIRST.X", "SECOND.X"], context)
        assert (first.verdict, second.verdict) == ("holds", "holds")  # each judged on its own value
    assert len(list((tmp_path / "partial").glob("*.npz"))) == 2
    # resumed: each reads its own file
    again = verify_claims(["SECOND.X", "FIRST.X"], VerifyContext(scale="smoke", seed=0, workdir=tmp_path))
    assert [v.verdict for v in again] == ["holds", "holds"]


def _table_check(claim_id, value):
    def check(ctx):
        ctx.save_table("runs", pd.DataFrame({"value": [value]}))
        return rules.deterministic([value], [value]).as_verdict(claim_id, ctx)
    return check


def test_two_plugins_saving_one_table_name_both_keep_their_table(plugins, tmp_path):
    """In one run, and across a resume (the first claim's file already on disk): the later
    claim's table is kept as runs@ITS-ID, the first one's is never replaced."""
    plugins(FakeEntryPoint("first-plugin", "first", [Claim("FIRST.T", "x", check=_table_check("FIRST.T", 1.0))]),
            FakeEntryPoint("second-plugin", "second", [Claim("SECOND.T", "x", check=_table_check("SECOND.T", 2.0))]))
    for split in (False, True):
        out = tmp_path / f"run-{split}"
        if split:
            assert main(["verify", "FIRST.T", "--scale", "smoke", "--out", str(out)]) == 0
            assert main(["verify", "FIRST.T", "SECOND.T", "--scale", "smoke", "--out", str(out), "--resume"]) == 0
        else:
            assert main(["verify", "FIRST.T", "SECOND.T", "--scale", "smoke", "--out", str(out)]) == 0
        first, second = (pd.read_parquet(out / "tables" / name) for name in ("runs.parquet", "runs@SECOND.T.parquet"))
        assert (first["claim"].tolist(), first["value"].tolist()) == (["FIRST.T"], [1.0])
        assert (second["claim"].tolist(), second["value"].tolist()) == (["SECOND.T"], [2.0])


# -- checkpoints are data ----------------------------------------------------------------------------------
class _Payload:
    def __reduce__(self):
        return (open, (str(PAYLOAD_MARK), "w"))


PAYLOAD_MARK = None


def test_a_crafted_checkpoint_is_refused_never_executed(plugins, tmp_path, monkeypatch):
    """A run directory sent by someone else holds a pickle where a checkpoint should be: resuming
    refuses it (that claim's error, naming the file), runs nothing from it, and the other claims
    are unchanged."""
    import pickle

    global PAYLOAD_MARK
    PAYLOAD_MARK = tmp_path / "executed"
    plugins(FakeEntryPoint("first-plugin", "first", [Claim("FIRST.X", "x", check=_keyed_check("FIRST.X", 1.0)),
                                                     GOOD]))
    run = tmp_path / "run"
    (made,) = verify_claims(["FIRST.X"], VerifyContext(scale="smoke", seed=0, workdir=run))
    assert made.verdict == "holds"
    (stored,) = (run / "partial").glob("*.npz")
    stored.write_bytes(pickle.dumps(_Payload()))
    first, good = verify_claims(["FIRST.X", "MINE.GOOD"], VerifyContext(scale="smoke", seed=0, workdir=run))
    assert not PAYLOAD_MARK.exists()
    assert first.verdict == "error" and "not a cflbounds checkpoint" in first.summary and stored.name in first.summary
    assert _without_time(good.to_dict()) == _alone("MINE.GOOD")


@pytest.mark.parametrize("tree", [
    {"dataclass": "subprocess:Popen", "fields": {"args": ["touch", "x"]}},
    {"dataclass": "os:system", "fields": {}},
    {"torch_dtype": "__import__"},
    {"numpy_dtype": "O"},
    {"array": 7},
])
def test_a_checkpoint_names_no_code_it_could_run(tree):
    import io

    buffer = io.BytesIO()
    np.savez(buffer, tree=np.frombuffer(json.dumps({"format": 1, "tree": tree}).encode(), dtype=np.uint8))
    with pytest.raises(CheckpointFormatError):
        decode(buffer.getvalue())


def test_an_object_array_in_a_checkpoint_is_refused_without_unpickling():
    import io

    buffer = io.BytesIO()
    np.savez(buffer, tree=np.frombuffer(json.dumps({"format": 1, "tree": {"array": 0}}).encode(), dtype=np.uint8),
             a0=np.array([_Payload()], dtype=object))
    with pytest.raises(CheckpointFormatError, match="dtype object, which is not data"):
        decode(buffer.getvalue())


@checkpoint_type
@dataclass
class _Registered:
    name: str
    values: np.ndarray

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**62, 2**62), st.floats(allow_nan=True),
                     st.text(max_size=8))
_arrays = st.builds(lambda values: np.asarray(values), st.lists(st.floats(allow_nan=True, width=64), max_size=6))
_values = st.recursive(st.one_of(_scalars, _arrays), lambda children: st.one_of(
    st.lists(children, max_size=4), st.tuples(children, children),
    st.dictionaries(st.one_of(st.text(max_size=5), st.integers(), st.floats(allow_nan=False)), children, max_size=4)),
    max_leaves=12)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(_values)
@examples(100)
def test_checkpoint_data_round_trips_exactly(value):
    assert _same(decode(encode(value)), value)


def test_frames_tensors_and_registered_dataclasses_round_trip():
    import torch

    frame = pd.DataFrame({"a": np.arange(3, dtype=np.uint64), "b": [0.1, np.nan, np.inf], "c": ["x", "y", "z"],
                          "d": [True, False, True]})
    value = {"frame": frame, "tensor": torch.arange(6, dtype=torch.float32).reshape(2, 3),
             "kind": torch.float64, "item": _Registered("r", np.ones(2))}
    back = decode(encode(value))
    pd.testing.assert_frame_equal(back["frame"], frame, check_exact=True)
    assert torch.equal(back["tensor"], value["tensor"]) and back["tensor"].dtype == torch.float32
    assert back["kind"] is torch.float64
    assert isinstance(back["item"], _Registered) and np.array_equal(back["item"].values, np.ones(2))


def test_what_is_not_data_is_refused_when_written():
    class NotRegistered:
        pass

    with pytest.raises(TypeError, match=r"value\['f'\] is a .*function, which is not data"):
        encode({"f": lambda: 0})
    with pytest.raises(TypeError, match="not data"):
        encode([NotRegistered()])
    with pytest.raises(TypeError, match="dtype object"):
        encode(np.array([object()]))


# -- malformed declarations, generated ------------------------------------------------------------------------
_bad_parameters = st.one_of(
    st.builds(lambda low, gap: Parameter("p", low + gap, low), st.floats(-1e6, 1e6), st.floats(1e-3, 1e6)),
    st.builds(lambda low: Parameter("p", low, low + 1, log=True), st.floats(-1e6, 0)),
    st.builds(lambda low: Parameter("p", low + 0.5, low + 3, integer=True), st.integers(-100, 100)),
    st.builds(lambda bad: Parameter("p", bad, 1.0), st.sampled_from([float("nan"), float("inf"), float("-inf")])),
    st.builds(lambda simple: Parameter("p", 0.0, 1.0, simple=simple), st.floats(1.001, 1e6)),
)
_bad_claims = st.one_of(
    st.builds(lambda parameter: Claim("BAD.DOMAIN", "x", check=_check_good,
                                      domain=Domain([parameter], lambda points, seeds, ctx: [])), _bad_parameters),
    st.builds(lambda rule: Claim("BAD.RULE", "x", check=_check_good,
                                 domain=Domain([Parameter("x", 0, 1)], lambda p, s, c: [], rule=rule)),
              st.text(max_size=6).filter(lambda r: r not in ("deterministic", "expectation", "probability"))),
    st.builds(lambda name: Claim(name, "x", check=_check_good),
              st.text(max_size=8).filter(lambda n: "." not in n or not n[:1].isupper())),
    st.builds(lambda statement: Claim("BAD.STATEMENT", statement, check=_check_good), st.sampled_from(["", "  "])),
    st.just(Claim("BAD.CHECK", "x", check=3)),
)


@given(_bad_claims)
@examples(60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_each_malformed_declaration_is_one_clear_problem_and_the_others_work(plugins, claim):
    plugins(FakeEntryPoint("bad-plugin", "bad", [claim]),
            FakeEntryPoint("my-plugin", "mine", [GOOD]))
    (problem,) = registry.plugin_problems()
    text = str(problem)
    assert "\n" not in text and text.startswith("plugin bad-plugin (entry point 'bad'): ")
    assert THIS_FILE.split("/")[-1] in text  # the declaration's file:line
    assert "MINE.GOOD" in registry.claims()
    (good,) = verify_claims(["MINE.GOOD"], VerifyContext(scale="smoke", seed=0))
    assert _without_time(good.to_dict()) == _alone("MINE.GOOD")
