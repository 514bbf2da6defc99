"""Reading a run never trusts its files (issue 41, section 3): a run directory may come from
someone else, so what ``verify --resume``, ``falsify --resume``, ``falsify --replay`` and
``cflbounds report`` read back is data, checked before any work.

* checkpoints (``partial/*.npz``): a class is named by its exact qualified name, a refusal
  imports nothing, nothing larger than the file is allocated, and a bad file is refused in one
  line, naming it, before ``verify --resume`` works;
* JSON files: checked against their schemas (cflbounds/_schemas.py) with a file-size, depth
  and digit limit; one line, exit 2, naming the file and the field, never the whole value; a
  FIFO is refused, not waited on;
* a schema-valid file the report cannot draw everything of still gives a report;
* the report's copy buttons quote every argument; ``--markdown`` output is inert;
* out-of-range options are refused up front;
* nothing a crafted file holds is executed, and every text is escaped in report.html.

The schemas' words are the code's (:func:`test_the_schemas_enumerations_are_the_codes`)."""
from __future__ import annotations

import io
import json
import math
import os
import pickle
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import html5lib
import numpy as np
import pandas as pd
import pytest

from cflbounds import _schemas
from cflbounds.claims import Claim, rules
from cflbounds.cli import main
from cflbounds.reports.content import replay_code, verify_command
from cflbounds.reports.markdown import search_table, verdict_table
from cflbounds.verify import VerifyContext, verify_claims
from cflbounds.verify.checkpoints import CheckpointFormatError, decode, encode
from conftest import FakeEntryPoint
from test_falsify import toys  # noqa: F401 (a fixture: the toy claims with domains)

PAYLOAD = "<script>alert(1)</script><img src=x onerror=alert(2)>"
SHELL = "$(touch pwned)"


def one_line_error(capsys, argv, *names) -> str:
    """Run ``cflbounds argv`` in-process: exit 2, one line on stderr holding every one of ``names``."""
    code = main([str(word) for word in argv])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err[-2000:])
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def verdict(claim_id="IFCA.A2", **fields) -> dict:
    """A verdict as verdicts.json holds it, with a figure, an assumption row and a detail."""
    return {"id": claim_id, "verdict": "holds", "evidence": {"margin": 0.5}, "seed": 0, "trials": 3,
            "confidence": 0.95, "summary": "margin 0.5", "statement": "x <= 1", "scale": "smoke",
            "assumptions": [{"name": "a", "lhs": 1.0, "relation": "<=", "rhs": 2.0, "slack": 1.0, "holds": True}],
            "plot": [{"kind": "line", "title": "t", "x": [1, 2, 3], "series": [{"label": "m", "y": [1.0, 2.0, 3.0]}]}],
            "details": {"note": "fine"}, "seconds": 1.5, **fields}


def write_record(directory: Path, verdicts: list, metadata: dict | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "verdicts.json"
    path.write_text(json.dumps({"metadata": metadata or {}, "verdicts": verdicts}))
    return path


# -- checkpoints ------------------------------------------------------------------------------------------
def checkpoint_bytes(tree, **members) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, tree=np.frombuffer(json.dumps({"format": 1, "tree": tree}).encode(), dtype=np.uint8), **members)
    return buffer.getvalue()


@pytest.mark.parametrize("key", [
    "cflbounds:_files.pd.NamedAgg",  # a pandas dataclass, reached through attributes of cflbounds modules
    "cflbounds._torch:torch._dynamo.eval_frame.OptimizedModule",  # a lazy submodule of torch
    "cflbounds.verify.checkpoints:np",  # a module a cflbounds module imported
    "cflbounds.verify.verdict:json_safe",  # a function, not a dataclass
    "cflbounds.verify.verdict:Verdict.to_dict",
    "pandas:NamedAgg", "torch:_dynamo", "cflbounds.not_a_module:X", "subprocess:Popen",
])
def test_a_class_is_named_exactly_and_a_refusal_imports_nothing(key):
    data = checkpoint_bytes({"dataclass": key, "fields": {}})
    decode(encode({"a": 1}))  # what reading any archive imports once (zipfile's codec for member names)
    before = set(sys.modules)
    with pytest.raises(CheckpointFormatError, match="not a registered data class"):
        decode(data)
    assert set(sys.modules) == before


def test_a_torch_dtype_is_a_dtype_and_its_refusal_imports_nothing():
    before = set(sys.modules)
    for name in ("_dynamo", "_inductor", "onnx", "__import__", "Tensor"):
        with pytest.raises(CheckpointFormatError, match="bad torch dtype"):
            decode(checkpoint_bytes({"torch_dtype": name}))
    assert set(sys.modules) == before
    assert decode(checkpoint_bytes({"torch_dtype": "float16"})) is __import__("torch").float16


def test_a_cflbounds_dataclass_defined_where_it_is_named_is_rebuilt():
    from cflbounds.verify.verdict import Verdict

    value = Verdict("A.B", "holds", {"m": 1.0}, 0, 1, 1.0)
    assert decode(encode(value)) == value


def test_refusing_a_lazy_submodule_imports_nothing_in_a_fresh_process():
    """In a process where torch._dynamo (799 modules) was never imported, a checkpoint naming
    it (as a class, as a dtype) is refused and leaves it unimported."""
    script = textwrap.dedent("""
        import io, json, sys
        import numpy as np, torch
        from cflbounds.verify.checkpoints import CheckpointFormatError, decode
        assert "torch._dynamo" not in sys.modules
        for tree in ({"dataclass": "cflbounds._torch:torch._dynamo.OptimizedModule", "fields": {}},
                     {"torch_dtype": "_dynamo"}):
            buffer = io.BytesIO()
            np.savez(buffer, tree=np.frombuffer(json.dumps({"format": 1, "tree": tree}).encode(), dtype=np.uint8))
            try:
                decode(buffer.getvalue())
            except CheckpointFormatError:
                pass
        print(sorted(name for name in sys.modules if name.startswith("torch._dynamo")))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def compressed(data: bytes) -> bytes:
    """The same archive with every member deflated (as np.savez_compressed writes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info))
    return out.getvalue()


def test_a_compressed_member_is_refused_before_it_expands():
    data = compressed(encode({"zeros": np.zeros(4_000_000)}))  # 32 MB of zeros in about 30 KB
    assert len(data) < 100_000
    with pytest.raises(CheckpointFormatError, match="compressed"):
        decode(data)


def test_a_header_claiming_more_than_is_stored_is_refused_before_allocating():
    """An .npy member whose header says 10^12 float64s (8 TB) over 8 stored bytes."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(checkpoint_bytes({"array": 0}))) as source, zipfile.ZipFile(out, "w") as target:
        target.writestr("tree.npy", source.read("tree.npy"))
        target.writestr("a0.npy", header.getvalue() + b"\0" * 8)  # the header holds the magic string
    with pytest.raises(CheckpointFormatError, match=r"shape \(1000000000000,\) and dtype float64, which need \d+ bytes"):
        decode(out.getvalue())


def test_a_frame_that_would_expand_is_refused_and_a_real_one_reads():
    rows = pd.DataFrame({"s": ["x" * 1000] * 200_000})  # 200 MB of strings, one dictionary value on disk
    buffer = io.BytesIO()
    rows.to_parquet(buffer)  # pandas' default: dictionary-encoded, compressed
    parquet = np.frombuffer(buffer.getvalue(), dtype=np.uint8)
    assert parquet.size < 100_000
    with pytest.raises(CheckpointFormatError, match="would take"):
        decode(checkpoint_bytes({"frame": 0, "series": False}, a0=parquet))
    frame = pd.DataFrame({"a": np.arange(1000.0), "b": ["name"] * 1000, "c": [True, False] * 500})
    pd.testing.assert_frame_equal(decode(encode(frame)), frame)


def _checkpointed(ctx):
    kept = ctx.checkpoint(("configurations", ctx.seed), lambda: {"value": np.arange(3.0)})
    return rules.deterministic(kept["value"], [5.0, 5.0, 5.0]).as_verdict("KEPT.X", ctx)


@pytest.fixture
def checkpointed_run(plugins, tmp_path):
    """A finished verify run of a claim that keeps a checkpoint (partial/*.npz)."""
    plugins(FakeEntryPoint("kept", "kept", [Claim("KEPT.X", "values below 5", check=_checkpointed)]))
    out = tmp_path / "run"
    assert main(["verify", "KEPT.X", "--scale", "smoke", "--out", str(out)]) == 0
    (stored,) = (out / "partial").glob("*.npz")
    return out, stored


@pytest.mark.parametrize("damage, words", [
    (lambda path: path.write_bytes(pickle.dumps({"a": 1})), "not a cflbounds checkpoint"),
    (lambda path: path.write_bytes(compressed(path.read_bytes())), "is compressed"),
    (lambda path: path.write_bytes(path.read_bytes()[:200]), "not a cflbounds checkpoint"),
    (lambda path: path.write_bytes(checkpoint_bytes({"dataclass": "os.system('x')", "fields": {}})),
     "os.system('x')\", which is not a class's name"),
    (lambda path: path.write_bytes(checkpoint_bytes({"array": 7})), "missing array 7"),
    (lambda path: (path.unlink(), os.mkfifo(path)), "not a regular file"),
])
def test_resume_refuses_a_bad_checkpoint_naming_it_before_any_work(checkpointed_run, capsys, damage, words):
    out, stored = checkpointed_run
    damage(stored)
    record = (out / "verdicts.json").read_text()
    capsys.readouterr()
    line = one_line_error(capsys, ["verify", "KEPT.X", "--scale", "smoke", "--out", out, "--resume"], str(stored),
                          words, "delete it")
    assert "KEPT.X" not in line.split(str(stored))[0]  # the file is named, not the plugin's line
    assert (out / "verdicts.json").read_text() == record  # refused before the run was opened


def test_a_checkpoint_damaged_during_a_run_is_the_claims_error_naming_the_file(checkpointed_run, tmp_path):
    out, stored = checkpointed_run
    stored.write_bytes(compressed(stored.read_bytes()))
    (result,) = verify_claims(["KEPT.X"], VerifyContext(scale="smoke", seed=0, workdir=out))
    assert result.verdict == "error" and str(stored) in result.summary and "compressed" in result.summary


# -- JSON files: one line naming the file and the field -------------------------------------------------------
def record_text(**changes) -> str:
    return json.dumps({"metadata": {"scale": "smoke"}, "verdicts": [verdict(**changes)]})


HUGE_INTEGER = '{"metadata": {}, "verdicts": [{"id": "A.B", "verdict": "holds", "evidence": {}, "seed": ' + "9" * 5000 + \
    ', "trials": 1, "confidence": 1}]}'
CRAFTED_RECORDS = {
    "seconds a string": (record_text(seconds="abc"), "verdicts[0].seconds: 'abc' is not a number of seconds"),
    "assumption rows integers": (record_text(assumptions=[1, 2]), "verdicts[0].assumptions[0]: 1 is not an assumption"),
    "a series a string": (record_text(plot=[{"kind": "line", "x": [1], "series": [{"y": "abc"}]}]),
                          "verdicts[0].plot[0].series[0].y: 'abc' is not"),
    "an invalid colour": (record_text(plot=[{"kind": "line", "x": [1], "series": [{"y": [1], "color": "blurple"}]}]),
                          "verdicts[0].plot[0].series[0].color: 'blurple' is not a colour matplotlib draws"),
    "an invalid marker": (record_text(plot=[{"kind": "line", "x": [1], "series": [{"y": [1], "marker": "$\\x$"}]}]),
                          "series[0].marker"),
    "a 5000-digit integer": (HUGE_INTEGER, "an integer of 5000 digits"),
    "100k-deep nesting": ('{"metadata": {}, "verdicts": ' + "[" * 100_000 + "]" * 100_000 + "}",
                          "nested deeper than 32 levels"),
    "a number for the device": (json.dumps({"metadata": {"device": 3}, "verdicts": [verdict()]}),
                                "metadata.device: 3 is not a device"),
    "a long detail": (record_text(details={"note": "x" * 200_000}),
                      "verdicts[0].details.note: a string of 200000 characters (at most 100000)"),
    "a figure 1e4 inches high": (record_text(plot=[{"kind": "line", "x": [1], "series": [{"y": [1]}], "height": 1e4}]),
                                 "verdicts[0].plot[0].height: 10000.0 is not a height in inches, in (0, 10]"),
    "NaN evidence": (record_text().replace('"margin": 0.5', '"margin": NaN'), "NaN is not JSON"),
    "a seed beyond 63 bits": (record_text(seed=2**64), "verdicts[0].seed: 18446744073709551616 is not a seed"),
    "a verdict without trials": (json.dumps({"metadata": {}, "verdicts": [{k: v for k, v in verdict().items()
                                                                          if k != "trials"}]}),
                                 "verdicts[0]: has no 'trials'"),
    "an ID with a newline": (record_text(id="A.B\n"), "verdicts[0].id: 'A.B\\n' is not a claim ID"),
    "a float beyond a double": (record_text().replace('"margin": 0.5', '"margin": 1e999'), "too large for a float"),
}


@pytest.mark.parametrize("content, words", CRAFTED_RECORDS.values(), ids=CRAFTED_RECORDS)
def test_report_refuses_a_crafted_record_in_one_line(capsys, tmp_path, content, words):
    (tmp_path / "verdicts.json").write_text(content)
    line = one_line_error(capsys, ["report", tmp_path], str(tmp_path / "verdicts.json"), words)
    assert len(line) < 400  # the value is named, never printed whole
    assert not (tmp_path / "report.pdf").exists()


def test_a_file_larger_than_the_limit_is_refused_unread(capsys, tmp_path):
    with open(tmp_path / "verdicts.json", "wb") as file:
        file.truncate(200 * 2**20)  # 200 MB (sparse): refused by its size, never read
    one_line_error(capsys, ["report", tmp_path], "209715200 bytes, more than the 67108864")


def test_a_fifo_where_the_record_belongs_is_refused_not_waited_on(tmp_path):
    """In a child process with a time limit: a report that opened the FIFO would wait for a writer."""
    os.mkfifo(tmp_path / "verdicts.json")
    done = subprocess.run([sys.executable, "-m", "cflbounds.cli", "report", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().endswith("not a regular file (a FIFO, a device or a directory "
                                                                 "is never read) (expected the JSON `cflbounds verify`"
                                                                 " writes)."), done.stderr


def test_verify_resume_refuses_a_crafted_record_before_any_work(capsys, tmp_path, monkeypatch):
    from cflbounds.verify import run as verify_run

    monkeypatch.setattr(verify_run, "verify_claims", lambda *a, **k: pytest.fail("work started"))
    for content, words in (CRAFTED_RECORDS["NaN evidence"], CRAFTED_RECORDS["a verdict without trials"]):
        write_record(tmp_path, [])
        (tmp_path / "verdicts.json").write_text(content)
        one_line_error(capsys, ["verify", "IFCA.A2", "--scale", "smoke", "--out", tmp_path, "--resume"], words)


def falsify_result(**changes) -> dict:
    return {"id": "TOY.LINE", "outcome": "no counterexample found", "best_ratio": 0.5, "evaluations": 4,
            "seconds": 1.0, "seed": 0, "summary": "none", "counterexample": None, "confirmation": None,
            "search": {"restarts": 0, "search_seconds": 1.0, "admissible": 4, "rejected": 0}, **changes}


@pytest.mark.parametrize("changes, words", [
    ({"seconds": "abc"}, "results[0].seconds: 'abc' is not a number of seconds"),
    ({"search": {"restarts": 0, "search_seconds": 1.0, "admissible": 4, "rejected": -1}},
     "results[0].search.rejected: -1 is not a non-negative int"),
    ({"confirmation": {"trials": 3, "confidence": 2, "quantity": "q", "summary": "s", "measured": [], "bounds": []}},
     "results[0].confirmation.confidence: 2 is not a number in [0, 1]"),
])
def test_falsify_resume_and_report_refuse_a_crafted_record_before_any_work(toys, capsys, tmp_path, changes, words):  # noqa: F811
    (tmp_path / "falsify.json").write_text(json.dumps({"metadata": {}, "results": [falsify_result(**changes)]}))
    one_line_error(capsys, ["falsify", "TOY.LINE", "--evaluations", "5", "--out", tmp_path, "--resume"], words)
    one_line_error(capsys, ["report", tmp_path], words)
    assert not (tmp_path / "report.pdf").exists()


@pytest.mark.parametrize("content, words", [
    ('{"id": "TOY.LINE", "parameters": {"x": 0.5, "n": 1}, "seed": ' + "9" * 5000 + ', "ratio": 1}',
     "an integer of 5000 digits"),
    ('{"id": "TOY.LINE", "parameters": ' + "[" * 100_000 + "]" * 100_000 + ', "seed": 1, "ratio": 1}',
     "nested deeper than 32 levels"),
    ('{"id": "TOY.LINE", "parameters": {"x": 0.5, "n": 1}, "seed": 1, "ratio": "big"}', "ratio: 'big' is not a number"),
])
def test_replay_refuses_a_crafted_counterexample_in_one_line(toys, capsys, tmp_path, content, words):  # noqa: F811
    (tmp_path / "c.json").write_text(content)
    one_line_error(capsys, ["falsify", "--replay", tmp_path / "c.json"], str(tmp_path / "c.json"), words)


# -- a schema-valid file: the report is written ---------------------------------------------------------------
ODD = [
    {"kind": "line", "title": "a series shorter than its x", "x": [1, 2, 3], "series": [{"y": [1.0]}]},
    {"kind": "bar", "title": "flags for another count", "x": ["a", "b"], "series": [{"y": [1, 2], "fails": [True]}]},
    {"kind": "heatmap", "title": "ragged", "matrix": [[1, 2], [3]]},
    {"kind": "scatter", "title": "scatter", "series": [{"x": [1, 2], "y": [1]}]},
    {"kind": "rate", "x": [], "series": [{"y": [], "low": None, "high": None}], "ylim": [None, None]},
    {"kind": "line", "x": [1, 2], "series": [{"y": ["inf", "nan"], "color": "none", "marker": "", "size": None}],
     "height": 10, "xlim": [5, 1], "reference": [{"x": 1.5, "label": None}], "logx": True, "logy": True},
    {"kind": "heatmap", "series": [{"y": [1]}]},  # no matrix: nothing to draw
    {"kind": "bar", "matrix": [[1]]},  # no series: nothing to draw
]


def test_a_schema_valid_record_of_odd_figures_gets_its_report(capsys, tmp_path):
    """Figures the schema allows but that cannot be drawn as given (series and x of different
    lengths, a ragged heatmap) say why in their place; the rest is drawn."""
    write_record(tmp_path, [verdict(plot=ODD, summary="x" * 100_000, details={"traceback": "y" * 100_000})])
    assert main(["report", str(tmp_path)]) == 0, capsys.readouterr().err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count("not drawn: its series 1 has") == 3 and "not drawn: a heatmap&#x27;s rows differ" in page
    assert "(90000 more characters in the run&#x27;s file)" in page
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF")


def test_the_schema_bounds_a_figures_height_and_a_bounded_one_is_drawn(capsys, tmp_path):
    """A figure 1e4 inches high (it exhausted memory) is refused by the schema, naming the field:
    at most MAX_FIGURE_HEIGHT inches (an A4 page's text area is 10.5); 10 inches is drawn."""
    assert _schemas.MAX_FIGURE_HEIGHT == 10.0
    spec = {"kind": "line", "x": [1, 2], "series": [{"y": [1, 2]}]}
    write_record(tmp_path, [verdict(plot=[{**spec, "height": 1e4}])])
    one_line_error(capsys, ["report", tmp_path], "verdicts[0].plot[0].height: 10000.0 is not a height")
    write_record(tmp_path, [verdict(plot=[{**spec, "height": 10}])])
    assert main(["report", str(tmp_path)]) == 0


# -- copy buttons: every argument quoted --------------------------------------------------------------------
def shell_run(command: str, directory: Path) -> list[str]:
    """Run ``command`` with a POSIX shell in ``directory``, ``cflbounds`` being a script that
    prints its arguments one per line; returns them (and fails if anything was executed)."""
    fake = directory / "bin" / "cflbounds"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    fake.chmod(0o755)
    done = subprocess.run(["sh", "-c", command], cwd=directory, capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    assert not (directory / "pwned").exists(), command
    return done.stdout.splitlines()


def test_a_command_built_from_a_runs_files_runs_nothing_it_holds(tmp_path):
    from cflbounds.falsify.outputs import falsify_command, replay_command

    command = verify_command({"id": SHELL, "scale": "smoke; touch pwned", "seed": SHELL}, "cuda `touch pwned`")
    assert shell_run(command, tmp_path) == ["verify", SHELL, "--scale", "smoke; touch pwned", "--seed", SHELL,
                                            "--device", "cuda"]
    command = falsify_command(SHELL, {"seed": SHELL, "max_evaluations": "5 && touch pwned"})
    assert shell_run(command, tmp_path) == ["falsify", SHELL, "--evaluations", "5 && touch pwned", "--seed", SHELL]
    assert shell_run(replay_command(f"runs/{SHELL}.json"), tmp_path) == ["falsify", "--replay", f"runs/{SHELL}.json"]
    for stored in (f"cflbounds falsify --replay {SHELL}", f"cflbounds falsify --replay '{SHELL}'",
                   "cflbounds falsify --replay a'b"):
        assert shell_run(replay_code(stored), tmp_path)[:2] == ["falsify", "--replay"]
    assert replay_code("rm -rf ~; cflbounds falsify --replay x") is None  # not a replay command: shown as text


def test_the_reports_copy_buttons_run_nothing_from_the_file(capsys, tmp_path):
    search = {"outcome": "violated", "replay": f"cflbounds falsify --replay {SHELL}",
              "counterexample": {"parameters": {"x": 1.0}, "seed": 1}}
    write_record(tmp_path / "run", [verdict(scale=f"smoke{SHELL}", search=search, designed={"verdict": "holds"},
                                            details={"replay": "cflbounds falsify --replay `touch pwned`"})],
                 {"command": ["cflbounds", "verify", SHELL], "device": "cuda"})
    assert main(["report", str(tmp_path / "run")]) == 0, capsys.readouterr().err
    document = html5lib.parse((tmp_path / "run" / "report.html").read_text(encoding="utf-8"),
                              namespaceHTMLElements=False)
    commands = [div.find("pre/code").text for div in document.iter("div") if div.get("class") == "command"]
    assert len(commands) == 3
    for command in commands:
        shell_run(command, tmp_path)


# -- --markdown: inert -------------------------------------------------------------------------------------
MARKDOWN_PAYLOAD = "<img src=x onerror=alert(1)> a | b \x1b[2J\x1b]0;title\x07 line\nbreak &amp;"


def test_markdown_tables_are_inert():
    row = verdict_table([{"id": MARKDOWN_PAYLOAD, "verdict": "holds",
                          "designed": {"verdict": MARKDOWN_PAYLOAD}}]).splitlines()[2]
    assert "<img" not in row and "\x1b" not in row and "\x07" not in row and row.count("|") == 5
    assert "&lt;img src=x onerror=alert(1)> a &#124; b" in row and "line break &amp;amp;" in row
    row = search_table([{"id": "X.Y", "outcome": "violated", "best_ratio": 2.0, "evaluations": 3, "seconds": 1.0,
                         "counterexample": {"parameters": {MARKDOWN_PAYLOAD: 1}}}]).splitlines()[2]
    assert "<img" not in row and "\x1b" not in row and row.count("|") == 5


def test_claims_markdown_is_inert(plugins, capsys):
    plugins(FakeEntryPoint("evil", "evil", [Claim("EVIL.X", f"statement {MARKDOWN_PAYLOAD}", check=_checkpointed,
                                                  no_domain=MARKDOWN_PAYLOAD)]))
    assert main(["claims", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "<img" not in out and "\x1b" not in out and "\x07" not in out
    (row,) = [line for line in out.splitlines() if line.startswith("| EVIL.X")]
    assert row.count("|") == 6


# -- out-of-range options, refused up front -------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["verify", "IFCA.A2", "--seed", str(2**64)], "'--seed' option must be a non-negative int of at most 63 bits"),
    (["verify", "IFCA.A2", "--seed", str(2**63)], "Got 9223372036854775808 instead"),
    (["verify", "IFCA.A2", "--search", "1e308"], "--search: must be a number >= 0 and <= 604800"),
    (["verify", "IFCA.A2", "--search-evaluations", str(10**23)], "--search-evaluations: must be an int >= 0 and <="),
    (["falsify", "FC.T1", "--seed", "18446744073709551616"], "'--seed' option must be a non-negative int"),
    (["falsify", "FC.T1", "--budget", "1e308"], "--budget: must be a number > 0 and <= 604800"),
    (["falsify", "FC.T1", "--evaluations", str(10**23)], "--evaluations: must be an int > 0 and <= 10000000"),
    (["sweep", "ifca-fig2", "--seed", str(2**64)], "'--seed' option must be a non-negative int"),
])
def test_out_of_range_options_are_refused_before_any_work(capsys, tmp_path, argv, words):
    one_line_error(capsys, [*argv, "--out", tmp_path / "out"], words)
    assert not (tmp_path / "out").exists()


def test_the_largest_seed_is_taken(capsys, tmp_path):
    assert main(["verify", "IFCA.A2", "--scale", "smoke", "--seed", str(2**63 - 1), "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "verdicts.json").read_text())["metadata"]["seed"] == 2**63 - 1


def test_the_pytest_plugins_seed_is_checked(pytester):
    result = pytester.runpytest("--cflbounds", "IFCA.A2", "--cflbounds-seed", str(2**64), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--cflbounds-seed: must be an int in [[]0, 2^63 - 1]. Got '18446744073709551616'*"])


# -- nothing a file holds is executed; every text escaped ---------------------------------------------------
class _Payload:
    def __reduce__(self):
        return (open, (str(Path.cwd() / "pwned"), "w"))


def test_a_parquet_naming_a_pickled_extension_type_is_read_as_data(tmp_path, monkeypatch):
    """CVE-2023-47248: a Parquet file whose schema names pyarrow's pickle-based extension type
    (its payload a pickle that would create a file) is read as its storage (bytes), never unpickled:
    pyarrow >= 14.0.1, as pyproject requires; in a frame inside a checkpoint too."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.chdir(tmp_path)
    field = pa.field("x", pa.binary(), metadata={b"ARROW:extension:name": b"arrow.py_extension_type",
                                                  b"ARROW:extension:metadata": pickle.dumps(_Payload())})
    pq.write_table(pa.table({"x": pa.array([b"a"])}, schema=pa.schema([field])), tmp_path / "t.parquet")
    assert pd.read_parquet(tmp_path / "t.parquet")["x"].tolist() == [b"a"]
    frame = np.frombuffer((tmp_path / "t.parquet").read_bytes(), dtype=np.uint8)
    assert decode(checkpoint_bytes({"frame": 0, "series": True}, a0=frame)).tolist() == [b"a"]
    assert not (tmp_path / "pwned").exists()


def test_code_in_a_counterexample_is_data_in_the_replay_and_the_emitted_test(toys, capsys, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)
    code = "__import__('os').system('touch pwned')"
    record = {"id": "TOY.LINE", "parameters": {"x": 0.5, "n": 3}, "seed": 1, "ratio": 0.5, "search_seed": 0,
              "device": f"'); {code}; ('", "details": {code: f'"""{code}"""'},
              "assumptions": [{"name": code, "lhs": 1, "relation": "<=", "rhs": 2, "slack": 1, "holds": True}]}
    (tmp_path / "c.json").write_text(json.dumps(record))
    assert main(["falsify", "--replay", "c.json", "--emit-test", "emitted.py"]) == 2  # the device: refused, not run
    assert "c.json: The 'device' parameter must be" in capsys.readouterr().err and not (tmp_path / "pwned").exists()
    (tmp_path / "c.json").write_text(json.dumps({**record, "device": "cpu"}))
    assert main(["falsify", "--replay", "c.json", "--emit-test", "emitted.py"]) == 0, capsys.readouterr().err
    emitted = (tmp_path / "emitted.py").read_text()
    done = subprocess.run([sys.executable, "-c", "import runpy; runpy.run_path('emitted.py')"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not (tmp_path / "pwned").exists()  # never run (the emitted test keeps the claim, point, seed and device)
    assert "cpu" in emitted


def test_every_text_of_a_crafted_record_is_escaped_in_report_html(capsys, tmp_path):
    """Statement, summary, evidence (names and values), details, assumption rows, a point's
    parameter names, figure titles, labels and notes: all text in report.html (figures' text
    drawn as paths), none of it markup."""
    spec = {"kind": "bar", "title": PAYLOAD, "xlabel": PAYLOAD, "ylabel": PAYLOAD, "note": PAYLOAD, "x": [PAYLOAD],
            "series": [{"label": PAYLOAD, "y": [1.0]}, {"label": "b", "y": [2.0]}],
            "reference": [{"y": 1.0, "label": PAYLOAD}]}
    search = {"outcome": "violated", "summary": PAYLOAD, "coverage": None,
              "counterexample": {"parameters": {PAYLOAD: 1.0}, "seed": 1, "measured": 2.0, "bound": 1.0}}
    record = [verdict(claim_id="EVIL.X", statement=PAYLOAD, summary=PAYLOAD, evidence={PAYLOAD: PAYLOAD},
                      details={PAYLOAD: PAYLOAD, "error_traceback": PAYLOAD, "error_message": PAYLOAD},
                      assumptions=[{"name": PAYLOAD, "lhs": 1, "relation": "<=", "rhs": 2, "slack": 1, "holds": True,
                                    "source": PAYLOAD}], plot=[spec], scale=PAYLOAD, search=search,
                      designed={"verdict": "holds", "summary": PAYLOAD})]
    write_record(tmp_path, record, {"command": [PAYLOAD], "device": PAYLOAD, "cflbounds": PAYLOAD})
    assert main(["report", str(tmp_path)]) == 0, capsys.readouterr().err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    document = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(page)
    assert [element.tag for element in document.iter() if element.tag in ("img", "iframe", "object")] == []
    assert len(list(document.iter("script"))) == 1  # the page's own
    assert not [name for element in document.iter() for name in element.attrib if name.startswith("on")]
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 8


# -- the schemas' words are the code's ------------------------------------------------------------------------
def test_the_schemas_enumerations_are_the_codes():
    from cflbounds.bounds._report import _RELATIONS
    from cflbounds.falsify.judge import NOT_RUN
    from cflbounds.falsify.run import OUTCOMES
    from cflbounds.reports.figures import _STYLES
    from cflbounds.verify.verdict import VERDICTS

    assert set(_schemas.VERDICT_WORDS) == set(VERDICTS) and set(_schemas.OUTCOME_WORDS) == set(OUTCOMES)
    assert _schemas.NOT_RUN == NOT_RUN and set(_schemas.RELATIONS) == set(_RELATIONS)
    assert set(_schemas.PLOT_STYLES) == set(_STYLES)
    assert all(math.isnan(float(word)) or math.isinf(float(word)) for word in _schemas.NON_FINITE)


def test_the_files_cflbounds_writes_meet_their_schemas(checkpointed_run, toys, capsys, tmp_path):  # noqa: F811
    """What verify and falsify write (a claim with a figure, a domain's search, a counterexample)
    reads back through the schemas, as the reports and --resume read it."""
    from cflbounds._read_json import read_json
    from cflbounds.falsify.outputs import read_falsify_record
    from cflbounds.verify.record import read_record

    out, _ = checkpointed_run
    assert read_record(out / "verdicts.json")["verdicts"][0]["id"] == "KEPT.X"
    assert main(["falsify", "TOY.STEEP", "--evaluations", "40", "--out", str(tmp_path / "f")]) == 0
    assert read_falsify_record(tmp_path / "f" / "falsify.json")["results"][0]["outcome"] == "violated"
    read_json(tmp_path / "f" / "counterexamples" / "TOY.STEEP.json", _schemas.COUNTEREXAMPLE_FILE, what="x")
