"""Words of the text cflbounds prints: counts with their noun, a summary's first clause."""
from __future__ import annotations

__all__ = ["plural", "first_clause"]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 claim``, ``2 claims``, ``0 claims``; ``many`` where adding an ``s`` is wrong
    (``plural(n, "entry", "entries")``)."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def first_clause(summary: str) -> str:
    """A summary's first clause, up to its first ';' outside brackets: a verdict's line in a
    table of claims (the rest is the claim's own page's)."""
    text, depth = str(summary or ""), 0
    for index, character in enumerate(text):
        depth += (character in "([{") - (character in ")]}")
        if character == ";" and depth <= 0:
            return text[:index].strip()
    return text.strip()
