"""Bad input across every command: the documented exit code (1 bad input / not found, 2 usage, 3 conflict), exactly
one stderr line and no traceback, and afterwards the catalog is byte-identical and DuckDB 1.5.5 still reads it.

Cases run in this process (a real `main()`, stdin at /dev/null); the few that need Spark share one JVM.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ducklake_cli.cli.app import main
from tests.support.oracle import attach_clause, oracle_connect


@dataclass(frozen=True)
class Case:
    """One bad command line: `{cat}`, `{dir}` (a scratch directory) and `{ro}` (a read-only copy) are filled in."""

    id: str
    args: tuple[str, ...]
    code: int
    needle: str
    spark: bool = False


def C(id: str, *args: str, code: int, needle: str, spark: bool = False) -> Case:  # noqa: N802
    return Case(id, args, code, needle, spark)


CASES = [
    # create-catalog
    C("create-existing", "create-catalog", "{cat}", "--data-path", "{dir}/d", code=1, needle="already"),
    C("create-no-data-path", "create-catalog", "{dir}/new.sqlite", code=2, needle="--data-path"),
    C("create-bad-url", "create-catalog", "ftp://host/x", "--data-path", "{dir}/d", code=1, needle="ftp"),
    C("create-missing-dir", "create-catalog", "{dir}/no/such/dir/new.sqlite", "--data-path", "{dir}/d", code=1,
      needle="no/such/dir"),
    # inspect
    C("inspect-unknown-table", "inspect", "{cat}", "nosuch", code=1, needle="nosuch"),
    C("inspect-unknown-snapshot", "inspect", "{cat}", "--snapshot", "999", code=1, needle="999"),
    C("inspect-bad-time", "inspect", "{cat}", "--as-of", "yesterday-ish", code=2, needle="ISO 8601"),
    C("inspect-time-before-history", "inspect", "{cat}", "--as-of", "1990-01-01", code=1, needle="1990"),
    C("inspect-snapshot-and-as-of", "inspect", "{cat}", "--snapshot", "1", "--as-of", "2020-01-01", code=2,
      needle="cannot be used together"),
    C("inspect-snapshots-and-files", "inspect", "{cat}", "--snapshots", "--files", code=2,
      needle="cannot be used together"),
    C("inspect-bad-flag", "inspect", "{cat}", "--bogus", code=2, needle="--bogus"),
    C("inspect-bad-format", "inspect", "{cat}", "--format", "yaml", code=2, needle="yaml"),
    C("inspect-snapshot-not-int", "inspect", "{cat}", "--snapshot", "latest", code=2, needle="--snapshot"),
    C("inspect-extra-argument", "inspect", "{cat}", "t", "extra", code=2, needle="extra"),
    C("inspect-missing-file", "inspect", "{dir}/missing.sqlite", code=1, needle="does not exist"),
    C("inspect-not-a-ducklake", "inspect", "{dir}/plain.sqlite", code=1, needle="DuckLake"),
    C("inspect-text-file", "inspect", "{dir}/notes.txt", code=1, needle="notes.txt"),
    C("inspect-bad-port", "inspect", "postgresql://u:p@host:port/db", code=1, needle="port"),
    C("inspect-no-catalog", "inspect", code=2, needle="no CATALOG"),
    C("inspect-unknown-attach-backend", "inspect", "ducklake:oracle:lake", code=1, needle="oracle"),
    C("inspect-directory", "inspect", "{dir}/notdata", code=1, needle="notdata"),
    C("expire-bad-url", "maintain", "expire", "mysql://u@h", "--keep-last", "1", "--dry-run", code=1,
      needle="mysql"),
    C("inspect-unset-variable-profile", "inspect", "prod", code=1, needle="${NOT_SET_ANYWHERE}"),
    # query
    C("query-syntax", "query", "{cat}", "SELEC 1", code=1, needle="syntax"),
    C("query-unknown-table", "query", "{cat}", "SELECT * FROM nosuch", code=1, needle="nosuch"),
    C("query-unknown-snapshot", "query", "{cat}", "SELECT * FROM t", "--snapshot", "999", code=1, needle="999"),
    C("query-snapshot-and-as-of", "query", "{cat}", "SELECT 1", "--snapshot", "1", "--as-of", "2020-01-01",
      code=2, needle="cannot be used together"),
    C("query-negative-limit", "query", "{cat}", "SELECT 1", "--limit", "-1", code=2, needle="--limit"),
    C("query-bad-remote", "query", "{cat}", "SELECT 1", "--remote", "http://localhost:1", code=1,
      needle="Spark Connect URL"),
    C("query-bad-conf", "query", "{cat}", "SELECT 1", "--conf", "novalue", code=2, needle="key=value"),
    C("query-no-sql", "query", "{cat}", code=2, needle="CATALOG"),
    C("query-unknown-column", "query", "{cat}", "SELECT nope FROM t", code=1, needle="nope", spark=True),
    # write
    C("write-no-source", "write", "{cat}", "t", code=2, needle="--from"),
    C("write-two-sources", "write", "{cat}", "t", "--from", "{dir}/good.csv", "--query", "SELECT 1", code=2,
      needle="--from"),
    C("write-bad-mode", "write", "{cat}", "t", "--from", "{dir}/good.csv", "--mode", "upsert", code=2,
      needle="upsert"),
    C("write-bad-input-format", "write", "{cat}", "t", "--from", "{dir}/good.csv", "--input-format", "xml", code=2,
      needle="xml"),
    C("write-bad-partition-syntax", "write", "{cat}", "fresh", "--from", "{dir}/good.csv", "--partition-by",
      "month(", code=2, needle="--partition-by"),
    C("write-bad-table-name", "write", "{cat}", "a.b.c", "--from", "{dir}/good.csv", code=2, needle="a.b.c"),
    C("write-bad-option", "write", "{cat}", "t", "--from", "{dir}/good.csv", "--option", "novalue", code=2,
      needle="key=value"),
    C("write-snapshot-and-as-of", "write", "{cat}", "t", "--query", "SELECT 1", "--snapshot", "1", "--as-of",
      "2020-01-01", code=2, needle="cannot be used together"),
    C("write-schema-with-query", "write", "{cat}", "t", "--query", "SELECT 1", "--schema", "a INT", code=2,
      needle="--schema"),
    C("write-bad-on-error", "write", "{cat}", "t", "--from", "{dir}/good.csv", "--on-error", "maybe", code=2,
      needle="maybe"),
    C("write-missing-file", "write", "{cat}", "t", "--from", "{dir}/missing.csv", code=1, needle="missing.csv"),
    C("write-read-only-catalog", "write", "{ro}", "t", "--from", "{dir}/good.csv", code=1, needle="read-only"),
    C("write-read-only-data-dir", "write", "{cat}", "t", "--from", "{dir}/good.csv", "--data-path", "{dir}/ro-data",
      code=1, needle="read-only"),
    C("write-empty-csv", "write", "{cat}", "t", "--from", "{dir}/empty.csv", code=1, needle="empty"),
    C("write-directory-of-non-data", "write", "{cat}", "t", "--from", "{dir}/notdata", "--input-format", "parquet",
      code=1, needle="notdata", spark=True),
    C("write-unknown-partition-column", "write", "{cat}", "fresh", "--from", "{dir}/good.csv", "--partition-by",
      "nosuch", code=2, needle="nosuch", spark=True),
    C("write-create-existing", "write", "{cat}", "t", "--from", "{dir}/good.csv", "--mode", "create", code=1,
      needle="already exists", spark=True),
    # maintain and the aliases
    C("expire-bad-age", "maintain", "expire", "{cat}", "--older-than", "seven days", code=2, needle="seven days"),
    C("expire-bad-ids", "maintain", "expire", "{cat}", "--snapshots", "1,x", code=2, needle="1,x"),
    C("expire-keep-zero", "maintain", "expire", "{cat}", "--keep-last", "0", code=2, needle="--keep-last"),
    C("expire-conflicting", "maintain", "expire", "{cat}", "--snapshots", "1", "--older-than", "7d", code=2,
      needle="--snapshots"),
    C("expire-read-only-catalog", "maintain", "expire", "{ro}", "--keep-last", "1", "--yes", code=1,
      needle="read-only"),
    C("expire-no-yes", "maintain", "expire", "{cat}", "--keep-last", "1", code=2, needle="pass --yes"),
    C("cleanup-conflicting", "maintain", "cleanup", "{cat}", "--all", "--older-than", "1d", code=2, needle="--all"),
    C("orphans-bad-time", "maintain", "orphans", "{cat}", "--older-than", "2026-13-45", code=2, needle="2026-13-45"),
    C("flush-unknown-table", "maintain", "flush", "{cat}", "--table", "nosuch", "--dry-run", code=1,
      needle="nosuch"),
    C("compact-bad-size", "maintain", "compact", "{cat}", "--target-size", "huge", "--dry-run", code=2,
      needle="huge"),
    C("compact-bad-partition", "maintain", "compact", "{cat}", "--table", "t", "--partition", "nokey", "--dry-run",
      code=2, needle="nokey"),
    C("rewrite-bad-threshold", "maintain", "rewrite", "{cat}", "--delete-threshold", "2", "--dry-run", code=2,
      needle="--delete-threshold"),
    C("checkpoint-unknown-table", "maintain", "checkpoint", "{cat}", "--table", "nosuch", "--dry-run", code=1,
      needle="nosuch"),
    C("expire-snapshots-negative", "expire-snapshots", "{cat}", "--keep-last", "-1", code=2, needle="--keep-last"),
    C("cleanup-orphans-bad-age", "cleanup-orphans", "{cat}", "--older-than", "soon", code=2, needle="soon"),
    C("maintain-unknown-verb", "maintain", "vacuum", "{cat}", code=2, needle="vacuum"),
    # spark
    C("spark-start-bad-conf", "spark", "start", "--conf", "novalue", code=2, needle="key=value"),
    C("spark-status-bad-flag", "spark", "status", "--bogus", code=2, needle="--bogus"),
    C("spark-start-unknown-profile", "spark", "start", "--profile", "nosuch", code=1, needle="nosuch"),
]

CONFIG = """
[profiles.prod]
catalog = "postgresql://lake:${NOT_SET_ANYWHERE}@db/lake"
"""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make a file or directory unwritable for this process (chmod; as root, the immutable attribute)."""
    mode = path.stat().st_mode
    path.chmod(0o555 if path.is_dir() else 0o444)
    immutable = False
    if os.geteuid() == 0:
        immutable = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False).returncode == 0
        if not immutable:
            path.chmod(mode)
            pytest.skip("cannot make a path read-only for root here (no chattr)")
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(mode)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The lake (`cat.sqlite`, data in `data/`), its read-only twin `ro/cat.sqlite`, and the bad input files."""
    root = tmp_path_factory.mktemp("bad-input")
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", root / "cat.sqlite", root / "data"))
        con.execute("CREATE TABLE lake.t (id BIGINT, v VARCHAR, d DATE)")
        con.execute("INSERT INTO lake.t SELECT i, 'v' || i, DATE '2026-01-01' + i::INTEGER FROM range(30) r(i)")
        con.execute("INSERT INTO lake.t VALUES (100, 'x', NULL)")
        con.execute("DETACH lake")
        con.execute(f"ATTACH '{root / 'plain.sqlite'}' AS plain (TYPE sqlite)")
        con.execute("CREATE TABLE plain.x (a INTEGER)")
        con.execute("DETACH plain")
    finally:
        con.close()
    (root / "ro").mkdir()
    shutil.copy(root / "cat.sqlite", root / "ro" / "cat.sqlite")
    (root / "ro-data").mkdir()
    (root / "notes.txt").write_text("not a catalog\n")
    (root / "empty.csv").write_bytes(b"")
    (root / "good.csv").write_text("id,v,d\n1,a,2026-02-01\n")
    (root / "notdata").mkdir()
    (root / "notdata" / "README.txt").write_text("nothing to load here\n")
    (root / "ducklake.toml").write_text(CONFIG)
    with read_only(root / "ro" / "cat.sqlite"), read_only(root / "ro-data"):
        yield root


def _jvm_running() -> bool:
    context = sys.modules.get("pyspark.core.context")
    return getattr(getattr(context, "SparkContext", None), "_active_spark_context", None) is not None


def _run(world: Path, case: Case, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    args = [a.format(cat=world / "cat.sqlite", dir=world, ro=world / "ro" / "cat.sqlite") for a in case.args]
    monkeypatch.chdir(world)  # ./ducklake.toml: the profile whose variable is not set
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    monkeypatch.delenv("DUCKLAKE_CONFIG", raising=False)
    monkeypatch.delenv("DUCKLAKE_REMOTE", raising=False)
    before = {p: _digest(p) for p in (world / "cat.sqlite", world / "ro" / "cat.sqlite")}
    data_before = sorted(str(p) for p in (world / "data").rglob("*"))
    with open(os.devnull) as null:
        monkeypatch.setattr(sys, "stdin", null)
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == case.code, (case.id, code, err)
    assert err.count("\n") == 1 and err.endswith("\n"), (case.id, err)
    assert "Traceback" not in err and case.needle in err, (case.id, err)
    assert {p: _digest(p) for p in before} == before, case.id
    assert sorted(str(p) for p in (world / "data").rglob("*")) == data_before, case.id


@pytest.mark.parametrize("case", [c for c in CASES if not c.spark], ids=lambda c: c.id)
def test_bad_input(world: Path, case: Case, capsys: pytest.CaptureFixture[str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    running = _jvm_running()  # another module's Spark may run already: then this cannot be checked
    _run(world, case, capsys, monkeypatch)
    assert running or not _jvm_running(), f"{case.id} started Spark to reject its input"


@pytest.mark.spark
@pytest.mark.parametrize("case", [c for c in CASES if c.spark], ids=lambda c: c.id)
def test_bad_input_on_spark(world: Path, case: Case, capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    _run(world, case, capsys, monkeypatch)


def test_matrix_is_large_enough() -> None:
    assert len(CASES) >= 40 and len({c.id for c in CASES}) == len(CASES)


def test_duckdb_still_reads_the_lake(world: Path) -> None:
    """After every case above (this test runs last in the module): DuckDB attaches the lake and reads it."""
    con = oracle_connect()
    try:
        con.execute(attach_clause("sqlite", world / "cat.sqlite", world / "data", extra_options="READ_ONLY"))
        assert con.execute("SELECT count(*), sum(id) FROM lake.t").fetchone() == (31, 535)
    finally:
        con.close()


PG_CASES = ["inspect-unknown-table", "inspect-unknown-snapshot", "query-syntax", "write-missing-file",
            "write-bad-partition-syntax", "expire-no-yes", "expire-conflicting", "cleanup-conflicting",
            "flush-unknown-table", "checkpoint-unknown-table"]


def _pg_dump(url: str) -> list[tuple[str, list[tuple[object, ...]]]]:
    """Every catalog table's rows, sorted: what 'byte-identical' means for a PostgreSQL catalog."""
    import psycopg

    with psycopg.connect(url.replace("postgresql://", "postgres://")) as con:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                           "'public' ORDER BY table_name").fetchall()]
        return [(n, sorted((con.execute(f'SELECT * FROM "{n}"').fetchall()), key=repr)) for n in names]


@pytest.mark.postgres
def test_bad_input_on_postgres(pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample of the matrix on a PostgreSQL catalog: same codes and lines, every catalog table unchanged."""
    con = oracle_connect()
    try:
        con.execute(attach_clause("postgres", pg_url, tmp_path / "data"))
        con.execute("CREATE TABLE lake.t (id BIGINT, v VARCHAR, d DATE)")
        con.execute("INSERT INTO lake.t SELECT i, 'v' || i, DATE '2026-01-01' + i::INTEGER FROM range(30) r(i)")
        con.execute("DETACH lake")
    finally:
        con.close()
    (tmp_path / "good.csv").write_text("id,v,d\n1,a,2026-02-01\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DUCKLAKE_CATALOG", raising=False)
    before = _pg_dump(pg_url)
    assert len(before) > 10 and any(rows for _, rows in before)
    by_id = {c.id: c for c in CASES}
    with open(os.devnull) as null:
        monkeypatch.setattr(sys, "stdin", null)
        for case in (by_id[i] for i in PG_CASES):
            args = [a.format(cat=pg_url, dir=tmp_path, ro="") for a in case.args]
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = int(exc.code or 0)
            err = capsys.readouterr().err
            assert code == case.code and err.count("\n") == 1 and case.needle in err, (case.id, err)
            assert "lake:lake@" not in err, err  # no password
    assert _pg_dump(pg_url) == before
    con = oracle_connect()
    try:
        con.execute(attach_clause("postgres", pg_url, tmp_path / "data", extra_options="READ_ONLY"))
        assert con.execute("SELECT count(*) FROM lake.t").fetchone() == (30,)
    finally:
        con.close()


def test_every_help_text_keeps_its_brackets(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich markup must not eat `[spark]`-like words: each bracketed word of a command's help shows in --help."""
    import re

    import typer

    from ducklake_cli.cli.app import app

    monkeypatch.setenv("COLUMNS", "250")

    def walk(command: object, path: list[str]) -> Iterator[tuple[list[str], object]]:
        yield path, command
        for name, sub in (getattr(command, "commands", None) or {}).items():
            yield from walk(sub, [*path, name])

    checked = 0
    for path, command in walk(typer.main.get_command(app), []):
        texts = [getattr(command, "help", None) or ""]
        texts += [getattr(p, "help", None) or "" for p in getattr(command, "params", [])]
        words = {w.replace("\\", "") for w in re.findall(r"\[[^\]\s]+\]", " ".join(texts))}
        with contextlib.suppress(SystemExit):
            main([*path, "--help"])
        shown = capsys.readouterr().out.replace("│", " ")
        for word in words:
            assert word in shown, (path, word)
            checked += 1
    assert checked >= 1


@contextlib.contextmanager
def full_disk(path: Path) -> Iterator[None]:
    """A tiny tmpfs at `path`, filled up (needs root and mount rights; skipped otherwise)."""
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], capture_output=True,
                             check=False).returncode == 0
    if not mounted:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        with contextlib.suppress(OSError), open(path / "filler", "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True)


def test_full_data_dir(world: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A data directory on a full device: one line naming it, exit 1, before Spark starts; nothing changed."""
    full = tmp_path / "full"
    with full_disk(full):
        case = C("write-full-disk", "write", "{cat}", "t", "--from", "{dir}/good.csv", "--data-path", str(full),
                 code=1, needle="no space left")
        running = _jvm_running()
        _run(world, case, capsys, monkeypatch)
        assert running or not _jvm_running()
