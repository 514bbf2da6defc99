"""The API reference reads as a reference (issue "A theorem in twenty lines", section 3).

The site is built as CI builds it (``mkdocs build --strict``; ``$CFLBOUNDS_DOCS_SITE`` names a
site built already, as ``.ci/run`` does, to check that one instead) and read as HTML:

* no Sphinx role is left raw (``:class:`Claim``` printed as it is) on any page: the Griffe
  extension ``docs/_extensions/sphinx_roles.py`` turns each into a cross-reference;
* a role that does not link names an object that exists (the extension resolved it, and the
  reference just does not document it), so a misspelt role cannot hide as code;
* every object the reference pages document is under its public name (``cflbounds.claims.rules``,
  not the engine's ``cflbounds.verify.rules``), none twice, and its docstring says what it is
  (a first paragraph of its own, not only a pointer to another docstring).

Needs the ``docs`` extra (mkdocs); skipped without it (``.ci/run`` installs it and runs this file).
"""
from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
RAW_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj):(?:<code>|`)")
ROLE_SPAN = re.compile(r'<span class="sphinx-role">(?P<inner>.*?</(?:a|span)>)</span>', re.S)
DOCUMENTED = re.compile(r"^::: (?P<name>\S+)\n(?P<options>(?:    .*\n)*)", re.M)
# the engine's homes of what cflbounds.claims publishes: the reference documents the public name
ENGINE_HOMES = ("cflbounds.verify.rules", "cflbounds.verify.stats", "cflbounds.verify.orderings",
                "cflbounds.verify.claim", "cflbounds.verify.context", "cflbounds.verify.verdict",
                "cflbounds.verify.domain", "cflbounds.verify.checkpoints", "cflbounds._validation")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if os.environ.get("CFLBOUNDS_DOCS_SITE"):
        return Path(os.environ["CFLBOUNDS_DOCS_SITE"])
    pytest.importorskip("mkdocs", reason="the docs extra builds the site (pip install -e '.[docs]')")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)], cwd=ROOT,
                           capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr[-4000:]
    return out


def find(path: str):
    """The object at the dotted ``path`` (a module, then attributes)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(path)


def documented() -> dict[str, bool]:
    """Every object the reference pages document (``::: name``), and whether its members are shown."""
    return {match["name"]: "members: false" not in match["options"] for page in sorted(REFERENCE.glob("*.md"))
            for match in DOCUMENTED.finditer(page.read_text(encoding="utf-8"))}


def test_no_raw_sphinx_role_is_left_in_the_built_site(site):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10
    raw = {str(page.relative_to(site)): RAW_ROLE.findall(page.read_text(encoding="utf-8")) for page in pages}
    assert not {page: found for page, found in raw.items() if found}


def test_roles_link_and_those_that_do_not_name_real_objects(site):
    roles = [match["inner"] for page in sorted((site / "reference").rglob("*.html"))
             for match in ROLE_SPAN.finditer(page.read_text(encoding="utf-8"))]
    linked = [inner for inner in roles if inner.startswith("<a ")]
    unlinked = sorted({re.search(r'title="([^"]*)"', inner)[1] for inner in roles if not inner.startswith("<a ")})
    assert len(roles) > 60 and len(linked) > 0.75 * len(roles), (len(linked), len(roles), unlinked)
    for name in unlinked:
        find(name)  # raises if the role's name resolved to nothing


def test_the_reference_documents_public_names_each_once():
    shown = documented()
    names = list(shown)
    objects = [find(name) for name in names]
    assert not [name for name in names if name.startswith(ENGINE_HOMES)]
    assert len({id(obj) for obj in objects}) == len(objects), names
    modules = [find(name) for name in names if inspect.ismodule(find(name)) and shown[name]]
    members = [getattr(module, member) for module in modules for member in getattr(module, "__all__", [])]
    twice = [name for name, obj in zip(names, objects) if any(obj is member for member in members)]
    assert not twice  # documented alone and again as a member of a documented module


def test_every_documented_object_says_what_it_is():
    def first_paragraph(obj) -> str:
        text = inspect.getdoc(obj) or ""
        return re.sub(r"\((?:see the )?module docstring\)", "", text.split("\n\n")[0]).strip()

    thin = {}
    for name, with_members in documented().items():
        obj = find(name)
        shown = [obj]
        if inspect.ismodule(obj) and with_members:
            shown += [getattr(obj, member) for member in getattr(obj, "__all__", [])
                      if inspect.isclass(getattr(obj, member)) or inspect.isfunction(getattr(obj, member))]
        for item in shown:
            if len(first_paragraph(item)) < 40:
                thin[f"{name}: {getattr(item, '__name__', item)}"] = first_paragraph(item)
    assert not thin
