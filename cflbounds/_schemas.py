"""The JSON files a run reads back, declared once as JSON Schemas (draft 7), with the limits
that bound what reading one may cost.

A run directory may come from someone else, so every JSON file cflbounds reads back is
checked against its schema before any work (:func:`cflbounds._read_json.read_json`):

* :data:`VERDICTS_FILE`: ``verdicts.json`` of ``cflbounds verify`` (``verify --resume``,
  ``cflbounds report``);
* :data:`FALSIFY_FILE`: ``falsify.json`` of ``cflbounds falsify`` (``falsify --resume``,
  ``cflbounds report``);
* :data:`COUNTEREXAMPLE_FILE`: ``counterexamples/<ID>.json`` (``falsify --replay``);
* :data:`SWEEP_MANIFEST`: a sweep store's ``sweep.json`` (``sweep --resume``, ``cflbounds
  report``).

The schemas say what the readers do with the values, not only their JSON types: numbers are
finite (the writers spell a non-finite one ``"inf"``, ``"-inf"`` or ``"nan"``, where one may
be), counts are non-negative ints, seeds lie in ``[0, 2**63 - 1]``, a figure's height is at
most :data:`MAX_FIGURE_HEIGHT` inches, colours, colour maps and markers are ones matplotlib
draws, strings and arrays have bounded lengths. Objects stay open (a key a reader does not
know is ignored, so a newer cflbounds' file reads), but each key a reader uses is declared.
A verdict's fields with a default in :class:`cflbounds.verify.verdict.Verdict` may be missing
(a file of an older cflbounds): they read as that default.

This module imports nothing of cflbounds (every layer reads files). The words of the files'
enumerations (verdicts, outcomes, relations, figure kinds and styles) are the code's:
``tests/test_hostile_files.py`` checks that they are the same.
"""
from __future__ import annotations

import re

__all__ = ["MAX_SEED", "MAX_FILE_BYTES", "MAX_DEPTH", "MAX_INTEGER_DIGITS", "MAX_TEXT", "MAX_NAME", "MAX_ID",
           "MAX_VALUES", "MAX_ITEMS", "MAX_FIGURE_HEIGHT", "VERDICTS_FILE", "FALSIFY_FILE", "COUNTEREXAMPLE_FILE",
           "SWEEP_MANIFEST", "FORMATS", "VERDICT_WORDS", "OUTCOME_WORDS", "NOT_RUN", "RELATIONS", "PLOT_KINDS",
           "PLOT_STYLES", "NON_FINITE"]

# Seeds are spawned by numpy (any int >= 0) and stored in int64 table columns (pyarrow): 63 bits.
MAX_SEED = 2**63 - 1
# A default verify run's verdicts.json has 1.4 MB (smoke: 0.45 MB), read and checked in 0.04 s:
# 64 MiB is 45 times that, and parsing it takes about 1 GB and a few seconds.
MAX_FILE_BYTES = 64 * 2**20
# A default run's verdicts.json nests 8 levels (verdicts[].plot[].series[].y[]).
MAX_DEPTH = 32
# Python's int() refuses more than 4300 digits with a ValueError; the files' ints are seeds and
# counts (at most 19 digits).
MAX_INTEGER_DIGITS = 40
# Characters of free text (a summary, a statement, a traceback, a note); the longest in a
# default run has 1,886.
MAX_TEXT = 100_000
# Characters of a name (a label, a title, a key, a device, a colour).
MAX_NAME = 1_000
# Characters of a claim ID (its table and counterexample files are named after it).
MAX_ID = 200
# Values of one array (a figure's series, a confirmation's fresh seeds); the largest real one
# has 4,000 (LCFL.E8's scatter).
MAX_VALUES = 200_000
MAX_ITEMS = 1_000  # figures of a verdict, series of a figure, assumption rows, runs of a store
# Inches of a figure's data area: an A4 page's text area is 10.5 inches high.
MAX_FIGURE_HEIGHT = 10.0

VERDICT_WORDS = ("holds", "violated", "vacuous", "unsatisfiable", "rate-consistent", "rate-inconsistent",
                 "inconclusive", "not-implemented", "error")  # cflbounds.verify.verdict.VERDICTS
OUTCOME_WORDS = ("violated", "no counterexample found", "error")  # cflbounds.falsify.run.OUTCOMES
NOT_RUN = "not run"  # a verdict's search that did not run (cflbounds.falsify.judge.NOT_RUN)
RELATIONS = ("<=", ">=", "<", ">")  # cflbounds.bounds._report._RELATIONS
PLOT_KINDS = ("rate", "line", "bar", "scatter", "heatmap")  # cflbounds.reports.figures.plot_from_spec
PLOT_STYLES = ("points", "line", "dashed", "ring")  # cflbounds.reports.figures._STYLES
NON_FINITE = ("inf", "-inf", "nan")  # how cflbounds.verify.verdict.json_safe writes non-finite floats
_CLAIM_ID = re.compile(r"[A-Za-z0-9_.\-]{1,%d}" % MAX_ID)  # the characters of cflbounds.verify.claim.ID_PATTERN


def _claim_id(value) -> bool:
    return not isinstance(value, str) or _CLAIM_ID.fullmatch(value) is not None


def _color(value) -> bool:
    from matplotlib.colors import is_color_like

    return not isinstance(value, str) or is_color_like(value)


def _colormap(value) -> bool:
    from matplotlib import colormaps

    return not isinstance(value, str) or value in colormaps


def _marker(value) -> bool:
    from matplotlib.markers import MarkerStyle

    return not isinstance(value, str) or value in MarkerStyle.markers


# The formats the schemas use beyond JSON types, each a predicate (a value of another type
# passes: its type is the schema's "type" to check), and how a message names what it wants.
FORMATS = {
    "non-finite": (lambda value: not isinstance(value, str) or value in NON_FINITE, "\"inf\", \"-inf\" or \"nan\""),
    "claim-id": (_claim_id, f"a claim ID (up to {MAX_ID} letters, digits, '_', '.' and '-')"),
    "matplotlib-color": (_color, "a colour matplotlib draws ('C3', '0.6', '#d62728', 'tab:red', ...)"),
    "matplotlib-colormap": (_colormap, "a matplotlib colour map ('viridis', ...)"),
    "matplotlib-marker": (_marker, "a matplotlib marker ('o', 's', 'D', '*', ...)"),
}




# -- building blocks -----------------------------------------------------------------------------------
# Draft 7, without $ref or anyOf: every part is spelt out where it is used (the Python below
# composes them), so that a validator reports the field itself, never "not valid under any of".
# A value of several JSON types is one "type" list, each keyword applying to its own type
# ("maxLength" to a string, "items" to an array, "format" to a string).
def _name(description: str = f"a string of at most {MAX_NAME} characters", null: bool = False) -> dict:
    return {"type": ["string", "null"] if null else "string", "maxLength": MAX_NAME, "description": description}


def _text(null: bool = False) -> dict:
    return {"type": ["string", "null"] if null else "string", "maxLength": MAX_TEXT,
            "description": f"a string of at most {MAX_TEXT} characters"}


def _array(items: dict, limit: int = MAX_VALUES, description: str = "an array", **more) -> dict:
    return {"type": "array", "maxItems": limit, "items": items, "description": description, **more}


def _object(properties: dict, required=(), description: str = "an object", null: bool = False, **more) -> dict:
    """An open object (module docstring): ``properties`` checked when present, ``required`` present."""
    schema = {"type": ["object", "null"] if null else "object", "properties": properties, "description": description,
              **more}
    if required:
        schema["required"] = list(required)
    return schema


def _enum(words, what: str) -> dict:
    return {"enum": list(words), "description": f"{what} ({', '.join(map(str, words))})"}


FINITE = {"type": "number", "description": "a number"}
REAL = {"type": ["number", "string"], "format": "non-finite", "description": "a number (or \"inf\", \"-inf\", \"nan\")"}
REAL_OR_NULL = {**REAL, "type": ["number", "string", "null"],
                "description": "a number (or \"inf\", \"-inf\", \"nan\", null)"}
REALS = _array(REAL_OR_NULL, description="an array of numbers")
REALS_OR_NULL = {**REALS, "type": ["array", "null"], "description": "null or an array of numbers"}
REAL_OR_REALS = {**REAL, "type": ["number", "string", "array"], "maxItems": MAX_VALUES, "items": REAL,
                 "description": "a number or an array of numbers"}
COUNT = {"type": "integer", "minimum": 0, "maximum": MAX_SEED, "description": "a non-negative int"}
COUNT_OR_NULL = {**COUNT, "type": ["integer", "null"], "description": "null or a non-negative int"}
SEED = {"type": "integer", "minimum": 0, "maximum": MAX_SEED, "description": "a seed (an int in [0, 2**63 - 1])"}
SECONDS = {"type": "number", "minimum": 0, "description": "a number of seconds (>= 0)"}
SECONDS_OR_NULL = {**SECONDS, "type": ["number", "null"], "description": "null or a number of seconds (>= 0)"}
PROBABILITY = {"type": "number", "minimum": 0, "maximum": 1, "description": "a number in [0, 1]"}
FLAG = {"type": "boolean", "description": "true or false"}
CLAIM_ID = {"type": "string", "format": "claim-id", "description": FORMATS["claim-id"][1]}
DEVICE = _name("a device ('cpu', 'cuda', ...)")
COMMAND = _array(_text(), 10_000, "a command line (an array of strings)")
VERDICT_WORD = _enum(VERDICT_WORDS, "a verdict")
INTERVAL = _array(REAL_OR_NULL, 2, "an interval [low, high]", minItems=2)
_SCALARS = ["number", "boolean", "null", "string"]
# a verdict's evidence and details, an instance's details: numbers, strings and flags, or arrays
# of them (a matrix at most)
VALUE = {"type": [*_SCALARS, "array"], "maxLength": MAX_TEXT, "maxItems": MAX_VALUES,
         "items": {"type": [*_SCALARS, "array"], "maxLength": MAX_TEXT, "maxItems": MAX_VALUES,
                   "items": {"type": _SCALARS, "maxLength": MAX_TEXT}},
         "description": "a number, a string, a flag or an array of them"}
VALUES = _object({}, additionalProperties=VALUE, propertyNames={"maxLength": MAX_NAME},
                 description="an object of values")
POINT = _object({}, additionalProperties=FINITE, propertyNames={"maxLength": MAX_NAME},
                description="an object of parameter values (numbers)")

# an assumption row (cflbounds.bounds._report.Inequality.as_dict)
ASSUMPTIONS = _array(_object({
    "name": _name(), "lhs": REAL_OR_REALS, "rhs": REAL_OR_REALS, "slack": REAL_OR_REALS, "tolerance": REAL_OR_REALS,
    "relation": _enum(RELATIONS, "a relation"), "holds": FLAG, "source": _text(null=True),
    "constant": {"type": ["number", "string", "null"], "maxLength": MAX_NAME, "description": "a number or a name"},
}, required=("name", "lhs", "relation", "rhs", "slack", "holds"), description="an assumption row (an object)"),
    description="an array of assumption rows")

# a figure spec (cflbounds.reports.figures.plot_from_spec)
SERIES = _object({
    "label": _name(null=True), "group": {"type": ["string", "integer"], "maxLength": MAX_NAME, "description": "a name"},
    "x": REALS, "y": REALS_OR_NULL, "low": REALS_OR_NULL, "high": REALS_OR_NULL,
    "fails": {**_array(FLAG), "type": ["array", "null"], "description": "null or an array of flags"},
    "style": _enum(PLOT_STYLES, "a style"),
    "color": {"type": "string", "format": "matplotlib-color", "description": FORMATS["matplotlib-color"][1]},
    "marker": {"type": ["string", "null"], "format": "matplotlib-marker", "description": FORMATS["matplotlib-marker"][1]},
    "size": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 10_000,
             "description": "a marker size in (0, 10000]"},
}, description="a series (an object)")
LIMITS = {**_array({"type": ["number", "null"], "description": "a number or null"}, 2), "type": ["array", "null"],
          "description": "null or [low, high] (numbers or null)"}
_NULL_FLAG = {"type": ["boolean", "null"], "description": "true or false"}
PLOT_PROPERTIES = {
    "kind": _enum(PLOT_KINDS, "a figure kind"), "title": _text(null=True), "note": _text(null=True),
    "caption": _text(null=True), "xlabel": _name(null=True), "ylabel": _name(null=True),
    "colorbar": _name(null=True), "nonfinite_label": _name(null=True),
    "logx": _NULL_FLAG, "logy": _NULL_FLAG, "equal": _NULL_FLAG, "xinteger": _NULL_FLAG, "beside": _NULL_FLAG,
    "x": _array({"type": ["number", "string", "null"], "maxLength": MAX_NAME, "description": "a number or a name"},
                description="an array of numbers or category names"),
    "series": _array(SERIES, MAX_ITEMS, "an array of series"),
    "matrix": _array(REALS, 2_000, "an array of rows of numbers"),
    "boundaries": {**_array({"type": "integer", "minimum": 0, "maximum": 2_000, "description": "an int in [0, 2000]"},
                            2_000), "type": ["array", "null"], "description": "null or an array of ints"},
    "cmap": {"type": ["string", "null"], "format": "matplotlib-colormap",
             "description": FORMATS["matplotlib-colormap"][1]},
    "xlim": LIMITS, "ylim": LIMITS,
    "reference": {**_array(_object({"x": FINITE, "y": FINITE, "label": _name(null=True)},
                                   description="a reference line (an object with a 'y' or an 'x')",
                                   **{"if": {"required": ["y"]}, "else": {"required": ["x"]}}), MAX_ITEMS),
                  "type": ["array", "null"], "description": "null or an array of reference lines"},
    "height": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": MAX_FIGURE_HEIGHT,
               "description": f"a height in inches, in (0, {MAX_FIGURE_HEIGHT:g}]"},
    "share": {"type": "number", "exclusiveMinimum": 0, "maximum": 100, "description": "a share in (0, 100]"},
}
# the x values of a line, a rate or a scatter are numbers (a bar chart's are its categories)
_NUMERIC_X = {"if": {"properties": {"kind": {"enum": ["bar", "heatmap"]}}, "required": ["kind"]},
              "else": {"properties": {"x": REALS}}}
PLOT = _object(PLOT_PROPERTIES, description="a figure spec (an object)", **_NUMERIC_X)
# a verdict's figures: a list of specs, or one spec (an older file). One schema for both: "items"
# applies to an array only, "properties" to an object only.
PLOTS = {**PLOT, "type": ["array", "object"], "maxItems": MAX_ITEMS, "items": PLOT,
         "description": "a list of figure specs"}

# a claim's own code failing (cflbounds.verify.failure.ClaimFailure)
FAILURE = _object({"stage": _name(), "kind": _name(), "message": _text(), "where": _text(), "traceback": _text()},
                  required=("stage", "kind", "message", "where"), description="null or a failure (an object)",
                  null=True)
# cflbounds.falsify.confirm.Confirmation.as_dict
CONFIRMATION = _object({
    "violated": FLAG, "trials": COUNT, "confidence": PROBABILITY, "interval": INTERVAL, "quantity": _name(),
    "summary": _text(), "seeds": _array(SEED, description="an array of seeds"), "inadmissible": COUNT,
    "measured": REALS, "bounds": REALS, "ratio": REAL, "ratio_interval": INTERVAL,
}, required=("trials", "confidence", "quantity", "summary", "measured", "bounds"),
    description="null or a confirmation (an object)", null=True)
# cflbounds.falsify.coverage.Coverage.as_dict
COVERAGE = _object({
    "points": COUNT, "admissible": COUNT, "inadmissible": COUNT, "violating": COUNT, "volume_bound": REAL,
    "confidence": PROBABILITY, "statement": _text(),
}, required=("points", "admissible", "violating", "volume_bound", "confidence", "statement"),
    description="null or a coverage (an object)", null=True)
# a point where a claim was measured (cflbounds.verify.domain.Instance.as_dict) and how it was found
INSTANCE_PROPERTIES = {
    "parameters": POINT, "seed": SEED, "measured": REAL, "bound": REAL, "ratio": REAL, "assumptions": ASSUMPTIONS,
    "details": VALUES, "samples": COUNT, "exceedances": COUNT, "trials": COUNT, "shrunk": FLAG,
    "confirmed_ratio": REAL, "confirmed_interval": INTERVAL,
}
COUNTEREXAMPLE = _object(INSTANCE_PROPERTIES, required=("parameters", "seed"), null=True,
                         description="null or a point (an object)")

_RUN = {
    "cflbounds": _name(), "revision": _name(null=True), "command": COMMAND, "started": _name(null=True),
    "finished": _name(null=True), "seed": SEED, "device": DEVICE, "executor": _name(), "threads": COUNT,
    "resumed": _array(_object({"command": COMMAND, "started": _name()}), MAX_ITEMS),
}
# what a verdict's search (cflbounds.falsify.judge.search_record) and a falsify result share
_SEARCHED = {
    "id": CLAIM_ID, "outcome": _enum([*OUTCOME_WORDS, NOT_RUN], "an outcome"), "best_ratio": REAL_OR_NULL,
    "evaluations": COUNT, "seconds": SECONDS, "seed": SEED, "device": DEVICE, "rule": _name(), "summary": _text(),
    "counterexample": COUNTEREXAMPLE, "confirmation": CONFIRMATION, "coverage": COVERAGE, "error": FAILURE,
}


def _file(title: str, schema: dict) -> dict:
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": title, **schema}


# -- verdicts.json ----------------------------------------------------------------------------------------
VERDICT = _object({
    "id": CLAIM_ID, "verdict": VERDICT_WORD, "evidence": VALUES, "seed": SEED, "trials": COUNT,
    "confidence": PROBABILITY, "summary": _text(), "statement": _text(), "scale": _name(),
    "assumptions": ASSUMPTIONS, "plot": PLOTS, "details": VALUES, "seconds": SECONDS,
    "designed": _object({"verdict": VERDICT_WORD, "summary": _text()},
                        description="the designed experiment's verdict (an object)"),
    "search": _object({**_SEARCHED, "reason": _text(), "replay": _text(),
                       "best": _object({"parameters": POINT, "seed": SEED, "ratio": REAL}, null=True,
                                       description="null or a point (an object)")},
                      description="a search (an object)",  # {} when there was none
                      **{"if": {"minProperties": 1}, "then": {"required": ["outcome"]}}),
}, required=("id", "verdict", "evidence", "seed", "trials", "confidence"), description="a verdict (an object)")

# The list of verdicts alone (the format before run metadata) is read as {"metadata": {}, "verdicts": [...]}.
VERDICTS_FILE = _file("verdicts.json (cflbounds verify)", _object({
    "metadata": _object({
        **_RUN, "scale": _name(), "python": _name(), "platform": _text(),
        "dependencies": _object({}, additionalProperties=_name(null=True), propertyNames={"maxLength": MAX_NAME}),
        "search": _object({"evaluations": COUNT_OR_NULL, "seconds": SECONDS_OR_NULL, "confidence": PROBABILITY},
                          null=True, description="null or a search plan (an object)"),
        "threads_used": _array(COUNT),
    }, description="the run's metadata (an object)"),
    "verdicts": _array(VERDICT, description="an array of verdicts"),
}, required=("verdicts",), description="an object with 'metadata' and a 'verdicts' array, as cflbounds verify writes"))

# -- falsify.json -----------------------------------------------------------------------------------------
_TRACE_STEPS = _object({"evaluation": _array(COUNT, description="an array of counts"), "score": REALS,
                        "ratio": REALS}, required=("evaluation",))
FALSIFY_RESULT = _object({
    **_SEARCHED,
    "confirmed": _object({"ratio": REAL, "interval": INTERVAL, "trials": COUNT, "confidence": PROBABILITY,
                          "point": _name(), "violated": FLAG}, required=("ratio", "interval", "trials", "confidence"),
                         null=True, description="null or a confirmed ratio (an object)"),
    "raw_best": _object({"ratio": REAL, "score": REAL, "objective": _name(), "evaluation": COUNT, "seed": SEED,
                         "trials": COUNT, "exceedances": COUNT}, required=("ratio", "score", "trials"), null=True,
                        description="null or the search's best evaluation (an object)"),
    "counterexample_file": _text(),
    "search": _object({
        "budget_seconds": SECONDS_OR_NULL, "max_evaluations": COUNT_OR_NULL, "restarts": COUNT,
        "search_seconds": SECONDS, "admissible": COUNT, "rejected": COUNT, "shrink_evaluations": COUNT,
        "shrunk_point_confirmed": FLAG, "best": COUNTEREXAMPLE,
        "shrink": _object({"parameters": POINT, "accepted": FLAG, "reason": _text()},
                          required=("parameters", "accepted", "reason")),
        # the best score so far and a sample of the evaluations' scores (ratios, in an older file)
        "trace": _object({"objective": _name(), "coverage_evaluations": COUNT, "best": _TRACE_STEPS,
                          "sampled": _TRACE_STEPS}, required=("best", "sampled"), **{
            "if": {"required": ["objective"]},
            "then": {"properties": {"best": {"required": ["score"]}, "sampled": {"required": ["score"]}}},
            "else": {"properties": {"best": {"required": ["ratio"]}, "sampled": {"required": ["ratio"]}}}}),
    }, required=("restarts", "search_seconds", "admissible", "rejected"), description="a search (an object)"),
}, required=("id", "outcome", "best_ratio", "evaluations", "seconds", "seed", "summary", "counterexample",
             "confirmation", "search"), description="a falsify result (an object)")

FALSIFY_FILE = _file("falsify.json (cflbounds falsify)", _object({
    "metadata": _object({**_RUN, "budget_seconds": SECONDS_OR_NULL, "max_evaluations": COUNT_OR_NULL,
                         "confidence": PROBABILITY}, description="the run's metadata (an object)"),
    "results": _array(FALSIFY_RESULT, description="an array of results"),
}, required=("metadata", "results"),
    description="an object with 'metadata' (an object) and 'results' (an array), as cflbounds falsify writes"))

# -- counterexamples/<ID>.json ------------------------------------------------------------------------------
COUNTEREXAMPLE_FILE = _file("counterexamples/<ID>.json (cflbounds falsify)", _object({
    **INSTANCE_PROPERTIES, "id": CLAIM_ID, "ratio": REAL, "device": DEVICE, "search_seed": SEED, "cflbounds": _name(),
    "written": _name(), "confirmation": CONFIRMATION,
}, required=("id", "parameters", "seed", "ratio"), description="a counterexample of cflbounds falsify (an object)"))

# -- a sweep store's sweep.json ----------------------------------------------------------------------------
SWEEP_MANIFEST = _file("sweep.json (cflbounds sweep)", _object({
    "name": _name(),
    "settings": _object({}, additionalProperties={"type": ["string", "number", "boolean", "null"],
                                                  "maxLength": MAX_NAME, "description": "a number, a name or a flag"},
                        propertyNames={"maxLength": MAX_NAME}, description="the sweep's settings (an object)"),
    "selections": _array({"type": "object", "description": "an object"}, MAX_ITEMS),
    "runs": _array(_object({**_RUN, "cells_to_compute": COUNT, "cells_kept": COUNT}, description="a run (an object)"),
                   MAX_ITEMS),
}, description="a sweep manifest (an object)"))
