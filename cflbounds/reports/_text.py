"""Text measured in the font matplotlib draws it with, and wrapped to a width in inches.

The PDF pages (paragraphs, table cells) and the figures (titles, category labels, legend
entries) wrap the same way, at spaces; a word longer than a line is cut. Figure texts
also keep a bracketed group that fits on a line whole, so a title never breaks inside
"(TME)^-1/2" or "(eta l/L)".
"""
from __future__ import annotations

from functools import lru_cache

from matplotlib.font_manager import FontProperties
from matplotlib.mathtext import MathTextParser
from matplotlib.textpath import TextToPath

__all__ = ["text_width", "wrap", "wrap_code", "one_line", "safe_label"]

_MEASURE = TextToPath()
_NARROWEST = 0.2  # em: narrower than any printing glyph of the report's fonts (a dot, an "i": about 0.25)
_MATH = MathTextParser("path")


@lru_cache(maxsize=1 << 16)
def text_width(line: str, fontsize: float, weight: str = "normal", family: str = "sans-serif") -> float:
    """Width in inches of ``line`` as matplotlib lays it out (the PDF's font metrics)."""
    font = FontProperties(size=fontsize, weight=weight, family=family)
    return _MEASURE.get_text_width_height_descent(line, font, ismath=False)[0] / 72


def wrap_code(text, width: float, fontsize: float) -> list[str]:
    """Monospace ``text`` (a traceback, a command) as lines that fit ``width`` inches: each line
    kept as it is, indentation included, a longer one broken between characters and continued
    two spaces further in (every character is as wide as the next, so this is exact)."""
    columns = max(8, int(width / text_width("M" * 10, fontsize, family="monospace") * 10))
    lines = []
    for line in str(text).expandtabs(4).splitlines() or [""]:
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        while len(line) > columns:
            lines.append(line[:columns])
            line = indent + line[columns:] if len(indent) < columns // 2 else line[columns:]
        lines.append(line)
    return lines


def _groups(paragraph: str, keep_groups: bool) -> list[list[str]]:
    """The words of ``paragraph``, each its own group, or with ``keep_groups`` those inside
    one pair of brackets joined into a group."""
    if not keep_groups:
        return [[word] for word in paragraph.split()]
    groups, depth = [], 0
    for word in paragraph.split():
        if depth > 0:
            groups[-1].append(word)
        else:
            groups.append([word])
        depth = max(0, depth + sum(word.count(c) for c in "([{") - sum(word.count(c) for c in ")]}"))
    return groups


def _cut(word: str, width: float, fontsize: float, weight: str) -> list[str]:
    """``word`` cut into pieces that each fit ``width`` (at least one character each), after
    an underscore where one falls in a piece's second half (identifiers break between their
    words: ``dsc_minus_fedavg_`` / ``noisy_low``). Each piece is the longest prefix that fits,
    found by bisection among at most as many characters as a line of the narrowest glyphs
    holds (a prefix is never narrower than a shorter one), so a word of 100,000 characters
    takes a few calls a line."""
    most = int(width * 72 / (_NARROWEST * fontsize)) + 1
    pieces = []
    while word:
        low, high = 1, min(len(word), most)  # the piece: the longest prefix of at most `high` characters that fits
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if text_width(word[:middle], fontsize, weight) <= width else (low, middle - 1)
        size = low
        if size < len(word) and word.rfind("_", 0, size) >= size // 2:
            size = word.rfind("_", 0, size) + 1
        pieces.append(word[:size])
        word = word[size:]
    return pieces


def wrap(text, width: float, fontsize: float, weight: str = "normal", keep_groups: bool = False) -> list[str]:
    """``text`` as lines that fit ``width`` inches at ``fontsize`` points; newlines are kept.

    Greedy, word by word (a word longer than a line is cut between its characters). With
    ``keep_groups`` a bracketed group goes whole onto the current line, else whole onto
    the next one; only a group longer than a line is broken between its words.
    """
    fits = lambda line: text_width(line, fontsize, weight) <= width
    lines = []
    for paragraph in str(text).splitlines() or [""]:
        current = ""
        for group in _groups(paragraph, keep_groups):
            joined = " ".join(group)
            if fits(f"{current} {joined}".strip()):
                current = f"{current} {joined}".strip()
                continue
            if current and fits(joined):
                lines.append(current)
                current = joined
                continue
            for word in group:  # longer than a line: break it between words
                candidate = f"{current} {word}".strip()
                if fits(candidate):
                    current = candidate
                    continue
                if current:
                    lines.append(current)
                *full, current = _cut(word, width, fontsize, weight)
                lines += full
        lines.append(current)
    return lines


def one_line(text, width: float, fontsize: float) -> str:
    """The first line of ``text`` wrapped to ``width`` inches, with an ellipsis if cut."""
    lines = wrap(text, width - text_width(" …", fontsize), fontsize)
    return lines[0] + (" …" if len(lines) > 1 else "")


def safe_label(text) -> str:
    """``text`` as a matplotlib label: mathtext when it parses, else with literal ``$``."""
    text = "" if text is None else str(text)
    if "$" in text:
        try:
            _MATH.parse(text)
        except ValueError:
            return text.replace("$", r"\$")
    return text
