"""An S3 lake end to end (SeaweedFS on loopback): DuckDB 1.5.5 writes it, `ducklake inspect` and `ducklake query`
(embedded Spark and Spark Connect, s3a jars from PyPI) read it back, and no secret shows anywhere."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from ducklake_cli.engine.session import s3a_conf
from ducklake_cli.storage.files import s3_storage_options
from tests.support.cli import run_cli
from tests.support.connect import ConnectServer
from tests.support.oracle import oracle_connect
from tests.support.s3a import s3a_jars
from tests.support.services import S3Target

pytestmark = [pytest.mark.s3, pytest.mark.spark]

# Files, deletes, an update, a rename, an added column with a default, inlined rows, a type Spark's Parquet
# reader rejects (UUID: read by our fallback reader through fsspec on the executors).
LAKE_SQL = """
CREATE TABLE lake.events (id BIGINT, name VARCHAR, ts TIMESTAMPTZ, amount DECIMAL(10,2), tags VARCHAR[],
                          info STRUCT(a INTEGER, b VARCHAR));
INSERT INTO lake.events SELECT i, 'n' || i, TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL (i) MINUTE, i * 1.25,
    ['t' || (i % 3)], {'a': i, 'b': 'x' || (i % 5)} FROM range(300) r(i);
INSERT INTO lake.events SELECT i, 'n' || i, NULL, NULL, [], NULL FROM range(300, 500) r(i);
DELETE FROM lake.events WHERE id % 7 = 0;
UPDATE lake.events SET name = 'updated' WHERE id BETWEEN 10 AND 40;
ALTER TABLE lake.events ADD COLUMN score DOUBLE DEFAULT 1.5;
ALTER TABLE lake.events RENAME COLUMN name TO label;
INSERT INTO lake.events (id, label, score) VALUES (1000, 'inlined', 2.0), (1001, NULL, NULL);
CREATE TABLE lake.ids (u UUID, n INTEGER);
INSERT INTO lake.ids SELECT uuid(), i FROM range(50) r(i);
DELETE FROM lake.ids WHERE n < 5;
"""


def _oracle(s3: S3Target, catalog: Path) -> duckdb.DuckDBPyConnection:
    con = oracle_connect()
    con.execute(f"CREATE SECRET (TYPE s3, KEY_ID '{s3.key}', SECRET '{s3.secret}', ENDPOINT '{s3.host_port}', "
                f"URL_STYLE 'path', USE_SSL false, REGION '{s3.region}')")
    con.execute(f"ATTACH 'ducklake:sqlite:{catalog}' AS lake (DATA_PATH '{s3.url}')")
    return con


@pytest.fixture(scope="module")
def s3_lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[S3Target, Path, list[int]]]:
    """The lake DuckDB wrote under a fresh S3 prefix; (server, catalog, snapshot ids)."""
    from tests.support.services import require_env, s3_prefix

    catalog = tmp_path_factory.mktemp("s3lake") / "cat.sqlite"
    with s3_prefix(require_env("DUCKLAKE_TEST_S3"), require_env("DUCKLAKE_TEST_S3_KEY"),
                   require_env("DUCKLAKE_TEST_S3_SECRET")) as s3:
        con = _oracle(s3, catalog)
        try:
            for statement in filter(str.strip, LAKE_SQL.split(";")):
                con.execute(statement)
            snapshots = [r[0] for r in con.execute("SELECT snapshot_id FROM lake.snapshots() ORDER BY 1").fetchall()]
        finally:
            con.close()
        yield s3, catalog, snapshots


def _same_rows(s3: S3Target, catalog: Path, table: str, snapshot: int, ours: Path) -> None:
    """DuckDB's rows of `table` at `snapshot` and the rows in our Parquet output are the same multiset."""
    con = _oracle(s3, catalog)
    try:
        theirs = f"lake.main.{table} AT (VERSION => {snapshot})"
        mine = f"read_parquet('{ours}')"
        counts = con.execute(f"SELECT (SELECT count(*) FROM {theirs}), (SELECT count(*) FROM {mine})").fetchone()
        differ = con.execute(f"SELECT count(*) FROM ((FROM {theirs} EXCEPT ALL FROM {mine}) "
                             f"UNION ALL (FROM {mine} EXCEPT ALL FROM {theirs}))").fetchone()
    finally:
        con.close()
    assert counts is not None and counts[0] == counts[1] and counts[0] > 0, (table, snapshot, counts)
    assert differ == (0,), f"{table} @ {snapshot}: {differ} rows differ from DuckDB's"


def _profile(tmp_path: Path, s3: S3Target, catalog: Path) -> dict[str, str]:
    """A ducklake.toml whose storage section names the secret by ${VAR}; the env that runs the CLI with it."""
    jars = ",".join(str(j) for j in s3a_jars())
    (tmp_path / "ducklake.toml").write_text(f"""
[profiles.s3lake]
catalog = "{catalog}"
[profiles.s3lake.storage]
endpoint_url = "{s3.endpoint}"
region = "{s3.region}"
key = "${{LAKE_KEY}}"
secret = "${{LAKE_SECRET}}"
[profiles.s3lake.spark]
"spark.jars" = "{jars}"
"spark.driver.memory" = "1g"
""")
    return {"DUCKLAKE_CONFIG": str(tmp_path / "ducklake.toml"), "LAKE_KEY": s3.key, "LAKE_SECRET": s3.secret,
            "TMPDIR": str(tmp_path)}  # TMPDIR: this test's own Spark log file, grepped below


def test_s3_lake_written_by_duckdb_reads_back(
    s3_lake: tuple[S3Target, Path, list[int]], spark_connect: ConnectServer, tmp_path: Path
) -> None:
    s3, catalog, snapshots = s3_lake
    env = _profile(tmp_path, s3, catalog)
    runs: list[subprocess.CompletedProcess[str]] = []

    def cli(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        res = run_cli(*args, env={**env, **(extra or {})})
        runs.append(res)
        assert res.returncode == 0, res.stderr
        return res

    # inspect: metadata only, live rows as DuckDB counts them
    summary = json.loads(cli("inspect", "s3lake", "--format", "json").stdout)
    assert summary["data_path"] == s3.url
    con = _oracle(s3, catalog)
    try:
        want = {t: con.execute(f"SELECT count(*) FROM lake.main.{t}").fetchone()[0] for t in ("events", "ids")}
    finally:
        con.close()
    assert {t["table"]: t["live_rows"] for t in summary["tables"]} == want
    files = json.loads(cli("inspect", "s3lake", "events", "--files", "--format", "json").stdout)["files"]
    assert files and all(f["path"].startswith(s3.url) for f in files)

    # embedded Spark (profile storage + spark.jars), the latest snapshot
    out = tmp_path / "events.parquet"
    cli("query", "s3lake", "SELECT * FROM events", "--output", str(out))
    _same_rows(s3, catalog, "events", snapshots[-1], out)

    # Spark Connect, credentials from the profile (the UUID table: our fallback reader, fsspec on the executors);
    # then from AWS_* variables only (no profile)
    out = tmp_path / "ids.parquet"
    cli("query", "s3lake", "SELECT * FROM ids", "--remote", spark_connect.url, "--output", str(out))
    _same_rows(s3, catalog, "ids", snapshots[-1], out)
    aws = {"DUCKLAKE_CONFIG": "", "AWS_ACCESS_KEY_ID": s3.key, "AWS_SECRET_ACCESS_KEY": s3.secret,
           "AWS_ENDPOINT_URL": s3.endpoint, "AWS_REGION": s3.region}
    before_update = snapshots[4]  # after the DELETE, before the UPDATE
    out = tmp_path / "events-old.parquet"
    cli("query", str(catalog), "SELECT * FROM events", "--snapshot", str(before_update), "--remote",
        spark_connect.url, "--output", str(out), extra=aws)
    _same_rows(s3, catalog, "events", before_update, out)

    # no secret in any output, our Spark log, or the Connect server's log
    logs = [p.read_text(errors="replace") for p in [*tmp_path.glob("ducklake-spark-*.log"), spark_connect.log]]
    assert len(logs) == 2, "expected our embedded Spark log and the Connect server log"
    for text in [*(r.stdout + r.stderr for r in runs), *logs]:
        assert s3.secret not in text


def test_storage_options_map_to_s3fs_and_s3a() -> None:
    opts = s3_storage_options({"endpoint": "http://127.0.0.1:9000", "access_key_id": "AK", "secret_access_key": "SK",
                               "session_token": "TOK", "region": "eu-west-1"})
    assert opts == {"key": "AK", "secret": "SK", "token": "TOK",
                    "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"},
                    "config_kwargs": {"s3": {"addressing_style": "path"}}}
    conf = s3a_conf(opts)
    assert conf["fs.s3a.endpoint"] == "http://127.0.0.1:9000" and conf["fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["fs.s3a.path.style.access"] == "true" and conf["fs.s3a.endpoint.region"] == "eu-west-1"
    assert conf["fs.s3a.session.token"] == "TOK"
    assert conf["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    # AWS itself: virtual-host style, TLS, the default credential chain (nothing set)
    aws = s3a_conf(s3_storage_options({"region": "us-east-2"}))
    assert "fs.s3a.path.style.access" not in aws and "fs.s3a.aws.credentials.provider" not in aws
    assert s3a_conf({}) == {}


def test_profile_storage_beats_aws_environment() -> None:
    from ducklake_cli.cli.config import storage_options

    env = {"AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "ENVSECRET", "AWS_SESSION_TOKEN": "ENVTOKEN",
           "AWS_ENDPOINT_URL": "http://env:9000", "AWS_DEFAULT_REGION": "eu-central-1"}
    mine = storage_options({"key": "K", "secret": "S"}, env)
    assert (mine["key"], mine["secret"], "token" in mine) == ("K", "S", False)  # credentials: one group
    assert mine["client_kwargs"] == {"endpoint_url": "http://env:9000", "region_name": "eu-central-1"}
    from_env = storage_options({}, env)
    assert (from_env["key"], from_env["secret"], from_env["token"]) == ("ENVKEY", "ENVSECRET", "ENVTOKEN")
    assert storage_options({}, {}) == {}
