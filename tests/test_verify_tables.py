"""Every result table carries its claim and seed, and every column is documented in docs/tables.md.

One run of every implemented claim at the smoke scale (about a minute on one core) gives the
tables; a new table or column that docs/tables.md does not describe fails here, and so does
a documented column no check produces any more.
"""
import re
from pathlib import Path

import pandas as pd
import pytest

from cflbounds.verify import VerifyContext, verify_claims
from cflbounds.verify.context import TABLE_KEYS
from cflbounds.verify.record import RunRecord

DICTIONARY = Path(__file__).resolve().parents[1] / "docs" / "tables.md"
EVERY_TABLE = "Every table"


def documented() -> dict[str, dict]:
    """docs/tables.md as {section heading: {"tables": [...], "columns": {name: (unit, meaning)}}};
    a section's tables are the backticked names of its heading (none for "Every table")."""
    sections, current = {}, None
    for line in DICTIONARY.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = {"tables": re.findall(r"`([a-z0-9_]+)`", current), "columns": {}}
        elif current and line.startswith("| `"):
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])]  # \| is a bar in a cell
            sections[current]["columns"][cells[0].strip("`")] = tuple(cells[1:])
    return sections


def matches(documented_name: str, column: str) -> bool:
    """``gap_<t>`` stands for gap_0, gap_15, ...: a <placeholder> is a number."""
    pattern = re.sub(r"<[a-z]+>", "[0-9]+", re.escape(documented_name))  # re.escape leaves < > alone
    return re.fullmatch(pattern, column) is not None


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """Every implemented claim at the smoke scale, stored as `cflbounds verify` stores it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CFLBOUNDS_CACHE", str(tmp_path_factory.mktemp("pep-cache")))
        out = tmp_path_factory.mktemp("smoke") / "run"
        context = VerifyContext(scale="smoke", seed=0, device="cpu", workdir=out, progress=False)
        record = RunRecord.open(context, command=["test"])
        verify_claims(None, context, on_verdict=record.add)
    tables = {path.stem: pd.read_parquet(path) for path in sorted((out / "tables").glob("*.parquet"))}
    return record, tables


def test_every_table_starts_with_its_claim_and_the_run_seed(smoke_run):
    record, tables = smoke_run
    assert len(tables) >= 20
    for name, table in tables.items():
        assert list(table.columns[:2]) == list(TABLE_KEYS), name
        (claim,) = table["claim"].unique()
        assert claim in record.verdicts, (name, claim)
        assert (table["run_seed"] == 0).all() and len(table) > 0, name


def dictionary_problems(columns: dict[str, list[str]], sections: dict) -> list[str]:
    """What docs/tables.md (parsed, :func:`documented`) gets wrong about tables with these
    ``columns`` (table name -> column names): undocumented tables and columns, and documented
    tables and columns that no table has."""
    sections = dict(sections)
    common = sections.pop(EVERY_TABLE)["columns"]
    owner = {table: section for section, info in sections.items() for table in info["tables"]}
    problems = [f"table {name} is not documented" for name in columns if name not in owner]
    problems += [f"documented table {name} is not produced" for name in owner if name not in columns]
    for name in set(columns) & set(owner):
        documented_columns = [*common, *sections[owner[name]]["columns"]]
        problems += [f"column {name}.{column} is not documented" for column in columns[name]
                     if not any(matches(d, column) for d in documented_columns)]
    for section, info in sections.items():
        produced = [column for table in info["tables"] if table in columns for column in columns[table]]
        problems += [f"documented column {d} ({section}) is not produced" for d in info["columns"]
                     if not any(matches(d, column) for column in produced)]
    problems += [f"common column {d} is not produced" for d in common
                 if not all(d in names for names in columns.values())]
    return problems


def test_every_table_and_column_is_documented(smoke_run):
    _, tables = smoke_run
    sections = documented()
    assert set(sections[EVERY_TABLE]["columns"]) == set(TABLE_KEYS)
    assert dictionary_problems({name: list(t.columns) for name, t in tables.items()}, sections) == []


def test_the_dictionary_check_catches_planted_differences():
    sections = documented()
    common = list(sections[EVERY_TABLE]["columns"])
    faithful = {table: common + [re.sub(r"<[a-z]+>", "7", c) for c in info["columns"]]
                for section, info in sections.items() for table in info["tables"]}
    assert dictionary_problems(faithful, sections) == []
    planted = {**faithful, "fc_t1": faithful["fc_t1"] + ["new_column"], "brand_new": common + ["x"]}
    del planted["lcfl_e8_cases"]
    planted["mgd_speed"] = [c for c in planted["mgd_speed"] if c not in ("reached", "run_seed")]
    problems = dictionary_problems(planted, sections)
    for expected in ("column fc_t1.new_column is not documented", "table brand_new is not documented",
                     "documented table lcfl_e8_cases is not produced", "common column run_seed is not produced",
                     "documented column reached (`mgd_speed`) is not produced"):
        assert expected in problems, (expected, problems)


def test_every_documented_column_has_a_unit_and_a_meaning():
    for section, info in documented().items():
        for column, cells in info["columns"].items():
            assert len(cells) == 2 and all(cells), (section, column, cells)


def test_placeholders_match_numbers_only():
    assert matches("gap_<t>", "gap_15") and matches("gap_<t>", "gap_0")
    assert not matches("gap_<t>", "gap_") and not matches("gap_<t>", "gap_x") and not matches("m", "m_i")


# -- save_table ---------------------------------------------------------------------------------
def test_save_table_adds_the_keys_and_leaves_the_frame_alone():
    context = VerifyContext(seed=9)
    frame = pd.DataFrame({"x": [1.0, 2.0]}, index=[7, 7])  # a repeated index must not matter
    claim = context.for_claim("X.1")
    claim.save_table("x_table", frame)
    saved = claim.claim_tables
    assert list(frame.columns) == ["x"]
    assert saved["x_table"].to_dict("list") == {"claim": ["X.1", "X.1"], "run_seed": [9, 9], "x": [1.0, 2.0]}
    assert context.tables["x_table"] is saved["x_table"] and context.claim is None and context.claim_tables == {}


def test_a_table_name_belongs_to_one_claim_and_keys_are_not_overwritten():
    """A second claim saving a name already taken keeps its table as name@ID (two plugins may
    pick one name: tests/test_containment.py); the first one's is untouched."""
    context = VerifyContext()
    assert context.for_claim("X.1").save_table("shared_name", pd.DataFrame({"x": [1]})) == "shared_name"
    assert context.for_claim("X.2").save_table("shared_name", pd.DataFrame({"x": [2]})) == "shared_name@X.2"
    assert context.tables["shared_name"]["x"].tolist() == [1] and context.tables["shared_name@X.2"]["x"].tolist() == [2]
    with pytest.raises(ValueError, match="run_seed"):
        context.for_claim("X.2").save_table("own_name", pd.DataFrame({"run_seed": [2]}))
