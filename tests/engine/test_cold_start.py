"""Class-data sharing for the driver JVM (engine/cds.py): which archive is offered, and that a damaged or
mismatched one never fails a command nor prints anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ducklake_cli.engine import cds
from ducklake_cli.engine.session import _spark_jars_dir
from tests.support.oracle import oracle_connect

DUCKLAKE = Path(sys.executable).with_name("ducklake")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cds"
    root.mkdir()
    monkeypatch.setenv("DUCKLAKE_CDS_DIR", str(root))
    monkeypatch.setenv("DUCKLAKE_CDS", "1")
    monkeypatch.setenv("DUCKLAKE_CDS_BUILD", "0")
    return root


def _fake_archive(root: Path, key: str, *, body: bytes = b"\0" * 64, vouch: bool = True) -> Path:
    archive = root / f"{key}.jsa"
    archive.write_bytes(cds.MAGIC + body)
    st = archive.stat()
    size = st.st_size if vouch else st.st_size + 1
    (root / f"{key}.json").write_text(json.dumps({"size": size, "mtime_ns": st.st_mtime_ns}))
    return archive


def test_sound_archive_is_offered_and_damaged_one_is_not(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = cds.archive_key({}, _spark_jars_dir())
    assert key is not None
    assert cds.driver_options({}, _spark_jars_dir()) == ""  # none yet
    archive = _fake_archive(cache, key)
    opts = cds.driver_options({}, _spark_jars_dir())
    assert f"-XX:SharedArchiveFile={archive}" in opts and "-Xlog:cds=off" in opts
    archive.write_bytes(archive.read_bytes()[:10])  # truncated after it was made: the JVM would crash on it
    assert cds.driver_options({}, _spark_jars_dir()) == ""
    _fake_archive(cache, key, vouch=False)
    assert cds.driver_options({}, _spark_jars_dir()) == ""
    _fake_archive(cache, key)
    monkeypatch.setenv("DUCKLAKE_CDS", "0")
    assert cds.driver_options({}, _spark_jars_dir()) == ""


def test_key_follows_classpath_and_driver_flags(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "a.jar").write_bytes(b"a")
    base = cds.archive_key({}, jars)
    assert base is not None and base == cds.archive_key({}, jars)
    assert cds.archive_key({"spark.driver.extraClassPath": "/x.jar"}, jars) != base
    assert cds.archive_key({"spark.driver.extraJavaOptions": "-XX:+UseParallelGC"}, jars) != base
    assert cds.archive_key({"spark.sql.shuffle.partitions": "3"}, jars) == base  # no bearing on classes
    (jars / "b.jar").write_bytes(b"b")
    assert cds.archive_key({}, jars) != base
    assert cds.archive_key({}, tmp_path / "missing") is None


def test_failed_build_is_not_retried_at_once(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUCKLAKE_CDS_BUILD", "1")
    monkeypatch.setattr(cds, "_scheduled", [])
    key = cds.archive_key({}, _spark_jars_dir())
    (cache / f"{key}.failed").touch()
    assert cds.driver_options({}, _spark_jars_dir()) == ""
    assert cds._scheduled == []


@pytest.mark.spark
def test_query_with_damaged_archive_works_quietly(cache: Path, tmp_path: Path) -> None:
    """A file that passes our check (magic number, manifest) but is no archive the JVM can use: the JVM is handed
    it and must ignore it without a word. (A truncated one is never handed over: the test above.)"""
    con = oracle_connect()
    con.execute(f"ATTACH 'ducklake:sqlite:{tmp_path}/cat.sqlite' AS l (DATA_PATH '{tmp_path}/data/')")
    con.execute("CREATE TABLE l.t AS SELECT range AS x FROM range(100)")
    con.execute("DETACH l")
    key = cds.archive_key({}, _spark_jars_dir())
    assert key is not None
    archive = _fake_archive(cache, key, body=os.urandom(1 << 16))
    assert cds.usable_archive(key) == archive
    env = dict(os.environ, DUCKLAKE_WARM="0")
    out = subprocess.run([str(DUCKLAKE), "query", str(tmp_path / "cat.sqlite"), "SELECT sum(x) AS s FROM t",
                          "--format", "csv"], env=env, capture_output=True, text=True, timeout=300)
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.split() == ["s", "4950"]
