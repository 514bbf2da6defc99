"""What ``--cflbounds`` adds to pytest's collection (cflbounds/pytest_plugin.py's docstring):
with no file or directory named, the claims alone (no test file, no conftest.py, wherever it
runs, cflbounds' checkout included); with paths named, the claims beside those paths' tests."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FAILING_TEST = "def test_fails_by_design():\n    assert False, 'a regression test that fails while a claim is violated'\n"
HIDING_CONFTEST = "raise RuntimeError('this conftest.py must not be imported in a claims-alone session')\n"


@pytest.fixture
def folder_with_tests(pytester):
    """A plugin's folder: a failing test at the top and in tests/, and conftest.py files that
    fail when imported (as one that hid plugins would change what the claims see)."""
    pytester.makepyfile(test_regression=FAILING_TEST)
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_more.py").write_text(FAILING_TEST)
    (pytester.path / "tests" / "conftest.py").write_text(HIDING_CONFTEST)
    (pytester.path / "conftest.py").write_text(HIDING_CONFTEST)
    return pytester


def test_without_paths_only_the_claims_are_collected(folder_with_tests):
    result = folder_with_tests.runpytest("--cflbounds", "LCFL.E8", "--cflbounds-scale", "smoke", "-p",
                                         "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["collected 1 item*"])


def test_without_paths_testpaths_are_not_searched(folder_with_tests):
    (folder_with_tests.path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    result = folder_with_tests.runpytest("--cflbounds", "LCFL.E*", "--co", "-q", "-p", "no:cacheprovider")
    assert result.ret == 0
    listed = [line for line in result.stdout.lines if "::" in line]
    assert listed and all("LCFL.E" in line for line in listed), result.stdout.str()


def test_with_a_path_its_tests_are_collected_beside_the_claims(folder_with_tests):
    (folder_with_tests.path / "conftest.py").unlink()
    result = folder_with_tests.runpytest("test_regression.py", "--cflbounds", "LCFL.E8", "--cflbounds-scale",
                                         "smoke", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_fails_by_design*"])


def test_from_cflbounds_checkout_the_claims_are_collected_without_its_suite():
    """From the repository's root (testpaths = tests, whose conftest.py hides installed plugins
    from the suite), a claims-alone session lists the claims and nothing of tests/."""
    listed = subprocess.run([sys.executable, "-m", "pytest", "--cflbounds", "LCFL.E8", "--co", "-q", "-p",
                             "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    items = [line for line in listed.stdout.splitlines() if "::" in line]
    assert items == ["::LCFL.E8"], listed.stdout[-2000:]
