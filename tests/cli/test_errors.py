"""Bad input: one line on stderr, exit 1, no traceback, and a SQLite catalog left byte-identical."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.built_lakes import BuiltLakes
from tests.support.cli import run_cli


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def lake(tmp_path: Path, built_lakes: BuiltLakes) -> Path:
    """A small DuckDB-written SQLite lake (a copy of the session's)."""
    spot, _ = built_lakes.copy("catalog_example", tmp_path / "lake")
    return Path(spot.catalog)


def _assert_one_line_error(res: object, *needles: str, code: int = 1) -> None:
    rc, err = res.returncode, res.stderr  # type: ignore[attr-defined]
    assert rc == code, (rc, err)
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("error: ") and "Traceback" not in err
    for n in needles:
        assert n in err, err


def test_missing_file(tmp_path: Path) -> None:
    res = run_cli("inspect", str(tmp_path / "nope.sqlite"))
    _assert_one_line_error(res, "does not exist")
    assert not (tmp_path / "nope.sqlite").exists()


def test_unreachable_server() -> None:
    res = run_cli("inspect", "postgresql://lake:hunter2@127.0.0.1:9/lakecat")  # port 9: nothing listens
    _assert_one_line_error(res, "cannot reach PostgreSQL")
    assert "hunter2" not in res.stderr + res.stdout


@pytest.mark.parametrize("server", ["pg_url", "mysql_url"])
def test_wrong_password(server: str, request: pytest.FixtureRequest) -> None:
    parts = urlsplit(request.getfixturevalue(server))
    bad = parts._replace(netloc=f"lake:wrong-Secret-9@{parts.hostname}:{parts.port}").geturl()
    res = run_cli("inspect", bad)
    _assert_one_line_error(res, "refused the credentials")
    assert "wrong-Secret-9" not in res.stderr + res.stdout


def test_not_a_ducklake_sqlite(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE users(id INTEGER)").connection.commit()
    before = _digest(other)
    _assert_one_line_error(run_cli("inspect", str(other)), "holds no DuckLake catalog")
    assert _digest(other) == before


def test_not_a_ducklake_postgres(pg_url: str) -> None:
    _assert_one_line_error(run_cli("inspect", pg_url), "holds no DuckLake catalog")


@pytest.mark.parametrize(("version", "needles"), [
    ("1.1-dev2", ("'1.1-dev2'", "which no DuckDB release writes")),  # a fork's string
    ("banana", ("'banana'", "which no DuckDB release writes")),
    # a 1.0 catalog's tables under 1.1 strings: read refused (1.1's columns missing); upgrade: no downgrade to 1.0
    ("1.1", ("DuckLake 1.1",)),
    ("1.1-dev1", ("DuckLake 1.1-dev1",)),
    ("0.1", ("DuckLake 0.1 catalog", "older than this tool reads", "then run `ducklake upgrade`")),
    ("0.3", ("says DuckLake 0.3 but lacks ducklake_data_file.partial_file_info",)),  # 1.0 tables under a 0.3 string
])
def test_unsupported_version(lake: Path, version: str, needles: tuple[str, ...]) -> None:
    con = sqlite3.connect(lake)
    con.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'version'", (version,))
    con.commit()
    con.close()
    before = _digest(lake)
    for args in (["inspect", str(lake)], ["query", str(lake), "SELECT 1"], ["upgrade", str(lake), "--dry-run"]):
        _assert_one_line_error(run_cli(*args), *needles, code=2)
    assert _digest(lake) == before


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["nosuch"], "table main.nosuch does not exist"),
        (["nosuch.t"], "table nosuch.t does not exist"),
        (["tt"], "did you mean main.t"),
        (["--snapshot", "99"], "snapshot 99 does not exist"),
        (["--as-of", "2001-01-01"], "no snapshot at or before"),
        (["--as-of", "yesterday-ish"], "not an ISO 8601 time"),
    ],
)
def test_unknown_objects_leave_catalog_identical(lake: Path, args: list[str], needle: str) -> None:
    before = _digest(lake)
    res = run_cli("inspect", str(lake), *args)
    if "ISO" in needle:
        assert res.returncode == 2 and needle in res.stderr and res.stderr.count("\n") == 1
    else:
        _assert_one_line_error(res, needle)
    assert _digest(lake) == before


@pytest.mark.parametrize("url", ["ftp://host/x", "postgresql://u:p@/db", "postgresql://u:p@h:port/db", "mysql://u@h"])
def test_malformed_url(url: str) -> None:
    _assert_one_line_error(run_cli("inspect", url), "")


def test_create_catalog_refuses_existing_sqlite(lake: Path, tmp_path: Path) -> None:
    before = _digest(lake)
    _assert_one_line_error(run_cli("create-catalog", str(lake), "--data-path", str(tmp_path / "d")), "already holds")
    assert _digest(lake) == before


def test_debug_shows_traceback(tmp_path: Path) -> None:
    res = run_cli("inspect", str(tmp_path / "nope.sqlite"), "--debug")
    assert res.returncode != 0 and "Traceback" in res.stderr


def test_no_secret_from_profile_in_errors(tmp_path: Path) -> None:
    cfg = tmp_path / "ducklake.toml"
    cfg.write_text('[profiles.prod]\ncatalog = "postgresql://lake:${PGPASS}@127.0.0.1:9/db"\n')
    env = {"DUCKLAKE_CONFIG": str(cfg), "PGPASS": "topsecret-42"}
    res = run_cli("inspect", "prod", env=env)
    _assert_one_line_error(res, "cannot reach PostgreSQL")
    assert "topsecret-42" not in res.stderr + res.stdout
    missing = run_cli("inspect", "prod", env={"DUCKLAKE_CONFIG": str(cfg)})
    _assert_one_line_error(missing, "${PGPASS}", "not set")
    assert os.environ.get("PGPASS") is None


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.spark
def test_ctrl_c_during_a_spark_job_says_interrupted(lake: Path, tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole foreground group, JVM included) while Spark runs: "interrupted", exit 130, no
    Py4J traceback, and the JVM goes too."""
    import signal
    import subprocess
    import sys
    import time

    from tests.support.cli import REPO

    env = {k: v for k, v in os.environ.items() if k not in ("DUCKLAKE_CATALOG", "DUCKLAKE_CONFIG")}
    env["TMPDIR"] = str(tmp_path)  # the Spark console log of this run, not the shared one
    proc = subprocess.Popen([sys.executable, "-m", "ducklake_cli", "query", str(lake),
                             "SELECT count(*) FROM range(1000000000000)"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env, start_new_session=True)
    deadline = time.monotonic() + 90
    while not _children(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    jvm = _children(proc.pid)
    assert jvm, "Spark never started"
    time.sleep(6)  # into session start-up or the job itself; either must end the same way
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == b"interrupted\n", err.decode()[-2000:]
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{p}").exists() for p in jvm) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(Path(f"/proc/{p}").exists() and "java" in Path(f"/proc/{p}/cmdline").read_text() for p in jvm)


@pytest.mark.spark
def test_s3_lake_without_jars_names_what_to_set(tmp_path: Path, built_lakes: BuiltLakes) -> None:
    """An s3:// lake and no jars: Spark is given hadoop-aws from Maven; when that cannot be downloaded (no Maven
    Central here), one line says which setting to use instead."""
    import subprocess
    import sys

    from tests.support.cli import REPO

    cat = Path(built_lakes.copy("catalog_example", tmp_path / "lake")[0].catalog)
    con = sqlite3.connect(cat)
    con.execute("UPDATE ducklake_metadata SET value = 's3://no-such-bucket/lake/' WHERE key = 'data_path'")
    con.commit()
    con.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DUCKLAKE_", "AWS_", "SPARK_"))}
    env.update(TMPDIR=str(tmp_path), HOME=str(tmp_path))  # a private Ivy cache and Spark log
    res = subprocess.run([sys.executable, "-m", "ducklake_cli", "query", str(cat), "SELECT * FROM t WHERE rand() < 2"],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=300, check=False)
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "org.apache.hadoop:hadoop-aws:" in res.stderr and "spark.jars" in res.stderr, res.stderr


def test_s3a_packages_only_when_nothing_is_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The hadoop-aws version is Spark's own Hadoop; any jar setting of the user's (or a hadoop-aws in Spark's
    jars) wins; local and Connect lakes get nothing."""
    from ducklake_cli.engine.session import s3a_packages, spark_hadoop_version

    version = spark_hadoop_version()
    assert version and version[0].isdigit()
    want = {"spark.jars.packages": f"org.apache.hadoop:hadoop-aws:{version}"}
    assert s3a_packages({}, "s3://bucket/lake/") == want
    assert s3a_packages({"spark.executor.memory": "2g"}, "s3a://bucket/lake/") == want
    for key in ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath"):
        assert s3a_packages({key: "x"}, "s3://bucket/lake/") == {}
    assert s3a_packages({}, "/data/lake/") == {} and s3a_packages({}, None) == {}
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "hadoop-client-api-3.4.1.jar").write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(home))
    assert s3a_packages({}, "s3://b/") == {"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1"}
    (home / "jars" / "hadoop-aws-3.4.1.jar").write_bytes(b"")
    assert s3a_packages({}, "s3://b/") == {}


def test_spark_errors_in_plain_words() -> None:
    """Spark's `[ERROR_CLASS]` tag and SQLSTATE go; a full disk or read-only data path is named as such."""
    from ducklake_cli.engine.session import translate_spark_error
    from ducklake_cli.errors import QueryError, StorageError

    err = translate_spark_error(RuntimeError(
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `nope` cannot be "
        "resolved. SQLSTATE: 42703; line 1 pos 7\n== Plan ==\nProject"))
    assert isinstance(err, QueryError) and err.message.startswith("A column, variable") and "[" not in err.message
    java = RuntimeError("org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed\n"
                        "Caused by: java.io.IOException: No space left on device\n\tat java.io.FileOutputStream")
    full = translate_spark_error(java)
    assert isinstance(full, StorageError) and "no space left" in full.message
    ro = translate_spark_error(RuntimeError("java.nio.file.FileSystemException: /d/x.parquet: Read-only file system"))
    assert isinstance(ro, StorageError) and "read-only" in ro.message


def test_write_shows_the_live_progress_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """`write` wraps its work in the same display as `query`; without a session it waits for the JVM that the
    block starts and then shows the same stage line."""
    import io
    import sys
    import time
    from types import SimpleNamespace

    from ducklake_cli.cli import write as write_cli
    from ducklake_cli.engine import progress

    assert "spark_progress()" in Path(write_cli.__file__).read_text()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stage = SimpleNamespace(stageId=3, numCompletedTasks=1, numTasks=4, numActiveTasks=2)
    tracker = SimpleNamespace(getActiveStageIds=lambda: [3], getStageInfo=lambda sid: stage)
    context = SimpleNamespace(statusTracker=lambda: tracker, _jsc=object())
    started: list[object] = []
    monkeypatch.setattr(progress, "_active_context", lambda: started[0] if started else None)
    monkeypatch.setattr(progress, "POLL_SECONDS", 0.02)
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with progress.spark_progress():
        time.sleep(0.2)
        assert term.getvalue() == ""  # no JVM yet: nothing shown
        started.append(context)
        time.sleep(0.5)
    assert "Spark stage 3: 1/4 tasks done, 2 running" in term.getvalue()
