"""Fuzzing what a run reads back (issue 41): files generated from their JSON Schemas
(cflbounds/_schemas.py, through tests/schema_strategies.py), as they are or with one thing
wrong (a wrong type, a huge number, a long string, a missing field, 5000 digits, 100,000 levels
of nesting, NaN, broken bytes), fed to ``cflbounds report DIR``, ``verify --resume``,
``falsify --resume`` and ``falsify --replay``. Each ends with exit 0 (a valid file; a replay
that does not reproduce the recorded ratio exits 1) or exit 2 with one line on stderr naming
the file (and the field, once the file parses): never a traceback.

A generated file's metadata is, half the time, the one the command was given, so that a
resume gets past the settings check and does its (small) work with the file's verdicts or
results kept, and writes a report of them."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from cflbounds import __version__
from cflbounds._schemas import COUNTEREXAMPLE_FILE, FALSIFY_FILE, VERDICTS_FILE
from cflbounds.claims import Claim, rules
from cflbounds.cli import main
from conftest import FakeEntryPoint, examples
from schema_strategies import from_schema, mutated
from test_falsify import toys  # noqa: F401 (a fixture: the toy claims with domains)

SLOW = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
VERIFY_SETTINGS = {"cflbounds": __version__, "scale": "smoke", "seed": 0, "device": "cpu",
                   "search": {"evaluations": None, "seconds": None, "confidence": 0.95}}
FALSIFY_SETTINGS = {"cflbounds": __version__, "seed": 0, "budget_seconds": None, "max_evaluations": 5,
                    "confidence": 0.95, "device": "cpu"}


def file_contents(schema: dict, settings: dict | None = None, place=None) -> st.SearchStrategy:
    """The bytes of a file ``schema`` allows, or of one with one thing wrong; with ``settings``,
    half the files carry them as their metadata (and ``place`` puts them there)."""
    documents = from_schema(schema)
    if settings is not None:
        documents = st.tuples(documents, st.booleans()).map(
            lambda pair: place(pair[0], settings) if pair[1] and isinstance(pair[0], dict) else pair[0])
    return st.one_of(documents.map(lambda document: json.dumps(document).encode()), documents.flatmap(mutated))


def with_metadata(document: dict, settings: dict) -> dict:
    return {**document, "metadata": {**(document.get("metadata") or {}), **settings}}


def outcome(capsys, argv, path: Path, allowed=(0, 2)) -> int:
    """Run ``cflbounds argv``: an allowed exit, and exit 2 only with one line naming ``path``."""
    code = main([str(word) for word in argv])
    err = capsys.readouterr().err
    assert code in allowed, (code, err[-3000:])
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err and str(path) in lines[0], err[-3000:]
        assert len(lines[0]) < 600  # a value is named, never printed whole
    return code


def fresh(tmp_path: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=tmp_path))


@pytest.mark.parametrize("name, schema", [("verdicts.json", VERDICTS_FILE), ("falsify.json", FALSIFY_FILE)])
@given(data=st.data())
@examples(12, suppress_health_check=SLOW)
def test_report_of_a_fuzzed_run_file(capsys, tmp_path, name, schema, data):
    directory = fresh(tmp_path)
    (directory / name).write_bytes(data.draw(file_contents(schema), label=name))
    if outcome(capsys, ["report", directory], directory / name) == 0:
        assert (directory / "report.pdf").stat().st_size > 0 and (directory / "report.html").stat().st_size > 0


def _quick(ctx):
    return rules.deterministic([0.5], [1.0]).as_verdict("FUZZ.QUICK", ctx)


@given(content=file_contents(VERDICTS_FILE, VERIFY_SETTINGS, with_metadata))
@examples(12, suppress_health_check=SLOW)
def test_verify_resume_of_a_fuzzed_verdicts_json(plugins, capsys, tmp_path, content):
    plugins(FakeEntryPoint("fuzz", "fuzz", [Claim("FUZZ.QUICK", "0.5 <= 1", check=_quick)]))
    directory = fresh(tmp_path)
    (directory / "verdicts.json").write_bytes(content)
    argv = ["verify", "FUZZ.QUICK", "--scale", "smoke", "--device", "cpu", "--out", directory, "--resume"]
    outcome(capsys, argv, directory / "verdicts.json")


@given(content=file_contents(FALSIFY_FILE, FALSIFY_SETTINGS, with_metadata))
@examples(12, suppress_health_check=SLOW)
def test_falsify_resume_of_a_fuzzed_falsify_json(toys, capsys, tmp_path, content):  # noqa: F811
    directory = fresh(tmp_path)
    (directory / "falsify.json").write_bytes(content)
    argv = ["falsify", "TOY.LINE", "--evaluations", "5", "--out", directory, "--resume"]
    outcome(capsys, argv, directory / "falsify.json")


def _a_toy_point(document: dict, _) -> dict:
    return {**document, "id": "TOY.LINE", "parameters": {"x": 0.5, "n": 3}}


@given(content=file_contents(COUNTEREXAMPLE_FILE, {}, _a_toy_point))
@examples(12, suppress_health_check=SLOW)
def test_falsify_replay_of_a_fuzzed_counterexample(toys, capsys, tmp_path, content):  # noqa: F811
    path = fresh(tmp_path) / "counterexample.json"
    path.write_bytes(content)
    code = outcome(capsys, ["falsify", "--replay", path], path, allowed=(0, 1, 2))
    assert code != 1 or json.loads(content)["id"] == "TOY.LINE"  # 1: a replay whose ratio did not reproduce
