"""``cflbounds falsify`` with no claim named: a one-line warning on stderr, before any search,
saying how many claims will be searched, what that costs and how to spend less.

The searches themselves are not run: ``start_executor`` (called after the warning, before the
first search) is replaced by one that stops the command, so these tests take well under a second.
Also the exit status 1 that is not a verdict: a replay that does not reproduce, and a crash.
"""
import json

import pytest

import cflbounds.cli.falsify as falsify_cli
from cflbounds.cli import main
from cflbounds.verify.registry import claims


class Stopped(Exception):
    """Raised where the search would start."""


@pytest.fixture
def stop_before_search(monkeypatch):
    def stop(args):
        raise Stopped

    monkeypatch.setattr(falsify_cli, "start_executor", stop)


def falsifiable() -> int:
    return sum(claim.domain is not None for claim in claims().values())


def test_plain_falsify_warns_with_the_count_and_total_budget(stop_before_search, capsys, tmp_path):
    with pytest.raises(Stopped):
        main(["falsify", "--out", str(tmp_path / "run")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert falsifiable() == 32  # the count docs/falsify.md quotes (the five papers and the catalogue, no plugin)
    assert lines[0].startswith("cflbounds falsify: warning: no claim named, so all 32 claims that declare a domain")
    assert "120 s each, 64 min of search in all" in lines[0]
    assert "'FC.*'" in lines[0] and "--budget" in lines[0] and "--evaluations" in lines[0]


def test_plain_falsify_warning_follows_budget_and_evaluations(stop_before_search, capsys, tmp_path):
    with pytest.raises(Stopped):
        main(["falsify", "--budget", "10", "--out", str(tmp_path / "a")])
    assert "10 s each, 5 min of search in all" in capsys.readouterr().err
    with pytest.raises(Stopped):
        main(["falsify", "--evaluations", "50", "--out", str(tmp_path / "b")])
    assert "(50 evaluations each," in capsys.readouterr().err


@pytest.mark.parametrize("ids", [["FC.T1"], ["FC.*"]])
def test_named_claims_get_no_warning(stop_before_search, capsys, tmp_path, ids):
    with pytest.raises(Stopped):
        main(["falsify", *ids, "--out", str(tmp_path / "run")])
    assert capsys.readouterr().err == ""


def test_usage_errors_come_before_the_warning(stop_before_search, capsys, tmp_path):
    assert main(["falsify", "--confidence", "2", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "warning" not in err and "--confidence" in err


def test_a_replay_that_does_not_reproduce_exits_1(textbook, tmp_path, capsys):
    """Exit 1 (README, "Exit statuses"): the recorded ratio is not what the replay measures."""
    out = tmp_path / "run"
    assert main(["falsify", "TEXTBOOK.GD-PLANTED", "--evaluations", "100", "--out", str(out)]) == 0
    path = out / "counterexamples" / "TEXTBOOK.GD-PLANTED.json"
    assert main(["falsify", "--replay", str(path)]) == 0
    assert "reproduced exactly" in capsys.readouterr().out
    record = json.loads(path.read_text())
    record["ratio"] = 0.5  # a ratio the replay cannot reproduce (the recorded one is above 1)
    path.write_text(json.dumps(record))
    assert main(["falsify", "--replay", str(path)]) == 1
    assert "NOT reproduced" in capsys.readouterr().out


def test_a_crash_propagates_so_the_process_exits_1(monkeypatch, capsys):
    """An exception that is not a usage error, an interruption or a closed pipe is not swallowed:
    it reaches Python, which prints its traceback and exits 1 (README, "Exit statuses")."""
    import cflbounds.cli.claims as claims_cli

    def crash(args):
        raise RuntimeError("a bug in cflbounds")

    monkeypatch.setattr(claims_cli, "run", crash)
    with pytest.raises(RuntimeError, match="a bug in cflbounds"):
        main(["claims"])
