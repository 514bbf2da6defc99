"""Reading a JSON file of a run directory as data that may have been crafted.

:func:`read_json` refuses, before any work and in one line naming the file (and the field,
once the file parses), what would otherwise hang, exhaust memory or end in a traceback:

* anything but a regular file where the file belongs (a FIFO would block the reader forever,
  ``/dev/zero`` never ends): it is opened without blocking and checked before it is read;
* more than :data:`~cflbounds._schemas.MAX_FILE_BYTES`, bytes that are not UTF-8;
* JSON nested deeper than :data:`~cflbounds._schemas.MAX_DEPTH` (100,000 levels raise
  RecursionError in Python's parser), integers of more than
  :data:`~cflbounds._schemas.MAX_INTEGER_DIGITS` digits (5,000 raise ValueError in ``int()``),
  numbers too large for a float, and ``NaN``/``Infinity`` (not JSON: cflbounds writes a
  non-finite number as ``"nan"``/``"inf"``);
* a value its schema (:mod:`cflbounds._schemas`) does not allow, checked by a validator
  ``fastjsonschema`` compiles from it: ``run/verdicts.json: verdicts[3].seconds: 'abc' is not
  a number of seconds (>= 0)``. A value is named by its type and size when it is long (never printed
  whole), and control characters in names are escaped, so the message stays one short line.
"""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import numpy as np

from ._schemas import FORMATS, MAX_DEPTH, MAX_FILE_BYTES, MAX_INTEGER_DIGITS
from ._validation import InvalidParameterError

__all__ = ["read_json", "load_json", "check_json", "check_unique_ids", "parse_json", "read_regular", "schema_problem",
           "JSONProblem", "shown"]

_ESCAPED = re.compile(rb'\\.', re.S)  # a backslash and the character it escapes (inside strings only, in JSON)
_STRUCTURE = np.zeros(256, dtype=np.int8)
_STRUCTURE[[ord("["), ord("{")]] = 1
_STRUCTURE[[ord("]"), ord("}")]] = -1
_QUOTE = ord('"')


class JSONProblem(ValueError):
    """Text that is not JSON cflbounds reads, with what is wrong (no file name: the caller adds it)."""


def _line(data: bytes, position: int) -> int:
    return data.count(b"\n", 0, position) + 1


def _check_depth(data: bytes, limit: int) -> None:
    """Refuse ``data`` nested deeper than ``limit`` arrays and objects (brackets inside strings
    do not count), before a recursive parser sees it."""
    unescaped = np.frombuffer(_ESCAPED.sub(b"__", data), dtype=np.uint8)
    marks = np.flatnonzero((_STRUCTURE[unescaped] != 0) | (unescaped == _QUOTE))
    kinds = unescaped[marks]
    quotes = kinds == _QUOTE
    inside = (np.cumsum(quotes) - quotes) % 2 == 1  # after an opening quote, before its closing one
    steps = np.where(quotes | inside, 0, _STRUCTURE[kinds]).astype(np.int64)
    depth = np.cumsum(steps)
    if depth.size and depth.max() > limit:
        at = int(marks[np.argmax(depth > limit)])
        raise JSONProblem(f"line {_line(data, at)}: nested deeper than {limit} levels of arrays and objects")


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise JSONProblem(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INTEGER_DIGITS} are read)")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > 2 * MAX_INTEGER_DIGITS:
        raise JSONProblem(f"a number written with {len(text)} characters (at most {2 * MAX_INTEGER_DIGITS} are read)")
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise JSONProblem(f"the number {shown(text)} is too large for a float")
    return value


def _parse_constant(name: str):
    raise JSONProblem(f"{name} is not JSON (cflbounds writes a non-finite number as \"nan\", \"inf\" or \"-inf\")")


def parse_json(data: bytes, max_depth: int = MAX_DEPTH):
    """The value of the JSON document ``data`` (UTF-8 bytes), or :class:`JSONProblem` saying in
    one line what is wrong (module docstring: depth, integer digits, non-finite numbers)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise JSONProblem(f"not UTF-8 text (byte {error.start})") from None
    if not text.strip():
        raise JSONProblem("the file is empty")
    _check_depth(data, max_depth)
    try:
        return json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except json.JSONDecodeError as error:
        raise JSONProblem(f"not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None


def read_regular(path, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, opened without blocking (a FIFO is refused, not
    waited on), of at most ``limit`` bytes (None: any size); :class:`JSONProblem` otherwise."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise JSONProblem(f"cannot be read ({error.strerror or type(error).__name__})") from None
    with os.fdopen(handle, "rb") as file:
        kind = os.fstat(file.fileno())
        if not stat.S_ISREG(kind.st_mode):
            raise JSONProblem("not a regular file (a FIFO, a device or a directory is never read)")
        if limit is not None and kind.st_size > limit:
            raise JSONProblem(f"{kind.st_size} bytes, more than the {limit} a run's file may have")
        data = file.read() if limit is None else file.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise JSONProblem(f"more than the {limit} bytes a run's file may have")
    return data


def load_json(path, *, what: str, limit: int = MAX_FILE_BYTES):
    """The JSON value in the file ``path`` (module docstring: a regular file, at most ``limit``
    bytes, parsed with bounded depth and digits); :class:`InvalidParameterError` naming the
    file otherwise. ``what`` says what was expected ("the JSON `cflbounds verify` writes")."""
    path = Path(path)
    try:
        return parse_json(read_regular(path, limit))
    except JSONProblem as problem:
        raise InvalidParameterError(f"{path}: {problem} (expected {what}).") from None


def check_json(path, data, schema: dict) -> None:
    """Refuse ``data`` read from ``path`` unless ``schema`` allows it: one line naming the file,
    the field and what is wrong."""
    problem = schema_problem(data, schema)
    if problem:
        raise InvalidParameterError(f"{path}: {problem}.")


def check_unique_ids(path, entries: list, field: str) -> None:
    """Refuse a file whose ``field`` (its verdicts, its results) names one claim twice, which
    no schema says: one line naming the file, the entry and the claim."""
    seen = set()
    for index, entry in enumerate(entries):
        if entry["id"] in seen:
            raise InvalidParameterError(f"{path}: {field}[{index}] repeats the claim {entry['id']}.")
        seen.add(entry["id"])


def read_json(path, schema: dict, *, what: str, limit: int = MAX_FILE_BYTES):
    """The content of the JSON file ``path``, checked against ``schema`` (one of
    :mod:`cflbounds._schemas`' files) before it is returned."""
    data = load_json(path, what=what, limit=limit)
    check_json(path, data, schema)
    return data


_VALIDATORS: dict = {}  # id(schema) -> (schema, its compiled validator, the exception it raises): compiled once


def _validator(schema: dict) -> tuple:
    if id(schema) not in _VALIDATORS:
        import fastjsonschema

        formats = {name: accepts for name, (accepts, _) in FORMATS.items()}
        _VALIDATORS[id(schema)] = (schema, fastjsonschema.compile(schema, formats=formats),
                                   fastjsonschema.JsonSchemaValueException)
    return _VALIDATORS[id(schema)][1:]


def schema_problem(data, schema: dict) -> str | None:
    """What is wrong with ``data`` under ``schema`` (one of :mod:`cflbounds._schemas`' files) as
    ``field: problem`` (the first error the validator meets), or None."""
    validate, invalid = _validator(schema)
    try:
        validate(data)
    except invalid as error:  # the class of the fastjsonschema that compiled it (a test may import it afresh)
        where = _where(data, error.name)
        return f"{where}: {_problem(error)}" if where else _problem(error)
    return None


def _field(data, name: str) -> list:
    """The keys and indices that lead from ``data`` to the value fastjsonschema names ``name``
    (``data.verdicts[3].evidence.a.b``: a key may hold a dot, so the name is matched against
    the data, not split)."""
    path, value, built = [], data, "data"
    while built != name:
        if isinstance(value, list):
            index = re.match(r"\[(\d+)\]", name[len(built):])
            if index is None or int(index.group(1)) >= len(value):
                break
            path.append(int(index.group(1)))
            value, built = value[path[-1]], f"{built}[{index.group(1)}]"
            continue
        keys = [key for key in value if name == f"{built}.{key}" or name.startswith((f"{built}.{key}.",
                                                                                         f"{built}.{key}["))] \
            if isinstance(value, dict) else []
        if not keys:
            break
        exact = [key for key in keys if name == f"{built}.{key}"]
        key = exact[0] if exact else max(keys, key=len)
        path.append(key)
        value, built = value[key], f"{built}.{key}"
    return path


def _where(data, name: str) -> str:
    """The field fastjsonschema names ``name`` as ``verdicts[3].evidence['a b']`` ("" for the
    document itself)."""
    parts = []
    for key in _field(data, name):
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,39}", key):
            parts.append(f".{key}" if parts else key)
        else:
            parts.append(f"[{shown(key)}]")
    return "".join(parts)


def shown(value, width: int = 40) -> str:
    """``value`` in a message: a string's repr cut to ``width`` characters (its length said when
    cut), an array or an object by its size, null, true and false by their JSON names."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= width else f"{text[:width - 1]}…' ({len(value)} characters)"
    if isinstance(value, list):
        return f"an array of {len(value)} items"
    if isinstance(value, dict):
        return f"an object of {len(value)} keys"
    text = repr(value)
    return text if len(text) <= width else f"{text[:width - 1]}… ({len(text)} characters)"


def _problem(error) -> str:
    """What ``error`` found, in the words of the schema's description of the value."""
    rule, value, schema = error.rule, error.value, error.definition or {}
    wanted = schema.get("description", "what the file's schema allows")
    if rule == "required":
        missing = [name for name in schema["required"] if isinstance(value, dict) and name not in value]
        return f"has no {shown(missing[0] if missing else schema['required'][0])}"
    if rule in ("maxLength", "minLength"):
        return f"a string of {len(value)} characters ({'at most' if rule == 'maxLength' else 'at least'} " \
               f"{schema[rule]})"
    if rule in ("maxItems", "minItems"):
        return f"an array of {len(value)} items ({'at most' if rule == 'maxItems' else 'at least'} {schema[rule]})"
    if rule == "propertyNames":
        return f"has a key of more than {schema['propertyNames'].get('maxLength')} characters"
    return f"{shown(value)} is not {wanted}"
