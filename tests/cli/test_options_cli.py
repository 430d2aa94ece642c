"""`ducklake options` and the options `inspect` shows: JSON shapes, one-line errors with exit 1 and an unchanged
catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_main
from tests.support.oracle import oracle_connect
from tests.support.spot import Spot


@pytest.fixture
def lake(tmp_path: Path) -> Spot:
    spot = Spot("sqlite", str(tmp_path / "c.sqlite"), str(tmp_path / "c.sqlite"), tmp_path / "data")
    con = oracle_connect()
    try:
        con.execute(spot.attach())
        con.execute("CREATE SCHEMA lake.s")
        con.execute("CREATE TABLE lake.s.t (a INTEGER)")
        con.execute("DETACH lake")
    finally:
        con.close()
    return spot


def test_options_cli(lake: Spot, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "options", lake.catalog, "--set", "target_file_size=128MB", "--set",
                              "expire_older_than=7 days", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["changes"] == [
        {"option_name": "target_file_size", "scope": "GLOBAL", "scope_entry": None, "old_value": None,
         "new_value": "128000000", "action": "set"},
        {"option_name": "expire_older_than", "scope": "GLOBAL", "scope_entry": None, "old_value": None,
         "new_value": "7 days", "action": "set"}]
    code, out, err = run_main(capsys, "options", lake.catalog, "--table", "s.t", "--set", "parquet_compression=zstd")
    assert code == 0, err

    code, out, err = run_main(capsys, "options", lake.catalog, "--table", "s.t", "--format", "json")
    assert code == 0, err
    listed = json.loads(out)
    assert (listed["scope"], listed["scope_entry"]) == ("TABLE", "s.t")
    by_name = {r["option_name"]: r for r in listed["options"]}
    assert (by_name["parquet_compression"]["value"], by_name["parquet_compression"]["scope"]) == ("zstd", "TABLE")
    assert (by_name["target_file_size"]["value"], by_name["target_file_size"]["scope"]) == ("128000000", "GLOBAL")
    assert by_name["sort_on_insert"] == {"option_name": "sort_on_insert", "value": "true", "scope": "DEFAULT",
                                         "scope_entry": None, "description": by_name["sort_on_insert"]["description"]}

    code, out, _ = run_main(capsys, "options", lake.catalog, "--format", "csv")
    assert code == 0 and out.splitlines()[0] == "option,value,scope,scope_entry"
    assert "parquet_compression,zstd,TABLE,s.t" in out.splitlines()

    # inspect: the lake's options and the table's effective ones (additive JSON fields).
    code, out, _ = run_main(capsys, "inspect", lake.catalog, "--format", "json")
    assert code == 0
    assert {"option_name": "expire_older_than", "value": "7 days", "scope": "GLOBAL", "scope_entry": None} in [
        {k: v for k, v in r.items() if k != "description"} for r in json.loads(out)["options"]]
    code, out, _ = run_main(capsys, "inspect", lake.catalog, "s.t", "--format", "json")
    assert code == 0
    detail = {r["option_name"]: (r["value"], r["scope"]) for r in json.loads(out)["options"]}
    assert detail["parquet_compression"] == ("zstd", "TABLE")
    code, out, _ = run_main(capsys, "inspect", lake.catalog, "s.t")
    assert code == 0 and "Options" in out

    code, out, err = run_main(capsys, "options", lake.catalog, "--table", "s.t", "--unset", "parquet_compression")
    assert code == 0, err


def test_options_errors(lake: Spot, capsys: pytest.CaptureFixture[str]) -> None:
    before = Path(lake.catalog).read_bytes()
    for args, text in [
        (("--set", "no_such_option=1"), "error: unknown option 'no_such_option'"),
        (("--set", "target_file_sise=1MB"), "did you mean target_file_size"),
        (("--set", "parquet_version=3"), "error: option parquet_version: '3' is not a Parquet version"),
        (("--schema", "s", "--set", "delete_older_than=1 day"), "only be set for the whole lake"),
        (("--table", "missing", "--set", "auto_compact=false"), "does not exist"),
        (("--set", "auto_compact"), "expected key=value"),
    ]:
        code, out, err = run_main(capsys, "options", lake.catalog, *args)
        assert code != 0 and out == "", args
        assert len(err.strip().splitlines()) == 1 and text in err, (args, err)
        assert "Traceback" not in err
    code, _, _ = run_main(capsys, "options", lake.catalog, "--set", "nope=1")
    assert code == 1  # an unknown option: exit 1, like the other bad catalog changes
    code, _, err = run_main(capsys, "options", lake.catalog, "--schema", "s", "--table", "t")
    assert code == 2 and "cannot be used together" in err
    assert Path(lake.catalog).read_bytes() == before
