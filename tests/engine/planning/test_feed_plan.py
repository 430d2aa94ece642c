"""The change feed's sources, chosen from metadata alone as DuckDB 1.5 chooses them (no Spark)."""

from __future__ import annotations

from ducklake_cli.catalog.models import DataFile, DeleteFile
from ducklake_cli.engine.planning.feed_plan import DeleteEntry, InsertFile, delete_entries, insert_files
from ducklake_cli.engine.planning.scan_plan import DeleteSource


def _data(file_id: int, begin: int, end: int | None = None, partial_max: int | None = None) -> DataFile:
    return DataFile(data_file_id=file_id, table_id=1, begin_snapshot=begin, end_snapshot=end, path=f"d{file_id}",
                    path_is_relative=True, file_format="parquet", record_count=10, file_size_bytes=1,
                    footer_size=None, row_id_start=0, partition_id=None, partial_max=partial_max)


def _delete(delete_id: int, file_id: int, begin: int) -> DeleteFile:
    return DeleteFile(delete_file_id=delete_id, table_id=1, begin_snapshot=begin, end_snapshot=None,
                      data_file_id=file_id, path=f"x{delete_id}", path_is_relative=True, format="parquet",
                      delete_count=1, file_size_bytes=1, footer_size=None)


def _source(d: DeleteFile) -> DeleteSource:
    return DeleteSource(d.delete_file_id, d.path, "parquet", False, d.begin_snapshot)


Entry = tuple[int, int, int | None, int | None, bool, tuple[tuple[int, int], ...]]


def _ids(entries: list[DeleteEntry]) -> list[Entry]:
    return [(e.data_file_id, e.snapshot_id, e.current.delete_file_id if e.current else None,
             e.previous.delete_file_id if e.previous else None, e.whole_file, e.inlined) for e in entries]


def test_insert_files_begun_in_range_and_partial_files_reaching_into_it() -> None:
    files = [_data(1, 2), _data(2, 5), _data(3, 3, partial_max=7), _data(4, 8), _data(5, 1, end=4)]
    assert insert_files(files, 4, 6) == [
        InsertFile(2), InsertFile(3, min_snapshot=4, max_snapshot=6)]
    # Ended files still count for the snapshots that inserted them; a partial file inside the range is unfiltered.
    assert insert_files(files, 1, 7) == [InsertFile(1), InsertFile(2), InsertFile(3), InsertFile(5)]
    assert insert_files(files, 8, 8, range_id=3) == [InsertFile(4, range_id=3)]


def test_delete_files_against_the_newest_delete_file_before_start() -> None:
    files = [_data(1, 2)]
    deletes = [_delete(10, 1, 3), _delete(11, 1, 5), _delete(12, 1, 9)]
    # Every delete file begun by the end is an entry (DuckDB's query), each against the newest before the start.
    assert _ids(delete_entries(files, deletes, [], 4, 6, source=_source, has_inlined_table=False)) == [
        (1, 3, 10, 10, False, ()), (1, 5, 11, 10, False, ())]
    assert _ids(delete_entries(files, deletes, [], 1, 9, source=_source, has_inlined_table=False)) == [
        (1, 3, 10, None, False, ()), (1, 5, 11, None, False, ()), (1, 9, 12, None, False, ())]


def test_ended_files_are_deleted_whole_unless_an_inlined_deletion_is_in_range() -> None:
    files = [_data(1, 2, end=6), _data(2, 2, end=6)]
    deletes = [_delete(10, 1, 3)]
    inlined = [(2, 4, 5)]  # file 2, position 4, deleted inline at snapshot 5
    assert _ids(delete_entries(files, deletes, inlined, 6, 6, source=_source, has_inlined_table=True)) == [
        (1, 3, 10, 10, False, ()), (1, 6, None, 10, True, ()), (2, 6, None, None, True, ())]
    # DuckDB 1.5.5: with the inlined deletion in range, the ended file yields only that deletion.
    assert _ids(delete_entries(files, deletes, inlined, 5, 6, source=_source, has_inlined_table=True)) == [
        (1, 3, 10, 10, False, ()), (1, 6, None, 10, True, ()), (2, 6, None, None, False, ((4, 5),))]


def test_inlined_deletions_of_files_without_delete_files() -> None:
    files = [_data(1, 2), _data(2, 2)]
    deletes = [_delete(10, 1, 3)]
    inlined = [(1, 0, 4), (2, 1, 4), (2, 2, 6)]
    entries = delete_entries(files, deletes, inlined, 4, 6, source=_source, has_inlined_table=True)
    # File 1 has a delete file: its inlined deletions ride on that entry; file 2's get an entry at their first.
    assert _ids(entries) == [(1, 3, 10, 10, False, ((0, 4),)), (2, 4, None, None, False, ((1, 4), (2, 6)))]
    assert [e.entry_id for e in entries] == [0, 1]
    assert delete_entries(files, deletes, inlined, 7, 8, source=_source, has_inlined_table=True)[0].inlined == ()


def test_table_functions_found_and_rewritten_to_views() -> None:
    import pytest

    from ducklake_cli.engine.planning.feed_sql import FeedRef
    from ducklake_cli.engine.planning.sql_rewrite import parse_query
    from ducklake_cli.errors import QueryError

    parsed = parse_query("SELECT c.change_type, count(*) FROM table_changes('t', 1, 5) c JOIN main.x ON c.a = x.a "
                         "JOIN ducklake_table_deletions('lake', 's', 'u', TIMESTAMP '2026-01-01 00:00:00', '7') d "
                         "ON d.rowid = c.rowid GROUP BY 1")
    assert parsed.feed_refs() == [FeedRef("changes", "t", 1, 5), FeedRef("deletions", "s.u", "2026-01-01 00:00:00", 7)]
    assert [r.qualified for r in parsed.table_refs()] == ["main.x"]
    views = dict(zip(parsed.feed_refs(), ["F1", "F2"], strict=True))
    assert parsed.rewrite({parsed.table_refs()[0]: "V"}, feed_views=views) == (
        "SELECT c.change_type, COUNT(*) FROM F1 AS c JOIN V AS x ON c.a = x.a JOIN F2 AS d ON d.rowid = c.rowid "
        "GROUP BY 1")
    with pytest.raises(QueryError, match="takes 3 arguments"):
        parse_query("SELECT * FROM table_insertions('t', 1)").feed_refs()
    with pytest.raises(QueryError, match="snapshot id or a time literal"):
        parse_query("SELECT * FROM table_insertions('t', 1, x)").feed_refs()
