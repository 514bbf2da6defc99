"""Hypothesis strategies generated from the run files' JSON Schemas (cflbounds/_schemas.py), and
mutations of what they generate: what the fuzz tests (tests/test_schema_fuzz.py) and the
crafted-file tests (tests/test_hostile_files.py) feed the commands that read a run back.

``hypothesis-jsonschema`` would do the first part, but its latest release (0.23.1) fails with
this Hypothesis ("'many' object has no attribute 'more'"); the schemas use a small part of
JSON Schema (draft 7 without $ref or anyOf: cflbounds/_schemas.py), which :func:`from_schema`
covers. Sizes are kept small (a few items per array) so that a report of a generated file takes
seconds; the bounds themselves are the mutations' business.
"""
from __future__ import annotations

import json
import math

from hypothesis import strategies as st

from cflbounds._schemas import MAX_DEPTH, MAX_TEXT, NON_FINITE

FORMATS = {
    "claim-id": st.from_regex(r"\A[A-Z][A-Z0-9]{0,3}\.[A-Za-z0-9][A-Za-z0-9_.\-]{0,8}\Z"),
    "matplotlib-color": st.sampled_from(["C3", "0.6", "#d62728", "tab:red", "red", "none", "xkcd:sky blue"]),
    "matplotlib-colormap": st.sampled_from(["viridis", "magma", "RdBu"]),
    "matplotlib-marker": st.sampled_from(["o", "s", "*", "8", "", "None", "x"]),
    "non-finite": st.sampled_from(NON_FINITE),
}
# text that a report must show as text: markup, a shell command, terminal escapes, mathtext, long words
TEXT = st.one_of(st.text(max_size=12), st.sampled_from([
    "<script>alert(1)</script>", "$(touch pwned)", "a | b", "\x1b[31mred\x1b[0m", "$\\frac{1}{2}$", "$x^$",
    "{" * 30 + "$\\sqrt{x}$", "line\nbreak", "x" * 300, "&lt;b&gt;", "'; rm -rf ~ #"]))
WIDE = 3  # items of an array, keys of an open object


def _merged(base: dict, more: dict) -> dict:
    """Both schemas' rules at once: properties merged by name, requirements joined."""
    merged = {**base, **more}
    if "properties" in base and "properties" in more:
        merged["properties"] = {name: _merged(base["properties"].get(name, {}), rule) if name in more["properties"]
                                else rule for name, rule in {**base["properties"], **more["properties"]}.items()}
    if "required" in base and "required" in more:
        merged["required"] = sorted({*base["required"], *more["required"]})
    return merged


def _folded(schema: dict) -> dict:
    """``schema`` with its if/then/else folded in: both branches' rules at once (what is
    generated then meets either branch)."""
    folded = {key: rule for key, rule in schema.items() if key not in ("if", "then", "else")}
    for branch in (schema.get("then"), schema.get("else")):
        if branch:
            folded = _merged(folded, branch)
    return folded


def from_schema(schema: dict) -> st.SearchStrategy:
    """Values ``schema`` allows (the subset of draft 7 the run files' schemas use)."""
    schema = _folded(schema)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    types = schema.get("type", ["null", "boolean", "number", "string", "array", "object"])
    return st.one_of([_of_type(kind, schema) for kind in ([types] if isinstance(types, str) else types)])


def _of_type(kind: str, schema: dict) -> st.SearchStrategy:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(-10**6 if low is None else math.floor(low) + 1 if "exclusiveMinimum" in schema
                           else math.ceil(low), 10**6 if high is None else math.floor(high))
    if kind == "number":
        floats = st.floats(-1e6 if low is None else low, 1e6 if high is None else high, allow_nan=False,
                           allow_infinity=False, exclude_min="exclusiveMinimum" in schema,
                           exclude_max="exclusiveMaximum" in schema)
        return st.one_of(floats, _of_type("integer", schema))  # a JSON number may be written as an int
    if kind == "string":
        return FORMATS[schema["format"]] if "format" in schema else TEXT
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {"type": "number"})), min_size=schema.get("minItems", 0),
                        max_size=min(schema.get("maxItems", WIDE), max(WIDE, schema.get("minItems", 0))))
    properties = schema.get("properties", {})
    required = [name for name in schema.get("required", []) if name in properties]
    fixed = st.fixed_dictionaries({name: from_schema(properties[name]) for name in required},
                                  optional={name: from_schema(rule) for name, rule in properties.items()
                                            if name not in required})
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        more = st.dictionaries(TEXT.filter(lambda key: key not in properties), from_schema(extra), max_size=WIDE)
        return st.builds(lambda known, others: {**others, **known}, fixed, more)
    return fixed


# -- mutations ----------------------------------------------------------------------------------------------
def places(value, path=()):
    """Every (path, value) in a JSON document, the document itself first."""
    yield path, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from places(item, (*path, key))


def replaced(document, path, new):
    """A copy of ``document`` with the value at ``path`` replaced by ``new`` (deleted if ``new``
    is :data:`DELETE`)."""
    if not path:
        return new
    copy = json.loads(json.dumps(document))
    *parents, last = path
    target = copy
    for key in parents:
        target = target[key]
    if new is DELETE:
        del target[last]
    else:
        target[last] = new
    return copy


DELETE = object()
PLACEHOLDER = "\x00placeholder\x00"
# values that replace one of a document's (a wrong type, out of range, too long, ...)
WRONG = st.sampled_from(["abc", 3, -1, 2.5, 1e308, 2**64, -(2**63), [], [1, "x"], {}, {"a": 1}, None, True,
                         "inf", "x" * (MAX_TEXT + 1), [0.5] * 5])
# text put where a value was: what Python's parser cannot take, or what is not JSON
RAW = st.sampled_from(["9" * 5000, "[" * 100_000 + "]" * 100_000, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
                       "NaN", "-Infinity", "1e999", "0." + "1" * 200])


@st.composite
def mutated(draw, document) -> bytes:
    """``document`` as the bytes of a file, with one thing wrong in it: a value replaced (a
    wrong type, a huge number, a long string), a key removed, or a value replaced by text a
    JSON parser cannot take (5000 digits, 100,000 levels of nesting, NaN); or the file's
    bytes themselves broken (cut, not UTF-8, empty)."""
    path, _ = draw(st.sampled_from(list(places(document))))
    how = draw(st.sampled_from(["replace", "replace", "delete", "raw", "bytes"]))
    if how == "delete" and path:
        return json.dumps(replaced(document, path, DELETE)).encode()
    if how == "raw":
        text = json.dumps(replaced(document, path, PLACEHOLDER))
        return text.replace(json.dumps(PLACEHOLDER), draw(RAW)).encode()
    if how == "bytes":
        text = json.dumps(document).encode()
        return draw(st.sampled_from([text[: len(text) // 2], b"\xff\xfe" + text, b"", b" \n"]))
    return json.dumps(replaced(document, path, draw(WRONG))).encode()
