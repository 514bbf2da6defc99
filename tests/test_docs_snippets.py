"""Every Python snippet of docs/own-theorem.md (and of README.md, if it has any) runs as shown.

The tutorial's snippets build one plugin step by step (the bound, then the experiment, the
check, the declaration, the domain), so a page's blocks run **in order, in one namespace**, the
way a reader pastes them into one Python session; each block names its own imports. They run in
a temporary directory (a snippet that writes a file leaves nothing in the repository) and are
deterministic (every draw is seeded; the checks run at the smoke scale).

A block preceded by ``<!-- not-run: reason -->`` is deliberately not runnable on its own (e.g. an
overview that names functions written further down): it is only compiled, and must say why.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / "own-theorem.md", ROOT / "README.md"]
BLOCK = re.compile(r"(?:<!-- not-run: (?P<reason>[^\n]*?) -->\n)?```python\n(?P<code>.*?)^```", re.S | re.M)


def snippets(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, reason not run or None)`` for every ```python block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, match.start("code")) + 1, match["code"], match["reason"])
            for match in BLOCK.finditer(text)]


def test_the_tutorial_has_snippets_and_few_are_not_run():
    blocks = snippets(ROOT / "docs" / "own-theorem.md")
    assert len(blocks) >= 6
    not_run = [reason for _, _, reason in blocks if reason is not None]
    assert len(not_run) <= 2 and all(reason.strip() for reason in not_run)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_python_snippet_runs_in_order(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"snippets_of_{page.stem.replace('-', '_')}"}
    for line, code, reason in snippets(page):
        compiled = compile(code, f"{page.relative_to(ROOT)}:{line}", "exec")  # a syntax error fails every block
        if reason is None:
            exec(compiled, namespace)  # noqa: S102 - the documentation's own code
