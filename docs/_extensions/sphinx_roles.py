"""A Griffe extension: cflbounds' docstrings, written for Sphinx and ``help()``, as the API reference shows them.

cflbounds' docstrings name other objects the way Sphinx does (``:class:`Claim```,
``:func:`~cflbounds.falsify.run.falsify_claim```, ``:mod:`rules <cflbounds.verify.rules>```),
which reads well in ``help()`` and in an editor. mkdocstrings does not know those roles and
would print them as they are. When the site is built (``mkdocs.yml`` loads this file), each role
becomes a mkdocs-autorefs cross-reference: its name is resolved where the docstring is (the
object's own members, then its module's names and imports, as Python would; a leading dot is
relative to the module's package; a full path is taken as it is) and the link goes to the page
that documents the object, under whichever of its names the reference shows it (the public
``cflbounds.claims.Claim`` for ``cflbounds.verify.claim.Claim``). The title is the name as
written (``~`` keeps its last part, ``title <target>`` its title), in code font, as Sphinx
renders it.

A name the reference does not document (an engine internal such as ``cflbounds.verify.registry``)
renders as code without a link; each role sits in ``<span class="sphinx-role">`` so that
``tests/test_docs_reference.py`` can tell a role that links from one that does not, and fails on
a raw role left in the built HTML.

A doctest (lines from ``>>>`` to the next blank line, which reST shows as code) becomes a fenced
``pycon`` block, without its ``# doctest:`` directives; Markdown would read ``>>>`` as quotes.
"""
from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj):"
                  r"`(?P<tilde>~)?(?P<text>[^`<]+?)(?:\s*<(?P<target>[^`>]+)>)?`")


def target(obj: griffe.Object, name: str) -> str:
    """The full path ``name`` stands for in ``obj``'s docstring (unchanged when it resolves to nothing)."""
    if name.startswith("."):
        module = obj.module
        package = module if module.is_package else module.parent
        return f"{package.path}{name}"
    first, _, rest = name.partition(".")
    for scope in (obj, obj.module):
        try:
            resolved = scope.resolve(first)
        except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError):
            continue
        return f"{resolved}.{rest}" if rest else resolved
    return name


DOCTEST = re.compile(r"^(?P<indent>[ \t]*)>>> .*?(?=\n[ \t]*\n|\Z)", re.M | re.S)
DIRECTIVE = re.compile(r"[ \t]*# doctest:[^\n]*")


def fenced(match: re.Match) -> str:
    """A doctest as a fenced ``pycon`` block at its own indentation."""
    indent = match["indent"]
    return f"{indent}```pycon\n{DIRECTIVE.sub('', match[0])}\n{indent}```"


def rewritten(obj: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role replaced by an (optional) autorefs cross-reference, and
    every doctest fenced."""
    def reference(match: re.Match) -> str:
        written = match["text"].strip()
        title = written if match["target"] else (written.rsplit(".", 1)[-1] if match["tilde"] else written)
        identifier = target(obj, (match["target"] or written).strip().lstrip("~"))
        return (f'<span class="sphinx-role"><autoref identifier="{html.escape(identifier)}" optional>'
                f"<code>{html.escape(title.lstrip('.'))}</code></autoref></span>")

    return DOCTEST.sub(fenced, ROLE.sub(reference, text))


class SphinxRoles(griffe.Extension):
    """Rewrites the roles of every loaded object's docstring (module docstring)."""

    def _rewrite(self, obj: griffe.Object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewritten(obj, obj.docstring.value)

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        self._rewrite(obj)

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        self._rewrite(pkg)
