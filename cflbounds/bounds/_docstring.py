"""A theorem-as-code's docstring read for people: its statement and what each parameter means.

The docstrings follow numpydoc: the claim, then its formula (one paragraph each), then any
notes, then a ``Parameters`` section where each parameter is a ``name : type`` line (or
``name1, name2 : type``) followed by its indented description. ``cflbounds bound ID --help``
and :class:`~cflbounds.bounds.BoundResult` read them from here, for any function written
this way (the papers' and a plug-in's alike).
"""
from __future__ import annotations

import inspect
import re

__all__ = ["statement", "parameter_descriptions", "appended", "parameters"]

_UNDERLINE = re.compile(r"^-{3,}$")


def _sections(doc: str | None) -> tuple[list[str], dict[str, list[str]]]:
    """The lines before the first section header, and each section's lines by title."""
    lines = inspect.cleandoc(doc or "").splitlines()
    headers = [i for i in range(len(lines) - 1) if lines[i].strip() and _UNDERLINE.match(lines[i + 1].strip())]
    ends = headers[1:] + [len(lines)]
    sections = {lines[start].strip(): lines[start + 2:end] for start, end in zip(headers, ends)}
    return lines[:headers[0]] if headers else lines, sections


def statement(doc: str | None) -> str:
    """The claim and its formula (the first two paragraphs before any section), as one line
    without reST's double backquotes."""
    body = "\n".join(_sections(doc)[0])
    claim_and_formula = "\n\n".join(body.split("\n\n")[:2])
    return " ".join(claim_and_formula.replace("``", "").split())


def parameter_descriptions(function) -> dict[str, str]:
    """``{name: description}`` from the ``Parameters`` section of ``function``'s docstring
    (each description as one line; a parameter the section does not list is absent). Names
    that share one entry (``c1, c2 : float``) share its text, each followed by which of them it
    is, so that no two options read the same."""
    described: dict[str, str] = {}
    names: list[str] = []
    groups: list[list[str]] = []
    for line in _sections(inspect.getdoc(function))[1].get("Parameters", []):
        if line and not line[0].isspace():  # "name : type" or "a, b : type"
            names = [name.strip() for name in line.split(" : ")[0].split(",")]
            groups.append(names)
            described.update(dict.fromkeys(names, ""))
        elif line.strip():
            for name in names:
                described[name] = f"{described[name]} {line.strip()}".strip()
    shared = {name: group for group in groups if len(group) > 1 for name in group}
    return {name: text.replace("``", "") + (f" (this one: {name}, of {', '.join(shared[name])})" if name in shared
                                            else "") for name, text in described.items()}


def appended(text: str):
    """Decorator: ``text`` added at the end of the function's docstring, for a ``Parameters``
    section (or its shared entries) that several formulas of one paper have in common.
    ``text``'s lines are indented like the docstring's (four spaces)."""
    def decorate(function):
        function.__doc__ = (function.__doc__ or "").rstrip() + "\n\n" + text.lstrip("\n") + "\n"
        return function

    return decorate


def parameters(entries: dict[str, tuple[str, str]], *names: str) -> str:
    """A numpydoc ``Parameters`` section (indented for :func:`appended`) listing ``names`` from
    ``entries`` (name: (type, description)), for the constants a paper's formulas share."""
    lines = ["    Parameters", "    ----------"]
    for name in names:
        kind, text = entries[name]
        lines += [f"    {name} : {kind}", f"        {text}"]
    return "\n".join(lines)
