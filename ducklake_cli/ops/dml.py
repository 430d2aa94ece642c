"""Row-level changes: DELETE, UPDATE, MERGE INTO, INSERT [OVERWRITE] and CREATE TABLE AS in Spark SQL, committed as
one snapshot written the way DuckDB writes it (spec §4, §5.4): deletes per data file (inlined, a new delete file,
a replacing delete file, or an ended file), updated rows keeping their row ids, small changes inlined.

A script runs its statements in order, each seeing the ones before, and commits them together. Positions of
deleted rows never reach the driver: Spark executors find them and write the delete files
(`engine/delete_files.py`); the driver gets one small description per data file.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ducklake_cli.catalog import options as lake_options
from ducklake_cli.engine.planning.dml_plan import (
    TARGET_VIEW,
    MergeClause,
    Statement,
    delete_select,
    merge_select,
    parse_change,
    update_select,
)
from ducklake_cli.errors import CommitConflictError, NotFoundError, QueryError, UsageError
from ducklake_cli.ops.results import Section

if TYPE_CHECKING:
    from ducklake_cli.catalog.models import ColumnInfo, LakeMetadata, NewDataFile, SchemaInfo, TableInfo
    from ducklake_cli.catalog.transaction import Transaction
    from ducklake_cli.engine.delete_files import DeleteOutcome
    from ducklake_cli.engine.planning.scan_plan import ScanPlan
    from ducklake_cli.engine.session import DataFrame
    from ducklake_cli.lake import Lake

MAX_RETAGS = 5
_statements = itertools.count()  # names each statement's target view uniquely in the Spark session


@dataclass(frozen=True)
class ChangeResult:
    """What a change (one statement or a script) did, or would do with `--dry-run`."""

    statements: int
    tables: tuple[str, ...]
    snapshot_id: int | None
    deleted: int
    updated: int
    inserted: int
    data_files: int
    delete_files: int
    dry_run: bool = False

    def sections(self) -> list[Section]:
        """One key/value section for the table renderer."""
        snap: object = "dry run: nothing committed" if self.dry_run else (
            "nothing committed" if self.snapshot_id is None else self.snapshot_id)
        rows = (("tables", ", ".join(self.tables)), ("statements", self.statements), ("snapshot", snap),
                ("rows deleted", self.deleted), ("rows updated", self.updated), ("rows inserted", self.inserted),
                ("data files written", self.data_files), ("delete files written", self.delete_files))
        return [Section("change", ("field", "value"), rows)]

    def to_json(self) -> dict[str, Any]:
        """Stable JSON (README: `query --format json` of a change)."""
        return {"tables": list(self.tables), "statements": self.statements, "snapshot_id": self.snapshot_id,
                "rows_deleted": self.deleted, "rows_updated": self.updated, "rows_inserted": self.inserted,
                "data_files": self.data_files, "delete_files": self.delete_files, "dry_run": self.dry_run}


@dataclass
class _NewRows:
    """Rows one statement adds: `update` (keep their row ids, in `ROW_ID`), `insert`, or `merge_insert` (DuckDB
    never inlines a MERGE's inserts)."""

    kind: str
    frame: DataFrame
    statement: int


@dataclass
class _TableState:
    """A target table as the script has changed it so far (nothing written to the catalog yet)."""

    table: TableInfo
    schema: SchemaInfo
    table_dir: str
    plan: ScanPlan  # every live file: what deletes are checked against
    limit: int
    schemas: list[SchemaInfo] = field(default_factory=list)
    deletes: list[DataFrame] = field(default_factory=list)  # (FILE_ID, POSITION, STATEMENT) of committed rows
    gone_inlined: set[int] = field(default_factory=set)  # row ids of committed inlined rows deleted
    new_rows: list[_NewRows] = field(default_factory=list)
    cached: list[DataFrame] = field(default_factory=list)


@dataclass
class _Written:
    """One table's files and outcomes, ready to commit."""

    state: _TableState
    outcomes: list[DeleteOutcome]
    files: list[tuple[str, list[NewDataFile]]]  # (kind, files) per new-rows group
    inlined: list[tuple[str, Any, Any, list[int] | None]]  # (kind, values, stats, row ids)
    planned_snapshot: int


def _deletes_frame(state: _TableState) -> DataFrame | None:
    if not state.deletes:
        return None
    out = state.deletes[0]
    for d in state.deletes[1:]:
        out = out.unionByName(d)
    return out


class _Change:
    """One script (or statement) being applied against the latest snapshot."""

    def __init__(self, lake: Lake, sources: Mapping[str, DataFrame]) -> None:
        self.lake = lake
        self.sources = frozenset(n.lower() for n in sources)
        for name, df in sources.items():
            df.createOrReplaceTempView(name)
        with lake.reader() as r:
            self.base = r.latest_snapshot()
            self.meta: LakeMetadata = r.metadata()
            self.data_path = r.data_path
        self.tables: dict[int, _TableState] = {}

    # ----- planning --------------------------------------------------------------------------------------------

    def state(self, st: Statement) -> _TableState:
        from ducklake_cli.catalog.paths import table_dir
        from ducklake_cli.engine.planning.scan_plan import plan_scan
        from ducklake_cli.ops.write import inline_limit

        with self.lake.reader() as r:
            sid = self.base.snapshot_id
            try:
                table = r.find_table(sid, st.qualified)
            except NotFoundError:
                views = {f"{v.schema_name}.{v.name}".lower() for v in r.views(sid)}
                if st.qualified.lower() in views:
                    raise QueryError(f"{st.qualified} is a view; {st.kind.upper()} changes tables only") from None
                raise
            if table.table_id in self.tables:
                return self.tables[table.table_id]
            schemas = r.schemas(sid)
            schema = next(x for x in schemas if x.schema_id == table.schema_id)
            plan = plan_scan(r, table=table, snapshot_id=sid, data_path=self.data_path, schemas=schemas,
                             storage_options=self.lake.storage_options)
        if self.meta.encrypted:
            raise UsageError("this lake is encrypted; row-level changes cannot write encrypted files yet")
        limit = inline_limit(self.lake, self.meta, table.columns, table_id=table.table_id,
                             schema_id=schema.schema_id)
        state = _TableState(table, schema, table_dir(self.data_path, schema, table), plan, limit, schemas)
        self.tables[table.table_id] = state
        return state

    def _pruned(self, state: _TableState, st: Statement) -> ScanPlan:
        """The target's scan for one statement: files its WHERE cannot match are left out."""
        from ducklake_cli.engine.planning.dml_plan import target_predicates
        from ducklake_cli.engine.planning.scan_plan import plan_scan

        predicates = target_predicates(st)
        if not predicates:
            return state.plan
        with self.lake.reader() as r:
            return plan_scan(r, table=state.table, snapshot_id=self.base.snapshot_id, data_path=self.data_path,
                             schemas=state.schemas, predicates=predicates, storage_options=self.lake.storage_options)

    def select(self, sql: str, view: str) -> DataFrame:
        """A generated SELECT over the target view `view` and any lake tables, at the base snapshot; a table the
        script has changed so far is read as the script left it, wherever the statement names it (as in one DuckDB
        transaction)."""
        from ducklake_cli.engine.planning.sql_rewrite import bind_tables
        from ducklake_cli.engine.run_query import frame, register_views
        from ducklake_cli.ops.query import plan_sql

        bound = self.sources | {view}
        current = self.current_views()
        if current:
            sql = bind_tables(sql, current, bound=bound)
            bound |= set(current.values())
        with self.lake.reader() as r:
            plan = plan_sql(self.lake, r, sql, snapshot=self.base, bound=bound)
        spark = self.lake.spark()
        register_views(spark, plan)
        return frame(spark, plan)

    def current_views(self) -> dict[tuple[str, str], str]:
        """A temp view per table the script has changed so far, holding its rows as the script left them; keyed by
        lower-case `(schema, table)`. Each call names new views (Spark Connect resolves a view's name again
        whenever a frame built on it runs)."""
        from ducklake_cli.engine import dml

        out = {}
        for state in self.tables.values():
            if not (state.deletes or state.new_rows or state.gone_inlined):
                continue
            pending = dml.pending_frame([(n.frame, n.kind == "update") for n in state.new_rows], state.table.columns)
            target = dml.target_frame(self.lake.spark(), state.plan, deletes=_deletes_frame(state),
                                      gone_inlined=frozenset(state.gone_inlined), pending=pending)
            name = f"__ducklake_current_{next(_statements)}"
            dml.table_rows(target, state.table.columns).createOrReplaceTempView(name)
            out[(state.schema.name.lower(), state.table.name.lower())] = name
        return out

    def apply(self, index: int, st: Statement, *, more: bool = False) -> None:
        """Find the rows `st` changes and stage its effects (nothing written yet). With `more` statements to come,
        what it staged is computed now, on the executors, and later statements read that: each reads the ones
        before it, and without the cut a script's plans would double in size with every statement."""
        from ducklake_cli.engine import dml
        from ducklake_cli.engine.scan import ROW_ID

        def staged(frame: DataFrame) -> DataFrame:
            return frame.localCheckpoint() if more else frame

        state = self.state(st)
        spark = self.lake.spark()
        pending = dml.pending_frame([(n.frame, n.kind == "update") for n in state.new_rows], state.table.columns)
        target = dml.target_frame(spark, self._pruned(state, st), deletes=_deletes_frame(state),
                                  gone_inlined=frozenset(state.gone_inlined), pending=pending)
        view = f"{TARGET_VIEW}_{next(_statements)}"
        target.createOrReplaceTempView(view)
        columns = state.table.columns
        conform = functools.partial(dml.conform_values, table=state.table.qualified_name)  # names it in errors
        if st.kind == "insert":
            source, marks = _values_defaults(st.source or "")
            constants = None if marks else _constant_values(source, columns, st.columns)
            given = dml.duckdb_rows(spark, constants, st.qualified) if constants else self.select(source, view)
            rows = dml.insert_frame(given, columns, st.columns, st.qualified, marks)
            state.new_rows.append(_NewRows("insert", staged(conform(rows, columns)), index))
            return
        names = [c.name for c in columns]
        unnamed: list[list[str]] = []
        if st.kind == "merge":
            st, unnamed = _merge_defaults(st, names)
        sql = {"delete": lambda: delete_select(st, view), "update": lambda: update_select(st, names, view),
               "merge": lambda: merge_select(st, names, view)}[st.kind]()
        df = self.select(sql, view)
        if st.kind != "delete":  # read twice: for the delete files and for the new versions
            df = df.persist()
            state.cached.append(df)
        removed = df
        if st.kind == "merge":
            removed, updates, inserts = dml.merge_parts(df, [c.action for c in st.clauses],
                                                        [i for i, c in enumerate(st.clauses) if c.match == "matched"])
        if pending is not None and dml.touches_pending(removed):
            raise QueryError(f"statement {index + 1} changes rows an earlier statement of this script wrote",
                             hint="run it in a separate command after this script commits")
        state.deletes.append(staged(dml.location_rows(removed, index)))
        if state.plan.inlined:
            state.gone_inlined.update(dml.inlined_row_ids(removed))
        if st.kind == "update":
            state.new_rows.append(_NewRows("update", staged(conform(df, columns, keep=[ROW_ID])), index))
        elif st.kind == "merge":
            if any(c.action == "update" for c in st.clauses):
                state.new_rows.append(_NewRows("update", staged(conform(updates, columns, keep=[ROW_ID])),
                                               index))
            if any(c.action == "insert" for c in st.clauses):
                if any(unnamed) and any(c.default_value not in (None, "NULL") for c in columns):
                    inserts = dml.merge_insert_defaults(inserts, columns, unnamed)
                state.new_rows.append(_NewRows("merge_insert", staged(conform(inserts, columns)), index))

    # ----- dry run ----------------------------------------------------------------------------------------------

    def counts(self) -> tuple[int, int, int]:
        """(deleted, updated, inserted) without writing anything."""
        deleted = updated = inserted = 0
        for state in self.tables.values():
            d = _deletes_frame(state)
            deleted += (d.count() if d is not None else 0) + len(state.gone_inlined)
            for n in state.new_rows:
                rows = n.frame.count()
                if n.kind == "update":
                    updated += rows
                else:
                    inserted += rows
        return deleted - updated, updated, inserted

    # ----- writing and committing ------------------------------------------------------------------------------

    def write(self, state: _TableState, planned: int) -> _Written:
        """Write the table's new rows and delete files (the delete files tag new positions with `planned`)."""
        written = _Written(state, [], [], [], planned)
        try:
            self._write_rows(state, written)
            written.outcomes = self._write_deletes(state, planned)
        except BaseException:
            self.remove(written)
            raise
        return written

    def _write_rows(self, state: _TableState, written: _Written) -> None:
        from ducklake_cli.catalog.inlined import encode_inlined
        from ducklake_cli.engine.parquet_files import data_stats
        from ducklake_cli.engine.writer import (
            leaves,
            partition_keys,
            read_back,
            read_row_ids,
            sort_orders,
            write_files,
        )
        from ducklake_cli.ops.tables import file_spec

        t = state.table
        part = [(f.column_id, f.transform) for f in t.partition.fields] if t.partition else []
        for n in state.new_rows:
            spec = file_spec(self.lake, self.meta, table_dir=state.table_dir, columns=t.columns,
                             keys=partition_keys(t.columns, part), table_id=t.table_id,
                             schema_id=state.schema.schema_id, row_ids=n.kind == "update", table=t.qualified_name)
            # DuckDB sorts an INSERT by the table's sort keys, but not an UPDATE's or a MERGE's new rows.
            sorted_insert = n.kind == "insert" and bool(t.sort_keys) and lake_options.flag(
                self.meta, "sort_on_insert", table_id=t.table_id, schema_id=state.schema.schema_id)
            sort = sort_orders(n.frame, t.columns, t.sort_keys, t.qualified_name) if sorted_insert else []
            files = write_files(n.frame, spec, sort=sort)
            written.files.append((n.kind, files))
            rows = sum(f.record_count for f in files)
            if n.kind == "merge_insert" or not 0 < rows <= state.limit:
                continue
            paths = [state.table_dir + f.path for f in files]
            data = read_back(paths, t.columns, self.lake.storage_options)
            ids = read_row_ids(paths, self.lake.storage_options) if n.kind == "update" else None
            written.inlined.append((n.kind, encode_inlined(data, t.columns), data_stats(data, leaves(t.columns)),
                                    ids))
            written.files[-1] = (n.kind, [])
            _remove_files(self.lake, state.table_dir, files)

    def _write_deletes(self, state: _TableState, planned: int) -> list[DeleteOutcome]:
        from ducklake_cli.engine.delete_files import DeleteJob, TargetFile
        from ducklake_cli.engine.dml import delete_outcomes

        deletes = _deletes_frame(state)
        if deletes is None:
            return []
        files = {f.data_file_id: TargetFile(
            f.data_file_id, f.path, f.record_count,
            f.delete.path if f.delete else None, f.delete.format if f.delete else None,
            f.delete.begin_snapshot if f.delete else 0) for f in state.plan.files}
        # DuckLake 1.1 with `write_deletion_vectors`: Puffin files (multi-snapshot containers); 1.0: Parquet, as ever
        puffin = self.lake.v11 and lake_options.flag(self.meta, "write_deletion_vectors",
                                                     table_id=state.table.table_id, schema_id=state.schema.schema_id)
        job = DeleteJob(state.table_dir, files, state.limit, planned, dict(self.lake.storage_options), puffin=puffin)
        return delete_outcomes(deletes, job)

    def remove(self, written: _Written) -> None:
        """Delete what `written` put on storage (a failed or superseded attempt)."""
        for _, files in written.files:
            _remove_files(self.lake, written.state.table_dir, files)
        _remove_paths(self.lake, [written.state.table_dir + o.path for o in written.outcomes if o.path])

    def build(self, tx: Transaction, writes: Sequence[_Written]) -> None:
        """The catalog rows of the whole change (spec §5.4), after the conflict checks of §5.5."""
        from sqlalchemy import and_, update

        from ducklake_cli.catalog import schema as s
        from ducklake_cli.catalog.deletes import (
            add_delete_file,
            add_inlined_file_deletes,
            drop_delete_file,
            end_inlined_rows,
        )
        from ducklake_cli.catalog.paths import relative_to_root
        from ducklake_cli.catalog.writes import TableWrite

        for w in writes:
            self._check_conflicts(tx, w)
            if tx.snapshot_id != w.planned_snapshot and any(o.partial_max is not None for o in w.outcomes):
                raise _Retag(tx.snapshot_id)
        for w in writes:
            t = w.state.table
            tw = TableWrite(tx, t)
            for _kind, files in w.files:
                tw.add_files(files)
            for _kind, values, stats, ids in w.inlined:
                tw.add_inlined(values, stats, row_ids=ids)
            add_inlined_file_deletes(tx, t.table_id, [(o.data_file_id, p) for o in w.outcomes if o.kind == "inline"
                                                       for p in o.positions])
            ended = [o.data_file_id for o in w.outcomes if o.kind == "end"]
            if ended:
                df = s.data_file_t
                tx.execute(update(df).where(and_(df.c.table_id == t.table_id, df.c.data_file_id.in_(ended),
                                                 df.c.end_snapshot.is_(None))).values(end_snapshot=tx.snapshot_id))
                tx.change("deleted_from_table", t.table_id)
            by_id = {f.data_file_id: f for f in w.state.plan.files}
            # Delete file ids backwards by data file: DuckDB hands them out in its hash map's order, which varies
            # from run to run; for a few files it is this order most often (7 of 8 runs for two files).
            for o in sorted(w.outcomes, key=lambda o: -o.data_file_id):
                if o.kind != "file" or o.path is None:
                    continue
                old = by_id[o.data_file_id].delete
                if old is not None:
                    drop_delete_file(tx, t.table_id, old.delete_file_id, relative_to_root(old.path, self.data_path))
                add_delete_file(tx, t.table_id, o.data_file_id, path=o.path, count=o.count, size=o.size,
                                footer=o.footer, begin_snapshot=o.begin_snapshot if old else tx.snapshot_id,
                                partial_max=o.partial_max, fmt=o.format, row_groups=o.row_groups)
                tx.change("deleted_from_table", t.table_id)
            if w.state.gone_inlined and end_inlined_rows(tx, [i.table_name for i in t.inlined_tables],
                                                         sorted(w.state.gone_inlined)):
                tx.change("inlined_delete", t.table_id)
            tw.finish()

    def _check_conflicts(self, tx: Transaction, w: _Written) -> None:
        """Spec §5.5 for the change's kinds on this table, against what others committed since the base."""
        if tx.latest.snapshot_id == self.base.snapshot_id:
            return
        other = tx.changes_since(self.base.snapshot_id)
        tid = str(w.state.table.table_id)
        name = w.state.table.qualified_name
        file_deletes = any(o.kind != "inline" for o in w.outcomes)
        inline_deletes = any(o.kind == "inline" for o in w.outcomes) or bool(w.state.gone_inlined)
        inserts = bool(w.files and any(f for _, f in w.files)) or bool(w.inlined)
        blocking = {"tables_dropped", "tables_altered"}
        if file_deletes:
            blocking |= {"merge_adjacent", "rewrite_delete", "tables_inserted_into", "inlined_insert",
                         "flushed_inlined"}
        if inline_deletes:
            blocking |= {"inlined_delete", "flushed_inlined", "tables_inserted_into", "inlined_insert"}
        if inserts:
            blocking |= {"tables_deleted_from", "inlined_delete"}
        for key in sorted(blocking):
            if tid in other.get(key, set()):
                raise CommitConflictError(f"another writer changed table {name} meanwhile "
                                          f"({key.replace('_', ' ')})", hint="nothing was changed; run it again")
        if file_deletes and tid in other.get("tables_deleted_from", set()):
            self._check_files(tx, w, name)

    def _check_files(self, tx: Transaction, w: _Written, name: str) -> None:
        """Both deleted from the table: conflict when a data file we delete from got another delete file or ended."""
        live = {f.data_file_id for f in tx.reader.data_files(tx.latest.snapshot_id, [w.state.table.table_id])}
        deletes = {d.data_file_id: d.delete_file_id
                   for d in tx.reader.delete_files(tx.latest.snapshot_id, [w.state.table.table_id])}
        planned = {f.data_file_id: f.delete.delete_file_id if f.delete else None for f in w.state.plan.files}
        for o in w.outcomes:
            if o.kind == "inline":
                continue
            if o.data_file_id not in live or deletes.get(o.data_file_id) != planned.get(o.data_file_id):
                raise CommitConflictError(f"another writer deleted from the same data files of table {name} "
                                          "meanwhile", hint="nothing was changed; run it again")

    def release(self) -> None:
        """Drop cached frames."""
        for state in self.tables.values():
            for df in state.cached:
                with contextlib.suppress(Exception):
                    df.unpersist()


class _Retag(Exception):
    """The commit got another snapshot id than the delete files were tagged with: write them again."""

    def __init__(self, snapshot_id: int) -> None:
        super().__init__(snapshot_id)
        self.snapshot_id = snapshot_id


def _remove_files(lake: Lake, table_dir: str, files: Sequence[NewDataFile]) -> None:
    _remove_paths(lake, [table_dir + f.path for f in files])


def _remove_paths(lake: Lake, paths: Sequence[str]) -> None:
    from ducklake_cli.storage.files import filesystem

    for path in paths:
        with contextlib.suppress(OSError):  # what stays is left for `maintain orphans`
            filesystem(path, lake.storage_options).rm(path)


def _merge_defaults(st: Statement, names: Sequence[str]) -> tuple[Statement, list[list[str]]]:
    """A MERGE whose INSERT values `DEFAULT` are left out, and per clause the columns its INSERT does not name
    (they get their DEFAULT, as in DuckDB)."""
    from dataclasses import replace

    clauses: list[MergeClause] = []
    unnamed: list[list[str]] = []
    for c in st.clauses:
        if c.action != "insert" or c.star or (c.assignments and not c.assignments[0][0]
                                             and len(c.assignments) != len(names)):
            clauses.append(c)  # a wrong count is refused by merge_select, naming it
            unnamed.append([])
            continue
        given = [(k or names[i], v) for i, (k, v) in enumerate(c.assignments)]
        kept = tuple((k, v) for k, v in given if v.strip().upper() != "DEFAULT")
        clauses.append(replace(c, assignments=kept))
        named = {k.lower() for k, _ in kept}
        unnamed.append([n for n in names if n.lower() not in named])
    return replace(st, clauses=tuple(clauses)), unnamed


def _constant_values(source: str, columns: Sequence[ColumnInfo], named: Sequence[str]) -> str | None:
    """DuckDB's SQL for an INSERT's VALUES of constants cast to their target columns (`dml_plan.constant_values`);
    None when the values are not all constants or do not line up with the columns."""
    from ducklake_cli.catalog.inlined import spark_compatible_type, stored_type
    from ducklake_cli.engine.planning.dml_plan import constant_values

    by_name = {c.name.lower(): c for c in columns}
    targets = [by_name.get(n.lower()) for n in named] if named else list(columns)
    if any(t is None for t in targets):
        return None
    temporal = ("date", "timestamp", "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_ns")
    return constant_values(source, [(stored_type(t), spark_compatible_type(t), t.type in temporal)
                                    for t in targets if t is not None])


def _values_defaults(source: str) -> tuple[str, list[int]]:
    """An INSERT's `VALUES (…, DEFAULT, …)` with each DEFAULT as NULL plus, per position that has one, a last
    column flagging the rows that said DEFAULT (they get the column's DEFAULT, as in DuckDB); other sources as
    they are."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    from ducklake_cli.engine.planning.dialect import DIALECT, sql_text

    def is_default(e: exp.Expr) -> bool:
        return isinstance(e, exp.Var) and e.name.upper() == "DEFAULT"

    try:
        tree = sqlglot.parse_one(source, read=DIALECT)
    except SqlglotError:
        return source, []
    if not isinstance(tree, exp.Values) or tree.args.get("alias") or not any(is_default(e) for row in tree.expressions
                                                   for e in row.expressions):
        return source, []
    marks = sorted({j for row in tree.expressions for j, e in enumerate(row.expressions) if is_default(e)})
    for row in tree.expressions:
        flags = [exp.Boolean(this=j < len(row.expressions) and is_default(row.expressions[j])) for j in marks]
        row.set("expressions", [exp.Null() if is_default(e) else e for e in row.expressions] + flags)
    return sql_text(tree), marks


def parse_script(statements: Sequence[str]) -> list[Statement]:
    """Parse every statement first, so a bad one fails before any work."""
    parsed = [parse_change(s) for s in statements]
    whole = [p for p in parsed if p.kind in ("create", "overwrite")]
    if whole and len(parsed) > 1:
        raise UsageError(f"{'CREATE TABLE AS' if whole[0].kind == 'create' else 'INSERT OVERWRITE'} must be the "
                         "only statement of a script")
    return parsed


def run_change(lake: Lake, statements: Sequence[str], *, dry_run: bool = False, message: str | None = None,
               author: str | None = None, sources: Mapping[str, DataFrame] | None = None) -> ChangeResult:
    """Apply the statements in order and commit them as one snapshot (or, with `dry_run`, count what they would
    change and commit nothing). `sources`: DataFrames the statements may read by these (unqualified) names."""
    lake.refuse_writes()  # an older catalog: refused before any work
    from ducklake_cli.engine.session import spark_errors

    parsed = parse_script(statements)
    if parsed[0].kind in ("create", "overwrite"):  # the write path checks the lake's options itself
        return _whole_table(lake, parsed[0], dry_run=dry_run, message=message, author=author)
    change = _Change(lake, sources or {})
    if not dry_run:
        lake_options.require_message(change.meta, message)
    try:
        with spark_errors():
            for i, st in enumerate(parsed):
                change.apply(i, st, more=i < len(parsed) - 1)
            names = tuple(s.table.qualified_name for s in change.tables.values())
            if dry_run:
                d, u, n = change.counts()
                return ChangeResult(len(parsed), names, None, d, u, n, 0, 0, dry_run=True)
            return _commit(lake, change, len(parsed), names, message=message, author=author)
    finally:
        change.release()


def _commit(lake: Lake, change: _Change, count: int, names: tuple[str, ...], *, message: str | None,
            author: str | None) -> ChangeResult:
    planned = change.base.snapshot_id + 1
    for _ in range(MAX_RETAGS):
        writes: list[_Written] = []
        try:
            for state in change.tables.values():  # a table that fails to write takes the others' files along
                writes.append(change.write(state, planned))
            snapshot_id = lake.commit(functools.partial(change.build, writes=writes), author=author,
                                      message=message)
        except _Retag as retag:
            for w in writes:
                change.remove(w)
            planned = retag.snapshot_id
            continue
        except BaseException as exc:
            for w in writes:
                change.remove(w)
            if isinstance(exc, CommitConflictError) and not any(n in exc.message for n in names):
                raise CommitConflictError(f"table {', '.join(names)}: {exc.message}", hint=exc.hint) from exc
            raise
        return _result(count, names, snapshot_id, writes)
    raise CommitConflictError(f"table {', '.join(names)}: other writers kept committing while the delete files "
                              "were rewritten", hint="nothing was changed; run it again")


def _result(count: int, names: tuple[str, ...], snapshot_id: int | None, writes: Sequence[_Written]) -> ChangeResult:
    removed = updated = inserted = data_files = delete_files = 0
    for w in writes:
        removed += sum(o.deleted for o in w.outcomes) + len(w.state.gone_inlined)
        delete_files += sum(1 for o in w.outcomes if o.path)
        for kind, files in w.files:
            rows = sum(f.record_count for f in files)
            data_files += len(files)
            updated, inserted = (updated + rows, inserted) if kind == "update" else (updated, inserted + rows)
        for kind, values, _stats, _ids in w.inlined:
            updated, inserted = (updated + len(values), inserted) if kind == "update" else \
                (updated, inserted + len(values))
    # Every updated row removed its old version: only the rest were deleted.
    return ChangeResult(count, names, snapshot_id, removed - updated, updated, inserted, data_files, delete_files)


def _whole_table(lake: Lake, st: Statement, *, dry_run: bool, message: str | None,
                 author: str | None) -> ChangeResult:
    """CREATE TABLE AS and INSERT OVERWRITE: the write path (`ops/write.py`) with the query's rows."""
    from ducklake_cli.ops.query import sql_dataframe
    from ducklake_cli.ops.write import run_write

    df = sql_dataframe(lake, st.source or "")
    if st.kind == "overwrite":
        with lake.reader() as r:
            table = r.find_table(r.latest_snapshot().snapshot_id, st.qualified)
        if len(df.columns) != len(table.columns):
            raise QueryError(f"table {st.qualified} has {len(table.columns)} columns but the query gives "
                             f"{len(df.columns)}")
        df = df.toDF(*[c.name for c in table.columns])
    if dry_run:
        rows = df.count()
        return ChangeResult(1, (st.qualified,), None, 0, 0, rows, 0, 0, dry_run=True)
    mode = "overwrite" if st.kind == "overwrite" else "replace" if st.or_replace else "create"
    got = run_write(lake, st.qualified, frame=df, mode=mode,
                    partition_by=st.partition_by, message=message, author=author)
    return ChangeResult(1, (got.table,), got.snapshot_id, 0, 0, got.rows, got.files, 0)

