"""Runs as Markdown tables (cflbounds.reports.markdown). A verify run's: one row per claim with
the designed experiment's verdict, the search's finding and the final verdict, the final one in
bold where the search changed it. A falsify run's: one row per claim with the search's finding,
its seconds and the counterexample's point."""
from cflbounds.reports.markdown import search_table, verdict_table

SEARCHED = {"id": "X.L2", "verdict": "violated", "designed": {"verdict": "vacuous", "summary": "..."},
            "search": {"outcome": "violated", "best_ratio": 4.0561, "evaluations": 200}}
CLEAN = {"id": "X.T1", "verdict": "holds", "designed": {"verdict": "holds", "summary": "..."},
         "search": {"outcome": "no counterexample found", "best_ratio": 0.96850, "evaluations": 200,
                    "coverage": {"admissible": 40, "volume_bound": 0.0721, "confidence": 0.95}}}
UNSEARCHED = {"id": "X.A1", "verdict": "holds"}
NEGATIVE_BOUND = {"id": "X.N", "verdict": "violated", "designed": {"verdict": "holds", "summary": "..."},
                  "search": {"outcome": "violated", "best_ratio": float("inf"), "evaluations": 200,
                             "counterexample": {"measured": 0.4493, "bound": -0.1014}}}
NOT_RUN = {"id": "X.V", "verdict": "violated", "designed": {"verdict": "violated", "summary": "..."},
           "search": {"outcome": "not run", "reason": "the designed experiment already found ..."}}
BROKEN = {"id": "X.E", "verdict": "error", "designed": {"verdict": "holds", "summary": "..."},
          "search": {"outcome": "error", "best_ratio": None, "evaluations": 3}}


def test_one_row_per_claim_in_order_with_the_three_readings():
    lines = verdict_table([SEARCHED, CLEAN, UNSEARCHED, BROKEN]).splitlines()
    assert lines[0] == "| claim | designed experiment | search | final verdict |"
    assert lines[2] == "| X.L2 | vacuous | violated (measured/allowed 4.056; 200 evaluations) | **violated** |"
    assert lines[3] == ("| X.T1 | holds | none found (best measured/allowed 0.9685; violating share of the volume "
                        "< 0.072 at 95%; 200 evaluations) | holds |")
    assert lines[4] == "| X.A1 | holds | - | holds |"
    assert lines[5] == "| X.E | holds | error | **error** |"
    assert len(lines) == 6


def test_a_bound_at_or_below_zero_shows_its_numbers_and_a_search_not_run_says_why():
    lines = verdict_table([NEGATIVE_BOUND, NOT_RUN]).splitlines()
    assert lines[2] == "| X.N | holds | violated (measured 0.4493 > bound -0.1014; 200 evaluations) | **violated** |"
    assert lines[3] == "| X.V | violated | not run (designed: violated) | violated |"


def test_report_markdown_prints_a_verify_runs_table_and_writes_nothing(tmp_path, capsys):
    import json

    from cflbounds.cli import main

    recorded = [{"evidence": {}, "seed": 0, "trials": 1, "confidence": 1.0, **verdict} for verdict in (SEARCHED, UNSEARCHED)]
    (tmp_path / "verdicts.json").write_text(json.dumps({"metadata": {}, "verdicts": recorded}))
    assert main(["report", str(tmp_path), "--markdown"]) == 0
    assert capsys.readouterr().out == verdict_table([SEARCHED, UNSEARCHED])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["verdicts.json"]
    (tmp_path / "verdicts.json").write_text("[")
    assert main(["report", str(tmp_path), "--markdown"]) == 2  # a broken record: named, before anything
    assert "verdicts.json" in capsys.readouterr().err


FOUND = {"id": "X.L2", "outcome": "violated", "best_ratio": 4.0561, "evaluations": 790, "seconds": 129.9,
         "counterexample": {"parameters": {"d": 2, "beta": 0.8654475730452373, "family": 1}, "measured": 1.0,
                            "bound": 0.24652511110987343}}
NONE_FOUND = {"id": "X.T1", "outcome": "no counterexample found", "best_ratio": 0.0129, "evaluations": 1892,
              "seconds": 121.4, "counterexample": None,
              "coverage": {"admissible": 221, "volume_bound": 0.0134, "confidence": 0.95}}


def test_a_falsify_runs_table_has_the_search_its_seconds_and_the_counterexample():
    lines = search_table([FOUND, NONE_FOUND]).splitlines()
    assert lines[0] == "| claim | search | seconds | counterexample |"
    assert lines[2] == ("| X.L2 | violated (measured/allowed 4.056; 790 evaluations) | 130 | "
                        "d=2, beta=0.8654, family=1; measured 1 vs bound 0.2465 |")
    assert lines[3] == ("| X.T1 | none found (best measured/allowed 0.0129; violating share of the volume < 0.013 "
                        "at 95%; 1892 evaluations) | 121 | - |")
    assert len(lines) == 4


def recorded(result: dict) -> dict:
    """``result`` with what falsify.json's schema requires beside what the table shows."""
    example = result["counterexample"] and {"seed": 1, **result["counterexample"]}
    coverage = result.get("coverage") and {"points": 250, "violating": 0, "statement": "", **result["coverage"]}
    return {"seed": 0, "summary": "", "confirmation": None, **result, "counterexample": example, "coverage": coverage,
            "search": {"restarts": 0, "search_seconds": 1.0, "admissible": 1, "rejected": 0}}


def test_report_markdown_prints_a_falsify_runs_table_and_writes_nothing(tmp_path, capsys):
    import json

    from cflbounds.cli import main

    (tmp_path / "falsify.json").write_text(json.dumps({"metadata": {}, "results": [recorded(FOUND),
                                                                                   recorded(NONE_FOUND)]}))
    assert main(["report", str(tmp_path), "--markdown"]) == 0
    assert capsys.readouterr().out == search_table([FOUND, NONE_FOUND])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["falsify.json"]
    (tmp_path / "falsify.json").write_text(json.dumps({"metadata": {}, "results": [{"id": "X.L2"}]}))
    assert main(["report", str(tmp_path), "--markdown"]) == 2  # not a falsify result: named, before anything
    assert "falsify.json" in capsys.readouterr().err


def test_the_falsify_docs_table_is_a_search_table_of_known_claims():
    """docs/falsify.md's table is `cflbounds report DIR --markdown` of a falsify run: the search
    table's columns, one row per searched claim of the five papers or of the example plugin."""
    from pathlib import Path

    from cflbounds.reports.markdown import SEARCH_COLUMNS
    from cflbounds.verify.run import implemented_claims

    page = (Path(__file__).parents[1] / "docs" / "falsify.md").read_text(encoding="utf-8")
    table = page.split("<!-- falsify-table:start -->\n", 1)[1].split("<!-- falsify-table:end -->", 1)[0]
    lines = table.strip().splitlines()
    assert lines[0] == "| " + " | ".join(SEARCH_COLUMNS) + " |"
    known = set(implemented_claims())
    for line in lines[2:]:
        claim, search, seconds, _ = line.strip("| ").split(" | ", 3)
        assert claim in known or claim.startswith("TEXTBOOK."), claim
        assert search.split(" (")[0] in {"violated", "none found", "error"}, line
        assert seconds.isdigit(), line
