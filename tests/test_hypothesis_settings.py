"""The Hypothesis profile governs every property test (tests/conftest.py, docs/development.md).

A test states its example count with ``@examples(n)``; the loaded profile scales it and alone
decides derandomization. A bare ``settings(max_examples=60)`` or ``settings(derandomize=True)``
would override the profile (``HYPOTHESIS_PROFILE=explore`` would quietly run 60 fixed
examples), so the source is checked for them, and the settings each test really runs with
are checked against the profile.
"""
import ast
import importlib
from pathlib import Path

import pytest
from hypothesis import settings

from conftest import examples

TESTS = Path(__file__).parent
TEST_MODULES = sorted(TESTS.glob("test_*.py"))


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _constant(node: ast.AST) -> bool:
    """A value fixed in the source: built from literals only (``60``, ``2 * 30``)."""
    return not any(isinstance(child, (ast.Name, ast.Attribute, ast.Call)) for child in ast.walk(node))


def overriding_settings(source: str) -> list[str]:
    """Where ``source`` passes ``derandomize=`` or a constant ``max_examples=`` to ``settings``,
    or registers or loads a profile (conftest.py's job)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        if name in ("register_profile", "load_profile"):
            found.append(f"line {node.lineno}: {name}")
        if name != "settings":
            continue
        for keyword in node.keywords:
            if keyword.arg == "derandomize" or (keyword.arg == "max_examples" and _constant(keyword.value)):
                found.append(f"line {node.lineno}: settings({keyword.arg}=...)")
    return found


def _stated_counts(path: Path) -> dict[str, int | None]:
    """Test name -> the n of its ``@examples(n, ...)`` decorator (None without one), for the
    tests decorated with ``@given``."""
    counts = {}
    for node in ast.parse(path.read_text()).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        calls = [d for d in node.decorator_list if isinstance(d, ast.Call)]
        if any(_called_name(d) == "given" for d in calls):
            stated = [d.args[0].value for d in calls if _called_name(d) == "examples"]
            counts[node.name] = stated[0] if stated else None
    return counts


def test_no_test_module_overrides_the_profile():
    found = {path.name: overriding_settings(path.read_text()) for path in TEST_MODULES}
    assert not {name: lines for name, lines in found.items() if lines}, found


def test_the_source_check_catches_planted_overrides():
    planted = ("from hypothesis import settings\nimport hypothesis\n"
               "@settings(max_examples=60, deadline=None)\ndef a(): pass\n"
               "@hypothesis.settings(derandomize=True)\ndef b(): pass\n"
               "@settings(max_examples=2 * 30)\ndef c(): pass\n"
               "settings.load_profile('explore')\n")
    assert [line.split(":")[0] for line in overriding_settings(planted)] == ["line 3", "line 5", "line 7", "line 9"]
    allowed = "@examples(60)\ndef a(): pass\n@settings(max_examples=examples(60).max_examples)\ndef b(): pass\n"
    assert overriding_settings(allowed) == []


def test_every_property_test_runs_with_the_profiles_settings():
    """Effective settings of each @given test: the count scaled by the loaded profile, and the
    profile's derandomization (deterministic: fixed examples; explore: fresh ones)."""
    profile = settings.default
    checked = 0
    for path in TEST_MODULES:
        module = importlib.import_module(path.stem)
        for name, count in _stated_counts(path).items():
            used = getattr(module, name)._hypothesis_internal_use_settings
            expected = examples(count).max_examples if count else profile.max_examples
            assert (used.max_examples, used.derandomize) == (expected, profile.derandomize), f"{path.name}::{name}"
            checked += 1
    assert checked >= 27  # the property tests of the suite were found


def test_examples_scales_with_the_profile_and_leaves_it_the_rest():
    scale = settings.default.max_examples / 100
    assert examples(60).max_examples == round(60 * scale) and examples(60).derandomize == settings.default.derandomize
    with pytest.raises(ValueError, match="profile"):
        examples(60, derandomize=True)
    with pytest.raises(ValueError, match="count"):
        examples(0)
