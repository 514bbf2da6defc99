"""The ``cflbounds`` command: claims, bound, verify, sweep, report; exit codes 0/1/2.

Most tests call ``cflbounds.cli.main`` in-process; two run the installed command in a
subprocess to check the entry point itself.
"""
import argparse
import contextlib
import inspect
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cflbounds
import cflbounds.papers.ifca.theory as ifca_checks
from cflbounds.bounds import ifca as bounds
from cflbounds.cli import main
from cflbounds.cli._common import table
from cflbounds.verify.registry import CLAIMS
from conftest import GOVERNOR_SET



DATA = Path(__file__).parent / "data"
PAGE = re.compile(rb"/Type\s*/Page[^s]")
REQUIRED = {"id", "verdict", "evidence", "seed", "trials", "confidence"}


def catalog_ids() -> list[str]:
    """Every claim ID of CLAIMS.md: bullets ``- IFCA.T1 — ...``, several per line allowed
    (``- IFCA.A1 — ... IFCA.A2 — ...``)."""
    ids = []
    for line in (DATA / "CLAIMS.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("- "):
            ids += re.findall(r"(?<![\w.])([A-Z]+\.[A-Za-z0-9]+(?:-[0-9]+)?) —", line)
    return ids


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(code, err, *names):
    """Exit 2 with exactly one line on stderr, naming the parameter, and no traceback."""
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for name in names:
        assert name in lines[0], (name, lines[0])


def pages(path: Path) -> int:
    return len(PAGE.findall(path.read_bytes()))


# -- claims -------------------------------------------------------------------------------------
def test_catalog_parse_finds_every_paper():
    ids = catalog_ids()
    assert len(ids) == len(set(ids)) >= 29
    assert {"IFCA.A1", "IFCA.A2", "IFCA.A3-6", "IFCA.T2c", "MGD.A1-5", "DSC.E14"} <= set(ids)
    assert {i.split(".")[0] for i in ids} == {"IFCA", "MGD", "FC", "LCFL", "DSC"}


def test_claims_json_lists_every_catalog_id(capsys):
    code, out, err = run(capsys, "claims", "--json")
    assert code == 0 and err == ""
    rows = json.loads(out)
    listed = {row["id"] for row in rows}
    missing = [i for i in catalog_ids() if i not in listed]
    assert not missing, f"claims missing from `cflbounds claims`: {missing}"
    for row in rows:
        assert row["status"] in ("implemented", "not implemented") and row["statement"]
        assert row["paper"] == CLAIMS[row["id"]].paper and row["paper"] in {
            "IFCA", "CFL-MGD", "FedCluster", "LCFL", "DSC", "FedAvg", "LocalGD", "SCAFFOLD", "FedProx", "CFL"}
        assert row["package"] == "cflbounds" and row["reference"]  # the papers come through the entry point too
    implemented = {row["id"] for row in rows if row["status"] == "implemented"}
    assert {"IFCA.A2", "IFCA.T1", "IFCA.T2c", "IFCA.C1", "IFCA.F2"} <= implemented


def test_claims_table_fits_the_terminal_and_loses_nothing(capsys, monkeypatch):
    """Each statement is wrapped under its column, never cut: joined back it is the whole
    statement (IFCA.T2's too), and no line is wider than the terminal."""
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(capsys, "claims")
    lines = out.splitlines()
    assert code == 0 and all(len(line) <= 80 for line in lines)
    assert lines[0].split() == ["id", "paper", "package", "checked", "by", "statement"]
    indent = lines[1].rindex(" ") + 1  # where the statement column starts
    rows, current = {}, None
    for line in lines[2:2 + lines[2:].index("") if "" in lines else None]:  # then: why some cannot be falsified
        if line[:indent].strip():
            current = line.split()[0]
            rows[current] = [line.split()[1], line.split()[2], line[indent:]]
        else:
            rows[current][2] += " " + line[indent:]
    for claim in CLAIMS.values():
        assert rows[claim.id] == [claim.paper, claim.package, claim.statement]
    assert rows["MGD.T1"][0] == "CFL-MGD" and rows["FC.H"][0] == "FedCluster"


@pytest.mark.parametrize("width", [30, 60, 100])
def test_table_wraps_the_last_column_under_itself_and_cuts_nothing(width):
    """The last column wraps under itself (at 30 columns too: 25 are left for it), never cut and
    nothing added (a "~" would read as the papers' "<~"); a word longer than the room stays whole
    on a line of its own, the only line wider than the width (more: tests/test_output_width.py)."""
    header, rows = ["key", "text"], [["a", "one two three " * 12], ["bb", ""], ["c", "x" * 150]]
    lines = table(header, rows, width).splitlines()
    assert lines[0] == "key  text" and lines[1].startswith("---  ----")
    assert [line for line in lines if len(line) > width] == [line for line in lines if "x" * 150 in line]
    continuation = [line for line in lines[2:] if line.startswith("     ")]
    assert continuation and all(line[:5] == "     " for line in continuation)
    text = " ".join(line[5:] for line in lines[2:] if not line.startswith("bb")).replace(" ", "")
    assert text == "".join(row[1] for row in rows).replace(" ", "")


def test_claims_markdown_has_the_paper_column(capsys):
    """The Markdown table has the terminal table's columns (the README shows what the command prints)."""
    code, out, _ = run(capsys, "claims", "--markdown")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "| id | paper | package | checked by | statement |"
    assert lines[2].startswith("| IFCA.A1 | IFCA | cflbounds | verify | ")
    assert any(line.startswith("| FC.T1 | FedCluster | cflbounds | verify, falsify | ") for line in lines)
    assert any(line.startswith("| IFCA.T2 | IFCA | cflbounds | - | ") for line in lines)
    assert lines[2 + len(CLAIMS):3 + len(CLAIMS)] in ([], [""])  # then: why some claims cannot be falsified


def test_the_claims_page_is_generated_by_claims_markdown(capsys):
    """docs/claims.md says its catalogue is `cflbounds claims --markdown`: a changed statement or
    claim must regenerate it."""
    code, out, _ = run(capsys, "claims", "--markdown")
    page = (Path(__file__).parents[1] / "docs" / "claims.md").read_text(encoding="utf-8")
    assert code == 0 and out.strip() in page


def test_the_falsify_page_lists_every_domain():
    """docs/falsify.md's table of what each search varies is the registry's domains (falsify's
    --help names the page instead of printing the table)."""
    rows = ["| claim | what its search varies |", "|---|---|"] + [
        f"| {claim.id} | {claim.domain.note.replace('|', '&#124;')} |" for claim in CLAIMS.values() if claim.domain]
    page = (Path(__file__).parents[1] / "docs" / "falsify.md").read_text(encoding="utf-8")
    assert "<!-- domains:start -->\n" + "\n".join(rows) + "\n<!-- domains:end -->" in page


def test_the_readme_claim_table_has_every_claim_in_order_with_its_three_readings():
    """The README's claim table is `cflbounds report DIR --markdown` of a default verify run: a
    row per implemented claim of the five papers, in the registry's order, with the designed
    verdict, the search and the final verdict (a claim added or renamed must regenerate it)."""
    from cflbounds.reports.markdown import COLUMNS

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme.split("<!-- claim-table:start -->\n", 1)[1].split("<!-- claim-table:end -->", 1)[0]
    lines = table.strip().splitlines()
    assert lines[0] == "| " + " | ".join(COLUMNS) + " |"
    rows = [line.split(" | ") for line in lines[2:]]
    from cflbounds.verify.run import implemented_claims

    implemented = implemented_claims()  # the five papers' (conftest.py hides installed plugins)
    assert [row[0].lstrip("| ") for row in rows] == implemented
    words = {"holds", "violated", "vacuous", "unsatisfiable", "inconclusive", "rate-consistent", "rate-inconsistent",
             "error"}
    assert all(row[1] in words and row[3].strip(" |*") in words for row in rows)


def test_claims_json_and_markdown_are_exclusive(capsys):
    code, out, err = run(capsys, "claims", "--json", "--markdown")
    assert_usage_error(code, err, "--markdown", "--json")
    assert out == ""


def test_installed_entry_point_lists_claims():
    command = Path(sys.executable).with_name("cflbounds")
    argv = [str(command)] if command.exists() else [sys.executable, "-m", "cflbounds.cli"]
    result = subprocess.run(argv + ["claims", "--json"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    listed = {row["id"] for row in json.loads(result.stdout)}
    assert set(catalog_ids()) <= listed


def test_module_entry_point_usage_error_has_no_traceback():
    result = subprocess.run([sys.executable, "-m", "cflbounds.cli", "bound", "IFCA.C1", "--sigma", "-1"],
                            capture_output=True, text=True, timeout=120)
    assert_usage_error(result.returncode, result.stderr, "'sigma'", "[0, inf)")
    assert result.stdout == ""


def test_closed_output_pipe_stops_quietly(monkeypatch, capfd, tmp_path):
    """`cflbounds claims | head`: the reader leaving is not an error with a traceback."""
    import cflbounds.cli.claims as claims_command

    def reader_left(args):
        raise BrokenPipeError

    monkeypatch.setattr(claims_command, "run", reader_left)
    # main() points stdout's descriptor at /dev/null; give it a file of its own, not the
    # descriptor pytest captures through (before pytest 9.2 that silenced the rest of the session)
    with (tmp_path / "stdout").open("w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        assert main(["claims"]) == 141
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("argv", [["verify", "IFCA.A2"], ["sweep", "ifca-fig2"]])
@pytest.mark.parametrize("threads", ["0", "100000", str((os.cpu_count() or 1) + 1), "two", ""])
def test_threads_beyond_the_cpu_count_is_one_line_before_any_work(capsys, tmp_path, monkeypatch, argv, threads):
    """``--threads 100000`` used to start 100000 OpenMP threads and die in an ImportError."""
    import torch

    calls = []
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    code, out, err = run(capsys, *argv, "--threads", threads, "--out", tmp_path / "out")
    assert_usage_error(code, err, "--threads", repr(threads), "'auto'", f"[1, {os.cpu_count()}]")
    assert calls == [] and out == "" and not (tmp_path / "out").exists()


@pytest.mark.parametrize("others, expected", [(0.0, 2), (0.4, 2), (0.6, 1), (1.0, 1), (1.7, 1)])
def test_auto_threads_leave_the_cores_others_use(monkeypatch, others, expected):
    """--threads auto (the default): torch gets the cores other processes leave free, at least one;
    judged again between claims, so a neighbour that appears mid-run is followed."""
    import torch

    import cflbounds._threads as threads_module

    monkeypatch.setattr(threads_module.os, "cpu_count", lambda: 2)
    readings = iter([others, 0.0])
    monkeypatch.setattr(threads_module.OtherLoad, "cores", lambda self: next(readings))
    chosen = []
    monkeypatch.setattr(torch, "set_num_threads", chosen.append)
    monkeypatch.setattr(threads_module.ThreadGovernor, "_set", GOVERNOR_SET)  # the session records only
    monkeypatch.setitem(threads_module._FOLLOWED, "pinned", False)  # the governor pins a count given: undone after
    monkeypatch.setitem(threads_module._FOLLOWED, "free", None)  # the governor's judgments: undone after
    governor = threads_module.ThreadGovernor("auto")
    governor.adjust()  # the neighbour has gone
    assert chosen == [expected, 2] and governor.chosen == ([2] if expected == 2 else [1, 2])
    fixed = threads_module.ThreadGovernor(1)
    fixed.adjust()  # a count given is kept
    assert chosen[-1] == 1 and fixed.chosen == [1]


def test_other_load_reads_the_machine_minus_this_process(monkeypatch):
    """Cores used by others = (machine busy ticks - this process's ticks) / total ticks x CPUs."""
    import cflbounds._threads as threads_module

    machine = iter([(100, 400), (100 + 150, 400 + 200)])  # 150 of 200 ticks busy over 2 CPUs: 1.5 cores
    own = iter([10, 10 + 50])  # this process used 50 of them: others 100/200 x 2 = 1 core
    monkeypatch.setattr(threads_module, "_machine_busy_ticks", lambda: next(machine))
    monkeypatch.setattr(threads_module, "_own_ticks", lambda: next(own))
    monkeypatch.setattr(threads_module.os, "cpu_count", lambda: 2)
    assert threads_module.OtherLoad().cores() == pytest.approx(1.0)


# -- bound --------------------------------------------------------------------------------------
def test_bound_help_lists_every_formula_and_list_gives_their_statements(capsys, monkeypatch):
    """`bound --help` names every formula's claim ID; `bound --list` gives each with its
    statement (what a newcomer reads, not a Python function name)."""
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["bound", "--help"]) == 0
    helped = " ".join(capsys.readouterr().out.split())
    assert main(["bound", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(len(line) <= 100 for line in listed.splitlines())
    flat = " ".join(listed.split())
    for claim in CLAIMS.values():
        if claim.bound is not None:
            assert f"{claim.id} {claim.statement}" in flat and re.search(rf" {re.escape(claim.id)}[,.]", helped)
    assert "corollary1" not in listed + helped


@pytest.mark.parametrize("claim_id", [claim.id for claim in CLAIMS.values() if claim.bound is not None])
def test_bound_id_help_defines_every_parameter(capsys, monkeypatch, claim_id):
    """Generic over the registry: every parameter of every formula has a description in its
    function's docstring (numpydoc ``Parameters``), and ``bound ID --help`` shows it with the
    parameter's range as people write it."""
    from cflbounds._validation import describe
    from cflbounds.bounds._docstring import parameter_descriptions

    monkeypatch.setenv("COLUMNS", "2000")  # one line per option: the description is found whole
    function = CLAIMS[claim_id].bound
    described = parameter_descriptions(function)
    constraints = function.parameter_constraints
    assert main(["bound", claim_id, "--help"]) == 0
    text = capsys.readouterr().out
    entries = re.split(r"\n(?=  -)", text)  # one per option, its help on the same or the following lines
    for name, parameter in inspect.signature(function).parameters.items():
        assert described.get(name), f"{claim_id}: parameter {name!r} has no description in its docstring"
        entry = " ".join(next(e for e in entries if e.lstrip().startswith(_flag(name) + " ")).split())
        assert described[name].rstrip(".") in entry and describe(name, constraints[name]) in entry, entry
        assert ("(required;" in entry) == (parameter.default is inspect.Parameter.empty), entry
    assert "Interval(" not in text and "in the range" not in text


def test_bound_c1_help_reads_like_the_paper(capsys):
    assert main(["bound", "IFCA.C1", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "IFCA.C1 (IFCA): Corollary 1" in text
    for phrase in ("sigma >= 0", "0 < p <= 1", "n_prime >= 1", "1 <= m <= 2^53 (integer)",
                   "smallest cluster proportion", "rho = Delta^2/sigma^2", "x >~ y is checked as x >= C y",
                   "(required; sigma >= 0)", "(default 1.0; c5 > 0)"):
        assert phrase in text, phrase


def test_parameter_descriptions_parser():
    """The tiny numpydoc reader: shared entries, continuation lines, other sections ignored."""
    from cflbounds.bounds._docstring import parameter_descriptions, statement

    def formula(a, b, c):
        """Claim.

            x <= y.

        A note.

        Parameters
        ----------
        a : float
            first
            line two
        b, c : int
            both of ``b`` and c

        Returns
        -------
        z : float
            not a parameter
        """

    assert parameter_descriptions(formula) == {"a": "first line two", "b": "both of b and c (this one: b, of b, c)",
                                               "c": "both of b and c (this one: c, of b, c)"}
    assert statement(formula.__doc__) == "Claim. x <= y."
    assert parameter_descriptions(lambda: None) == {}


def test_bound_without_an_id_is_one_line(capsys):
    assert main(["bound"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "claim ID is missing" in err


C1_VALID = {"sigma": "0.1", "p": "0.5", "d": "10", "m": "40", "n_prime": "20", "separation": "1"}
C1_NUMERIC = ["sigma", "p", "d", "m", "n_prime", "separation", "max_center_norm", "c1", "c4", "c5", "c6", "C", "c"]
ZERO_ALLOWED = {"sigma", "max_center_norm"}
INTEGER = {"d", "m"}


def _flag(name):
    return f"--{name.replace('_', '-')}"


def _c1_args(**changes):
    values = {**C1_VALID, **changes}
    return ["bound", "IFCA.C1"] + [f"{_flag(name)}={value}" for name, value in values.items()]


def test_bound_c1_negative_sigma_is_one_line(capsys):
    code, out, err = run(capsys, "bound", "IFCA.C1", "--sigma", "-1")
    assert_usage_error(code, err, "'sigma'", "[0, inf)", "-1")
    assert out == ""


def test_bound_c1_numeric_options_are_the_signature():
    signature = inspect.signature(bounds.corollary1)
    numeric = [n for n, p in signature.parameters.items() if not isinstance(p.default, str)]
    assert numeric == C1_NUMERIC  # a new option must join the invalid-value test below


INVALID = [(name, value) for name in C1_NUMERIC
           for value in ["-1", "nan", "abc", "inf", "-inf"] + ([] if name in ZERO_ALLOWED else ["0"])
           + (["2.5"] if name in INTEGER else []) + (["1.5"] if name == "p" else [])]


@pytest.mark.parametrize("name, value", INVALID, ids=[f"{n}={v}" for n, v in INVALID])
def test_bound_c1_every_numeric_option_rejects_invalid_values(capsys, name, value):
    code, out, err = run(capsys, *_c1_args(**{name: value}))
    assert_usage_error(code, err, f"'{name}'")
    assert out == ""


def test_bound_c1_invalid_log_base(capsys):
    code, _, err = run(capsys, *_c1_args(log_base="10"))
    assert_usage_error(code, err, "'log_base'")


@pytest.mark.parametrize("again", [["--sigma=0.2"], ["--sigma", "0.2"], ["--n_prime", "30"]],
                         ids=["same-flag", "same-flag-spaced", "other-spelling"])
def test_bound_option_given_twice_is_one_line(capsys, again):
    code, out, err = run(capsys, *_c1_args(), *again)  # _c1_args already gives --sigma and --n-prime
    assert_usage_error(code, err, "given twice")
    assert out == ""


def test_bound_c1_missing_options_are_listed(capsys):
    code, _, err = run(capsys, "bound", "IFCA.C1", "--sigma", "0.1")
    assert_usage_error(code, err, "--p", "--separation", "--n-prime")


def test_bound_c1_valid_json_matches_the_function(capsys):
    code, out, err = run(capsys, *_c1_args(), "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    expected = bounds.corollary1(sigma=0.1, p=0.5, d=10, m=40, n_prime=20, separation=1.0)
    assert data["value"] == pytest.approx(float(expected.value), rel=1e-12)
    assert data["derived"]["iterations"] == pytest.approx(float(expected.derived["iterations"]), rel=1e-12)
    assert len(data["assumptions"]) == len(expected.assumptions)
    code, out, _ = run(capsys, *_c1_args(log_base="2"), "--json")
    assert json.loads(out)["derived"]["iterations"] == pytest.approx(
        float(expected.derived["iterations"]) / 0.6931471805599453, rel=1e-12)


def test_bound_c1_vacuous_at_extremes_needs_no_iteration(capsys):
    """eps overflows to inf at sigma = 1e308, p = 1e-300: T = log(Delta/(4 eps)) was printed as
    -inf. eps >= Delta/4 means the initialisation already meets the bound: 0 iterations, vacuous."""
    code, out, err = run(capsys, *_c1_args(sigma="1e308", p="1e-300"), "--json")
    data = json.loads(out)
    assert code == 0 and err == "" and data["value"] == "inf"
    assert (data["derived"]["iterations"], data["derived"]["vacuous"], data["derived"]["samples_per_machine"]) == (
        0.0, 1.0, 0.0)
    code, out, _ = run(capsys, *_c1_args(sigma="1e308", p="1e-300"))
    assert "  iterations = 0\n" in out and "vacuous = 1" in out  # (an A2 row's slack is -inf, honestly)


def test_bound_text_output(capsys):
    code, out, _ = run(capsys, *_c1_args())
    assert code == 0 and "value = " in out and "holds" in out


@pytest.mark.parametrize("claim_id", ["NOPE.X", "IFCA.TAB1"])
def test_bound_unknown_or_formula_less_claim(capsys, claim_id):
    code, _, err = run(capsys, "bound", claim_id)
    assert_usage_error(code, err, claim_id)


# -- verify ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """``verify IFCA.T1 IFCA.C1 --scale smoke --out D --json``, run once for several tests
    (capsys is function-scoped, so the module fixture captures by redirection)."""
    out = tmp_path_factory.mktemp("verify")
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["verify", "IFCA.T1", "IFCA.C1", "--scale", "smoke", "--device", "cpu", "--out", str(out), "--json"])
    return code, stdout.getvalue(), stderr.getvalue(), out


def test_verify_writes_verdicts_and_report(verified):
    code, out, _, directory = verified
    assert code == 0
    printed = json.loads(out)
    stored = json.loads((directory / "verdicts.json").read_text())
    assert printed == stored  # --json prints the file's object: run metadata and verdicts
    stored = stored["verdicts"]
    assert [v["id"] for v in stored] == ["IFCA.T1", "IFCA.C1"]
    for verdict in stored:
        assert REQUIRED <= set(verdict)
        assert verdict["seed"] == 0 and verdict["trials"] > 0 and 0 < verdict["confidence"] <= 1
        assert all(isinstance(v, (int, float)) or v is None for v in verdict["evidence"].values())
    report = directory / "report.pdf"
    assert report.read_bytes().startswith(b"%PDF")
    assert pages(report) >= 2
    assert (directory / "tables" / "ifca_convergence.parquet").exists()


def test_report_rebuilds_a_verification(verified, capsys):
    directory = verified[3]
    before = pages(directory / "report.pdf")
    (directory / "report.pdf").unlink()
    code, out, err = run(capsys, "report", directory)
    assert code == 0 and err == ""
    assert (directory / "report.pdf").read_bytes().startswith(b"%PDF")
    assert pages(directory / "report.pdf") == before


def test_verify_unknown_claim_exits_2_before_any_work(capsys, tmp_path):
    code, out, err = run(capsys, "verify", "IFCA.T1", "NOPE.X", "--scale", "smoke", "--out", tmp_path / "v")
    assert_usage_error(code, err, "NOPE.X")
    assert not (tmp_path / "v" / "verdicts.json").exists()


@pytest.mark.parametrize("argv, name", [
    (["verify", "IFCA.A2", "--scale", "huge"], "--scale"),
    (["verify", "IFCA.A2", "--seed", "-1"], "seed"),
    (["verify", "IFCA.A2", "--seed", "abc"], "--seed"),
    (["verify", "IFCA.A2", "--bogus"], "--bogus"),
    (["nonsense"], "nonsense"),
])
def test_verify_usage_errors(capsys, tmp_path, argv, name):
    code, _, err = run(capsys, *argv, "--out", tmp_path) if argv[0] == "verify" else run(capsys, *argv)
    assert_usage_error(code, err, name)


def test_verify_strict_exits_1_on_a_planted_violation(capsys, tmp_path, monkeypatch):
    """Claim half of Thm 2's contraction factor: the measured factors (~0.5) exceed 0.47."""
    true_factor = bounds.theorem2_contraction
    monkeypatch.setattr(ifca_checks.bounds, "theorem2_contraction", lambda p, lam, L: 0.5 * true_factor(p, lam, L))
    code, out, _ = run(capsys, "verify", "IFCA.T2c", "--scale", "smoke", "--device", "cpu", "--out", tmp_path,
                       "--strict", "--json", "--isolation", "none")  # the planted factor is in this process
    assert code == 1
    assert json.loads(out)["verdicts"][0]["verdict"] == "violated"


def test_verify_strict_only_changes_the_exit_code(capsys, tmp_path, monkeypatch):
    """IFCA.A2 is instant: with ||theta*_j|| = 2 its first inequality fails (violated); exit 1
    only with --strict. Unplanted, --strict exits 0."""
    code, out, _ = run(capsys, "verify", "IFCA.A2", "--scale", "smoke", "--out", tmp_path / "ok", "--strict", "--json")
    assert code == 0 and json.loads(out)["verdicts"][0]["verdict"] == "holds"
    monkeypatch.setattr(ifca_checks, "RADIUS", 2.0)  # in this process: the claims run here (--isolation none)
    code, out, _ = run(capsys, "verify", "IFCA.A2", "--scale", "smoke", "--out", tmp_path / "lax", "--json",
                       "--isolation", "none")
    assert code == 0 and json.loads(out)["verdicts"][0]["verdict"] == "violated"
    code, _, _ = run(capsys, "verify", "IFCA.A2", "--scale", "smoke", "--out", tmp_path / "strict", "--strict",
                     "--isolation", "none")
    assert code == 1


# -- sweep / report ---------------------------------------------------------------------------
TINY = ["sweep", "ifca-fig2", "--panel", "a", "--variant", "official", "--d", "20", "--m", "8", "--n", "10",
        "--r", "0.5", "--sigma", "0.1", "--trials", "3", "--restarts", "2", "--iterations", "20", "--device", "cpu"]


def test_sweep_resume_and_report(capsys, tmp_path):
    out = tmp_path / "sweep"
    code, stdout, err = run(capsys, *TINY, "--out", out)
    assert code == 0, err
    assert stdout.startswith("1 cells computed, 0 skipped")
    cells = sorted(p.name for p in out.glob("cell-*.parquet"))
    assert len(cells) == 1 and (out / "sweep.json").exists() and (out / "report.pdf").exists()
    # a second run into the same store needs --resume
    code, _, err = run(capsys, *TINY, "--out", out)
    assert_usage_error(code, err, "--resume")
    # with --resume nothing is recomputed
    stamp = (out / cells[0]).stat().st_mtime_ns
    code, stdout, _ = run(capsys, *TINY, "--out", out, "--resume")
    assert code == 0 and stdout.startswith("0 cells computed, 1 skipped")
    assert (out / cells[0]).stat().st_mtime_ns == stamp
    # report rebuilds the sweep's report and figures
    (out / "report.pdf").unlink()
    code, stdout, err = run(capsys, "report", out)
    assert code == 0 and err == ""
    assert (out / "report.pdf").read_bytes().startswith(b"%PDF") and pages(out / "report.pdf") >= 1


def test_report_on_an_empty_directory(capsys, tmp_path):
    code, _, err = run(capsys, "report", tmp_path)
    assert_usage_error(code, err, str(tmp_path))


@pytest.mark.parametrize("option, value", [
    ("--m", "0"), ("--n", "-3"), ("--d", "0"), ("--r", "0"), ("--r", "-0.5"), ("--sigma", "-0.1"),
    ("--m", "abc"), ("--d", "2.5"), ("--trials", "0"), ("--restarts", "0"), ("--iterations", "-1"),
    ("--panel", "z"), ("--variant", "nope"), ("--dtype", "float16"),
    ("--m", ","), ("--m", ""), ("--sigma", "0.1,,0.2"), ("--r", "0.5,0.5"), ("--panel", "a,"), ("--k", "3"),
    ("--k", "4"), ("--seed", str(2**63)), ("--seed", "99999999999999999999"),
])
def test_sweep_rejects_invalid_options(capsys, tmp_path, option, value):
    argv = list(TINY)
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    code, _, err = run(capsys, *argv, "--out", tmp_path / "s")
    assert_usage_error(code, err, option)
    assert not list((tmp_path / "s").glob("cell-*.parquet")) if (tmp_path / "s").exists() else True


@pytest.mark.parametrize("option, value", [("--r", "nan"), ("--r", "inf"), ("--sigma", "nan"), ("--sigma", "inf")])
def test_sweep_rejects_non_finite_axis_values_up_front(capsys, tmp_path, option, value):
    """Like the range checks above: the message names the option and nothing is written."""
    argv = list(TINY)
    argv[argv.index(option) + 1] = value
    code, _, err = run(capsys, *argv, "--out", tmp_path / "s")
    assert_usage_error(code, err, f"'{option}'")
    assert not (tmp_path / "s").exists()


def test_sweep_negative_seed_is_a_usage_error(capsys, tmp_path):
    code, _, err = run(capsys, *TINY, "--seed", "-1", "--out", tmp_path / "s")
    assert_usage_error(code, err, "seed")


def test_bound_json_is_strict_where_the_bound_overflows(capsys):
    """A = 41 over 1000 rounds: the bound is +inf; --json writes it as "inf" (strict JSON, no
    Infinity token) and the text output as inf."""
    argv = ["bound", "DSC.T1", "--initial-gap", "1", "--L", "1", "--mu", "0.5", "--learning-rate", "10",
            "--delta-inter", "1", "--delta-intra", "1", "--weight-factor", "1", "--noise-factor", "1",
            "--iterations", "1000"]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0 and err == ""
    data = json.loads(out, parse_constant=lambda token: pytest.fail(f"non-standard JSON token {token}"))
    assert data["value"] == "inf" and data["derived"]["A"] == 41.0
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "value = inf" in out


# -- sweep: bad stores and absurd sizes, refused before any work (one test per row of the issue) --------
def _tiny_store(capsys, directory, *extra):
    code, _, err = run(capsys, *TINY, "--out", directory, *extra)
    assert code == 0, err
    return sorted(directory.glob("cell-*.parquet"))


def test_sweep_with_an_unreadable_cell_is_one_line_before_any_work(capsys, tmp_path, monkeypatch):
    """ArrowInvalid from a 0-byte or corrupt cell file: now the file is named, nothing runs."""
    import cflbounds.sweeps.executors as executors

    out = tmp_path / "store"
    (cell,) = _tiny_store(capsys, out)
    manifest = (out / "sweep.json").read_text()
    calls = []
    monkeypatch.setattr(executors, "run_cells", lambda *args, **kwargs: calls.append(args))
    for damage in (b"", b"PAR1 not a footer"):
        cell.write_bytes(damage)
        for argv in ([*TINY, "--out", out, "--resume"], ["report", out]):
            code, out_text, err = run(capsys, *argv)
            assert_usage_error(code, err, str(cell), "delete it")
            assert calls == [] and out_text == "" and (out / "sweep.json").read_text() == manifest


def test_sweep_out_a_file_is_one_line(capsys, tmp_path):
    """FileExistsError before: a file where the store directory belongs, or inside its path."""
    (tmp_path / "file").write_text("keep me")
    for out in (tmp_path / "file", tmp_path / "file" / "store"):
        code, _, err = run(capsys, *TINY, "--out", out)
        assert_usage_error(code, err, str(out))
    assert (tmp_path / "file").read_text() == "keep me"


def test_sweep_out_a_read_only_directory_is_one_line_before_any_work(capsys, tmp_path, monkeypatch):
    """Simulated as a write that the OS refuses (the tests may run as root, who writes anywhere):
    the store's directory is checked by writing a probe file, before any cell."""
    import cflbounds._files as files_module
    import cflbounds.sweeps.executors as executors

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    calls = []
    monkeypatch.setattr(executors, "run_cells", lambda *args, **kwargs: calls.append(args))
    monkeypatch.setattr(files_module.tempfile, "mkstemp", refuse)
    code, _, err = run(capsys, *TINY, "--out", tmp_path / "readonly" / "store")
    assert_usage_error(code, err, str(tmp_path / "readonly" / "store"), "Permission denied")
    assert calls == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_sweep_out_a_real_read_only_directory(capsys, tmp_path):
    (tmp_path / "readonly").mkdir(mode=0o555)
    code, _, err = run(capsys, *TINY, "--out", tmp_path / "readonly" / "store")
    assert_usage_error(code, err, str(tmp_path / "readonly" / "store"))


@pytest.mark.parametrize("option, value, part", [
    ("--d", "100000000", "certificate"),  # tried to allocate 4 TB of data (and d x d matrices)
    ("--m", "99999999999999999999", "PB"),  # TypeError from numpy before
    ("--trials", "1000000000", "result rows"),  # started without a word
])
def test_sweep_too_large_for_memory_is_one_line_before_any_allocation(capsys, tmp_path, monkeypatch, option, value,
                                                                       part):
    import cflbounds.sweeps.ifca_fig2 as fig2

    def not_allowed(*args, **kwargs):
        raise AssertionError("allocated before the memory check")

    monkeypatch.setattr(fig2, "make_mixed_linear_regression", not_allowed)
    argv = list(TINY)
    argv[argv.index(option) + 1] = value
    code, out, err = run(capsys, *argv, "--out", tmp_path / "s")
    assert_usage_error(code, err, "needs about", "is available", part)
    assert out == "" and not (tmp_path / "s").exists()


def test_sweep_says_its_size_and_an_estimate_before_starting(capsys, tmp_path, monkeypatch):
    """A billion trials with memory to spare (monkeypatched): the size and a time estimate on
    stderr before the first cell starts."""
    import cflbounds.sweeps.executors as executors
    import cflbounds.sweeps.ifca_fig2 as fig2

    seen = []

    def record(*args, **kwargs):
        seen.append(capsys.readouterr().err)
        raise KeyboardInterrupt  # stop there: exit 130, as an interrupted sweep

    monkeypatch.setattr(fig2, "available_memory", lambda device: 10**20)
    monkeypatch.setattr(executors, "run_cells", record)
    argv = list(TINY)
    argv[argv.index("--trials") + 1] = "1000000000"
    assert main([str(a) for a in argv] + ["--out", str(tmp_path / "s")]) == 130
    (plan,) = seen
    runs = 10**9 * 2 * 3  # trials x restarts x 3 step sizes
    assert f"1 of 1 cells to compute, {runs:,} runs, {runs * 20:,} run-iterations" in plan
    assert re.search(r"about [0-9.]+ (h|days) at an assumed [0-9.]+ GFLOP/s", plan) and plan.count("\n") == 1


def test_sweep_resume_with_another_seed_is_refused(capsys, tmp_path):
    """A seed-1 resume of a seed-0 store was accepted, its manifest overwritten, and report then
    merged trial i of both seeds into one trial."""
    out = tmp_path / "store"
    cells = _tiny_store(capsys, out)
    manifest = (out / "sweep.json").read_text()
    for option, value, stored in [("--seed", "1", "seed=0"), ("--trials", "4", "trials=3"),
                                  ("--restarts", "1", "restarts=2"), ("--iterations", "30", "iterations=20"),
                                  ("--dtype", "float64", "dtype='float32'"), ("--shared-inits", None, "shared_inits")]:
        argv = list(TINY) + ["--out", out, "--resume"]
        if option in argv:
            argv[argv.index(option) + 1] = value
        else:
            argv += [option] + ([value] if value else [])
        code, _, err = run(capsys, *argv)
        assert_usage_error(code, err, stored, str(out), option.lstrip("-").replace("-", "_"))
    assert sorted(out.glob("cell-*.parquet")) == cells and (out / "sweep.json").read_text() == manifest


def test_sweep_resume_may_add_other_cells_of_the_same_sweep(capsys, tmp_path):
    """Another axis value is another cell with rows of its own: it joins the store, and the
    manifest records both selections."""
    out = tmp_path / "store"
    _tiny_store(capsys, out)
    argv = list(TINY)
    argv[argv.index("--sigma") + 1] = "0.1,0.2"
    code, stdout, err = run(capsys, *argv, "--out", out, "--resume")
    assert code == 0 and stdout.startswith("1 cells computed, 1 skipped"), err
    manifest = json.loads((out / "sweep.json").read_text())
    assert [s["overrides"]["sigma"] for s in manifest["selections"]] == [[0.1], [0.1, 0.2]]
    assert manifest["settings"]["seed"] == 0 and manifest["settings"]["trials"] == 3
    # provenance: one record per run that touched the store, each finished, with what made it
    first, second = manifest["runs"]
    assert (first["cells_to_compute"], second["cells_to_compute"], second["cells_kept"]) == (1, 1, 1)
    for record in (first, second):
        assert record["finished"] >= record["started"] and record["seconds"] >= 0
        assert record["cflbounds"] == cflbounds.__version__ and "torch" in record["dependencies"]
        assert record["device"] == "cpu" and record["executor"] == "local" and "revision" in record


@pytest.mark.parametrize("argv", [["sweep", "ifca-fig2", "--seed=--"], ["sweep", "ifca-fig2", "--m=--"],
                                  ["bound", "IFCA.C1", "--sigma=--"]])
def test_double_dash_as_an_option_value_is_one_line(capsys, tmp_path, argv):
    """argparse before 3.13 drops a '--' value and stores [] unconverted (found by the CLI fuzzing)."""
    code, _, err = run(capsys, *argv, "--out", tmp_path / "s") if argv[0] == "sweep" else run(capsys, *argv)
    assert_usage_error(code, err, argv[-1].split("=")[0], "expected one argument")


def test_sweep_repeated_option_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, *TINY, "--m", "9", "--out", tmp_path / "s")
    assert_usage_error(code, err, "--m", "twice")
    assert not (tmp_path / "s").exists()


def test_sweep_k_narrows_the_panels(capsys, tmp_path, monkeypatch):
    import cflbounds.sweeps.executors as executors

    seen = []
    monkeypatch.setattr(executors, "run_cells", lambda cells, *args, **kwargs: seen.append(cells) or
                        (_ for _ in ()).throw(KeyboardInterrupt))
    argv = ["sweep", "ifca-fig2", "--k", "4", "--variant", "official", "--trials", "1", "--out", tmp_path / "s"]
    assert main([str(a) for a in argv]) == 130
    assert {(c["panel"], c["k"]) for c in seen[0]} == {("b", 4), ("d", 4)}


def test_sweep_help_explains_the_symbols(capsys):
    assert main(["sweep", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for phrase in ("number of machines", "points per machine", "dimension of x", "separation scale",
                   "noise standard deviation", "every panel", "both variants", "--k", "(default: all)"):
        assert phrase in text, phrase


def test_top_level_help_says_what_the_tool_does(capsys):
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "checks the convergence theorems of five clustered federated learning papers" in text
    assert all(command in text for command in ("claims", "verify", "bound", "sweep", "report"))


def test_every_option_of_every_subcommand_has_help():
    from cflbounds.cli import _parser

    parser = _parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert {choice.dest for choice in subcommands._choices_actions} >= {"claims", "verify", "bound", "sweep",
                                                                         "report"}
    for name, subparser in subcommands.choices.items():
        if name in ("verify", "report"):
            continue  # their help texts are another change's (cli/verify.py, cli/report.py), merged separately
        for action in subparser._actions:
            assert action.help, f"cflbounds {name}: {action.option_strings or action.dest} has no help"
