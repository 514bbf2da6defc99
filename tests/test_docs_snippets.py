"""docs/own-theorem.md works as written: every shell and Python block of the page, in order, in
one new directory, as a reader runs it (issue "A theorem in twenty lines", section 2).

How the page is run:

* **shell blocks** (```bash) each in ``bash -e -o pipefail``, in a fresh temporary directory (the
  reader's own, with nothing of the checkout in it), with ``CFLBOUNDS`` set to the checkout (the
  page asks the reader to set it) and this interpreter's ``bin`` first on ``PATH``, so
  ``cflbounds``, ``pytest`` and ``python`` are the ones under test. A block must exit 0, or the
  status a ``<!-- exit: N -->`` line before it states (a planted claim's pytest fails by design).
* **``pip install -e DIR``** is not pip here: a real install into a venv of the test's own takes
  minutes and the network, and installing into the running environment would change it for
  every other test. A ``pip`` function stands in for it and does what an editable install of a
  pure-Python setuptools project does, into a ``site`` directory of the test's own that is on
  ``PYTHONPATH``: it reads DIR's ``pyproject.toml`` and writes ``<name>-<version>.dist-info``
  (``METADATA`` and ``entry_points.txt``, so ``importlib.metadata`` finds the entry points, in
  this process's children and in the worker processes ``verify`` starts alike) and a link to
  each package listed in ``[tool.setuptools] packages``. A path without a ``pyproject.toml``, or
  any other pip command, fails the block. Dependencies are not installed: cflbounds, torch and
  numpy are those of the environment under test. A copy of the example installed in this
  environment already (a developer's, or CI's after this file runs) is shadowed: ``PYTHONPATH``
  comes first, and ``importlib.metadata`` keeps the first distribution of a name.
* **Python blocks** (```python) in one Python process, one namespace, in order (a reader's
  session), started in the same directory and environment; a block that raises fails the test
  with its traceback and its line in the page. A block after ``<!-- save-as: PATH -->`` is a
  file the page asks the reader to save: it is written there and not run in the session.
* A block after ``<!-- not-run: reason -->`` is only checked (``compile``, ``bash -n``); it must
  say why, and there may be at most one.
* A block after ``<!-- from: PATH -->`` must appear, character for character, in that file of the
  checkout: the page shows the example's own code.

Other fences (```toml, ```text) are shown text. Every page of docs/ is checked for Python
blocks that do not compile. The whole page takes a few minutes (``verify``, ``falsify`` and the
package's own tests at the smoke scale, reports included), so the test is ``slow``; ``.ci/run``
runs it.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "own-theorem.md"
FENCE = re.compile(r"(?P<markers>(?:^<!-- [a-z-]+: [^\n]*? -->\n)*)^```(?P<lang>\w*)\n(?P<code>.*?)^```[ \t]*$",
                   re.S | re.M)
MARKER = re.compile(r"<!-- (?P<name>[a-z-]+): (?P<value>[^\n]*?) -->")
KNOWN_MARKERS = {"exit", "not-run", "save-as", "from"}
BLOCK_TIMEOUT = 1800  # seconds: a shell block at the smoke scale takes under a minute on 2 loaded cores

PIP = '''"""`pip install -e DIR` for tests/test_docs_snippets.py (its docstring says what and why)."""
import os, pathlib, sys
try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

arguments = sys.argv[1:]
if len(arguments) != 3 or arguments[:2] != ["install", "-e"]:
    sys.exit(f"pip (the docs test's stand-in) runs only `pip install -e DIR`; got `pip {' '.join(arguments)}`")
project = pathlib.Path(arguments[2]).resolve()
if not (project / "pyproject.toml").is_file():
    sys.exit(f"ERROR: {arguments[2]} is not a project folder: it has no pyproject.toml")
meta = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
name, version = meta["project"]["name"], meta["project"]["version"]
site = pathlib.Path(os.environ["DOCS_TEST_SITE"])
info = site / f"{name.replace('-', '_')}-{version}.dist-info"
info.mkdir(exist_ok=True)
(info / "METADATA").write_text(f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n", encoding="utf-8")
groups = meta["project"].get("entry-points", {})
(info / "entry_points.txt").write_text("".join(
    f"[{group}]\\n" + "".join(f"{key} = {value}\\n" for key, value in points.items()) + "\\n"
    for group, points in groups.items()), encoding="utf-8")
for package in meta["tool"]["setuptools"]["packages"]:
    link = site / package
    if link.is_symlink():
        link.unlink()
    link.symlink_to(project / package, target_is_directory=True)
print(f"Successfully installed {name}-{version} (editable; the docs test's stand-in for pip)")
'''

SESSION = '''"""One Python session for the page's blocks: a block per line of JSON on stdin, run in one
namespace; the answer, a line of JSON, on the real stdout (what a block prints goes to stderr)."""
import json, sys, traceback

namespace = {"__name__": "__main__"}
answers, sys.stdout = sys.stdout, sys.stderr
for line in sys.stdin:
    block = json.loads(line)
    try:
        exec(compile(block["code"], block["where"], "exec"), namespace)
        answer = {"ok": True}
    except BaseException:  # the reader would see it: so does the test
        answer = {"ok": False, "traceback": traceback.format_exc()}
    answers.write(json.dumps(answer) + "\\n")
    answers.flush()
'''


@dataclass
class Block:
    lang: str
    code: str
    line: int  # of the block's first line of code, in the page
    markers: dict

    @property
    def where(self) -> str:
        return f"{PAGE.relative_to(ROOT)}:{self.line}"


def blocks(page: Path = PAGE) -> list[Block]:
    """Every fenced block of ``page``, in order, with the markers on the lines just before it."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        markers = {m["name"]: m["value"] for m in MARKER.finditer(match["markers"])}
        found.append(Block(match["lang"], match["code"], text.count("\n", 0, match.start("code")) + 1, markers))
    return found


def test_the_page_is_mostly_runnable_and_marks_what_is_not():
    found = blocks()
    runnable = [b for b in found if b.lang in ("bash", "python")]
    assert sum(b.lang == "bash" for b in runnable) >= 8 and sum(b.lang == "python" for b in runnable) >= 8
    assert all(set(b.markers) <= KNOWN_MARKERS for b in found), [b.markers for b in found]
    not_run = [b for b in found if "not-run" in b.markers]
    assert len(not_run) <= 1 and all(b.markers["not-run"].strip() for b in not_run)
    assert all(b.lang in ("bash", "python", "toml", "text") for b in found), {b.lang for b in found}


def test_the_short_form_blocks_are_the_examples_own_code():
    shown = [b for b in blocks() if "from" in b.markers]
    assert len(shown) >= 4  # each short-form claim and its planted twin
    for block in shown:
        assert block.code in (ROOT / block.markers["from"]).read_text(encoding="utf-8"), block.where


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"], ids=lambda p: p.name)
def test_every_python_block_of_the_docs_compiles(page):
    for block in blocks(page):
        if block.lang == "python":
            compile(block.code, f"{page.name}:{block.line}", "exec")


class Session:
    """The page's Python session: one interpreter, one namespace (module ``SESSION``)."""

    def __init__(self, cwd: Path, env: dict, script: Path, log: Path):
        self.log = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen([sys.executable, str(script)], cwd=cwd, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)

    def run(self, block: Block) -> dict:
        self.process.stdin.write(json.dumps({"code": block.code, "where": block.where}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        return json.loads(answer) if answer else {"ok": False, "traceback": "the Python session ended"}

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.log.close()


def environment(site: Path) -> dict:
    """The reader's environment: this interpreter's tools, ``CFLBOUNDS`` and the stand-in site."""
    env = dict(os.environ)
    env.update(CFLBOUNDS=str(ROOT), DOCS_TEST_SITE=str(site), PYTHONPATH=str(site),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    return env


def run_shell(block: Block, cwd: Path, env: dict, harness: Path) -> subprocess.CompletedProcess:
    """``block`` in ``bash -e -o pipefail``, with ``pip`` the stand-in (module docstring)."""
    prelude = f'pip() {{ "{sys.executable}" "{harness / "pip.py"}" "$@"; }}\n'
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", prelude + block.code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=BLOCK_TIMEOUT)


@pytest.mark.slow
def test_every_block_of_the_tutorial_runs_in_order_in_a_new_directory(tmp_path):
    reader, site, harness = tmp_path / "reader", tmp_path / "site", tmp_path / "harness"
    for folder in (reader, site, harness):
        folder.mkdir()
    (harness / "pip.py").write_text(PIP, encoding="utf-8")
    (harness / "session.py").write_text(SESSION, encoding="utf-8")
    env = environment(site)
    session = None
    try:
        for block in blocks():
            if "not-run" in block.markers:
                if block.lang == "python":
                    compile(block.code, block.where, "exec")
                elif block.lang == "bash":
                    assert subprocess.run(["bash", "-n", "-c", block.code]).returncode == 0, block.where
                continue
            if block.lang == "bash":
                done = run_shell(block, reader, env, harness)
                expected = int(block.markers.get("exit", 0))
                assert done.returncode == expected, (
                    f"{block.where}: exit {done.returncode}, the page says {expected}\n{block.code}\n"
                    f"--- stdout (end) ---\n{done.stdout[-6000:]}\n--- stderr (end) ---\n{done.stderr[-6000:]}")
            elif block.lang == "python" and "save-as" in block.markers:
                path = reader / block.markers["save-as"]
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.code, encoding="utf-8")
            elif block.lang == "python":
                session = session or Session(reader, env, harness / "session.py", tmp_path / "session.log")
                answer = session.run(block)
                log = (tmp_path / "session.log").read_text(encoding="utf-8")[-4000:]
                assert answer["ok"], f"{block.where} raised:\n{answer['traceback']}\n--- session stderr ---\n{log}"
    finally:
        if session is not None:
            session.close()
