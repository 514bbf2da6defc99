"""The package's layers are a checked contract (``[tool.importlinter]`` in pyproject.toml).

* The contracts hold on the package as it is (``lint-imports``, import-linter's command, on a
  graph that includes imports inside functions).
* Each contract is broken by one planted import, in a copy of the package, and only that
  contract: a contract that cannot fail would check nothing.
* No engine module (``verify``, ``claims``, ``falsify``, the pytest plugin) names a paper in its
  code: the papers arrive through the entry point, and the engine has no special case for one.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = {c["id"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}

# One import per contract that breaks it and no other: (module it is planted in, the line).
PLANTED = {
    "engine-layers": ("verify/run.py", "from ..reports import content"),  # the engine reaching up to reports
    "plugin-api": ("verify/record.py", "from .. import claims"),  # the engine through the public API
    "papers-see-the-public-api": ("papers/ifca/theory.py", "from cflbounds.verify import stats"),  # an internal
    "engine-never-imports-a-paper": ("falsify/search.py", "from .. import papers"),  # a special case
    "bounds-import-only-validation": ("bounds/ifca.py", "from ..synthetic import seeding"),
    "algorithms-know-no-bound-or-verdict": ("algorithms/trace.py", "from ..bounds import ifca"),
}


def _lint(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package under ``root`` with ``root``'s pyproject.toml."""
    command = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
               "sys.exit(lint_imports_command())", "--no-cache"]
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)


def _broken(output: str) -> set[str]:
    """The ids of the contracts the output reports broken."""
    return {key for key, contract in CONTRACTS.items() if re.search(re.escape(contract["name"]) + r"\s+BROKEN", output)}


def test_every_contract_has_a_planted_violation():
    assert set(PLANTED) == set(CONTRACTS)


def test_the_import_contracts_hold():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(CONTRACTS)} kept, 0 broken" in result.stdout


@pytest.mark.parametrize("contract", sorted(PLANTED))
def test_a_planted_import_breaks_its_contract(contract, tmp_path):
    shutil.copytree(ROOT / "cflbounds", tmp_path / "cflbounds", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    module, line = PLANTED[contract]
    with open(tmp_path / "cflbounds" / module, "a") as file:
        file.write(f"\n{line}  # planted\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert _broken(result.stdout) == {contract}, result.stdout


# A paper named in code: a claim-ID prefix as a word, or a paper's package name anywhere.
PAPER_NAME = re.compile(r"\b(IFCA|MGD|CFL-MGD|FC|FedCluster|LCFL|DSC|CFL)\b|ifca|cfl_mgd|fedcluster|lcfl|\bdsc\b"
                        r"|fedavg|localgd|scaffold|fedprox", re.IGNORECASE)
ENGINE = ["verify", "claims", "falsify", "pytest_plugin.py"]


def _named_in_code(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each string constant (docstrings excepted: examples are documentation),
    name, attribute, definition and import in ``source`` that names a paper."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and ast.get_docstring(node, clean=False) is not None}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            text = node.name
        else:
            text = {ast.Name: "id", ast.Attribute: "attr", ast.alias: "name", ast.ImportFrom: "module"}.get(type(node))
            text = getattr(node, text, None) if text else None
        if text and PAPER_NAME.search(text):
            found.append((getattr(node, "lineno", 0), text))
    return found


def test_no_engine_module_names_a_paper():
    files = [path for part in ENGINE for path in ([ROOT / "cflbounds" / part] if part.endswith(".py")
                                                   else sorted((ROOT / "cflbounds" / part).rglob("*.py")))]
    assert len(files) > 20
    named = {str(path.relative_to(ROOT)): hits for path in files if (hits := _named_in_code(path.read_text()))}
    assert named == {}


@pytest.mark.parametrize("planted", ["table = 'ifca_fig2_runs'", "if claim.id == 'MGD.L2':\n    pass",
                                     "from cflbounds.papers import dsc", "def lcfl_page():\n    pass"])
def test_a_paper_named_in_code_is_found(planted):
    assert _named_in_code('"""Docstrings may say IFCA.T1."""\n' + planted)
    assert not _named_in_code('"""Docstrings may say IFCA.T1."""\n# and comments MGD.L2\nx = "PAPER.NAME"')
