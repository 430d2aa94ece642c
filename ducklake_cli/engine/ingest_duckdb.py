"""CSV and JSON through DuckDB for `write`: sniffing the union schema on the driver, and parsing one file with that
fixed schema inside a Spark task (`mapInArrow`). Imports only duckdb, pyarrow, fsspec and pure-Python modules."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ducklake_cli.errors import DuckLakeError, InputError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

_MARK = "DUCKLAKE-INGEST: "  # prefixes executor errors so the driver can show them as one line


# ----- DuckDB readers ----------------------------------------------------------------------------------------

def _lit(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_lit(k)}: {_lit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    return "'" + str(value).replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def one_line(text: str) -> str:
    """Text with every run of whitespace (newlines too) as one space."""
    return " ".join(text.split())


def reader_sql(fmt: str, files: Sequence[str], params: Mapping[str, Any]) -> str:
    """`read_csv(...)` / `read_json(...)` / `read_parquet(...)` over files with named parameters."""
    fn = {"csv": "read_csv", "json": "read_json", "parquet": "read_parquet"}[fmt]
    args = [_lit(list(files)) if len(files) > 1 else _lit(files[0])]
    args += [f"{k}={_lit(v)}" for k, v in params.items()]
    return f"{fn}({', '.join(args)})"


def connect_duckdb(storage_options: Mapping[str, Any] | None, files: Sequence[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB in UTC that reads object-store paths through fsspec (no extension downloads)."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.execute("SET TimeZone = 'UTC'")  # timestamps without a zone read into TIMESTAMPTZ as UTC, on every node
    protocols = {f.split("://", 1)[0].lower() for f in files if "://" in f}
    for proto in protocols - {"file"}:
        from ducklake_cli.storage.files import filesystem

        con.register_filesystem(filesystem(f"{proto}://x", storage_options))
    return con


def csv_error(exc: Exception, path: str) -> str:
    """DuckDB's CSV/JSON error as one line naming the file and the line."""
    text = str(exc)
    m = re.search(r"CSV Error on Line: (\d+)", text)
    json_m = re.search(r"in line (\d+)", text)
    reason = next((ln.strip() for ln in text.splitlines()
                   if re.match(r"\s*(Expected Number of Columns|Value with unterminated quote|Error when converting|"
                               r"Invalid unicode|Maximum line size|Could not convert|Unterminated quote)", ln)),
                  None)
    if m:
        return f"{path} line {m.group(1)}: {reason or one_line(text.split(chr(10))[0])}"
    if json_m:
        return f"{path} line {json_m.group(1)}: {one_line(text.split(':', 1)[-1])}"
    return f"{path}: {one_line(text.splitlines()[0] if text else type(exc).__name__)}"


def _first_record(path: str, delim: str, storage_options: Mapping[str, Any] | None) -> list[str]:
    import csv
    import io

    from ducklake_cli.storage.files import filesystem

    with filesystem(path, storage_options).open(path, "rb") as fh:
        head = fh.read(1 << 16).decode("utf-8-sig", errors="replace")
    return next(csv.reader(io.StringIO(head), delimiter=delim), [])


def _locate_csv_error(con: duckdb.DuckDBPyConnection, files: Sequence[str], params: Mapping[str, Any],
                      storage_options: Mapping[str, Any] | None) -> str | None:
    """When DuckDB's sniffer gives up (or falls back to one column) because rows are malformed, parse strictly
    as RFC 4180 with the header's columns to find the first bad line."""
    delim = str(params.get("delim", ","))
    for path in files:
        header = _first_record(path, delim, storage_options)
        if not header:
            continue
        strict = {k: v for k, v in params.items() if k not in ("types", "all_varchar", "auto_detect")}
        strict.update(delim=delim, header=True, auto_detect=False,
                      columns={n or f"column{i}": "VARCHAR" for i, n in enumerate(header)})
        try:
            con.sql(f"SELECT * FROM {reader_sql('csv', [path], strict)}").fetchall()
        except Exception as exc:  # duckdb.Error: the bad line
            return csv_error(exc, path)
    return None


def _degenerate(con: duckdb.DuckDBPyConnection, path: str, params: Mapping[str, Any]) -> bool:
    """DuckDB's sniffer read a comma file as one column: the sign of rows with too few or too many fields."""
    if "delim" in params:
        return False
    sniff_params = {k: v for k, v in params.items() if k in ("quote", "escape", "encoding", "skip", "comment")}
    row = con.sql(f"SELECT Delimiter, Columns FROM sniff_csv({_lit(path)}"
                  + "".join(f", {k}={_lit(v)}" for k, v in sniff_params.items()) + ")").fetchone()
    return bool(row and len(row[1]) == 1 and "," in row[1][0]["name"])


def sniff(con: duckdb.DuckDBPyConnection, fmt: str, files: Sequence[str], params: dict[str, Any],
          storage_options: Mapping[str, Any] | None) -> tuple[list[str], list[Any], dict[str, Any]]:
    """Column names and DuckDB types of all files together (`union_by_name`), and the parameters to read with."""
    if len(files) > 1:
        params = {**params, "union_by_name": True}
    if fmt == "csv":
        try:
            rel = con.sql(f"SELECT * FROM {reader_sql(fmt, files, params)}")
            # A header with a comma in a column name is the sniffer's one-column fallback for malformed rows.
            if any("," in n for n in rel.columns) and any(_degenerate(con, f, params) for f in files):
                if not params.get("ignore_errors"):
                    raise _Malformed()
                params = {**params, "delim": ","}
                rel = con.sql(f"SELECT * FROM {reader_sql(fmt, files, params)}")
            return list(rel.columns), list(rel.types), params
        except Exception as exc:
            located = _locate_csv_error(con, files, params, storage_options)
            if located:
                raise InputError(located, hint="fix the file, or pass --on-error skip to skip bad rows") from exc
            if isinstance(exc, _Malformed):
                raise InputError(f"{files[0]}: DuckDB cannot tell the CSV delimiter",
                                 hint="pass --option delim=','") from exc
            raise InputError(csv_error(exc, files[0] if len(files) == 1 else "the input")) from exc
    try:
        rel = con.sql(f"SELECT * FROM {reader_sql(fmt, files, params)}")
        return list(rel.columns), list(rel.types), params
    except Exception as exc:  # duckdb.Error
        raise InputError(csv_error(exc, files[0] if len(files) == 1 else "the input")) from exc


class _Malformed(Exception):
    pass


# ----- reading one file on an executor ----------------------------------------------------------------------

@dataclass(frozen=True)
class FileRead:
    """How an executor parses each file: format, reader parameters, the union columns and their types."""

    fmt: str
    params: dict[str, Any]
    names: tuple[str, ...]
    parse_types: tuple[str, ...]  # DuckDB type text each column is parsed as
    out_types: tuple[str, ...]  # DuckDB type text whose Arrow form Spark accepts
    storage_options: dict[str, Any]
    exact: tuple[str, ...] = ()  # per CSV column: the rounding check it needs (`_exact`)
    batch_rows: int = 65_536


def _file_relation(con: duckdb.DuckDBPyConnection, spec: FileRead, path: str,
                   checked: bool = True) -> duckdb.DuckDBPyRelation:
    by_lower = {n.lower(): i for i, n in enumerate(spec.names)}
    if spec.fmt == "parquet":
        params = {k: v for k, v in spec.params.items() if k != "union_by_name"}
        present = set(con.sql(f"SELECT * FROM {reader_sql('parquet', [path], params)}").columns)
    elif spec.fmt == "json":
        cols = dict(zip(spec.names, spec.parse_types, strict=True))
        params = {k: v for k, v in spec.params.items() if k != "union_by_name"}
        params["columns"] = cols
        present = set(spec.names)
    else:
        params = {k: v for k, v in spec.params.items() if k not in ("union_by_name", "types")}
        header = con.sql(f"SELECT * FROM {reader_sql('csv', [path], params)}").columns
        unknown = [h for h in header if h.lower() not in by_lower]
        if unknown:
            raise ValueError(f"{path}: column {unknown[0]!r} appears beyond what the sniffer sampled")
        present = set(header)
        params["types"] = {h: "VARCHAR" if checked and _exact(spec, by_lower[h.lower()]) != ""
                           else spec.parse_types[by_lower[h.lower()]] for h in header}
    source = reader_sql(spec.fmt, [path], params)
    actual = {n.lower(): n for n in present}
    exprs, raws, unparsed = [], [], []
    for i, (name, out) in enumerate(zip(spec.names, spec.out_types, strict=True)):
        src = actual.get(name.lower())
        ref = _ident(src) if src else "NULL"
        kind = _exact(spec, i) if src and checked else ""
        if kind:
            # Text the type may round (or cannot parse) travels along for the check in `read_file`.
            parsed = f"TRY_CAST({ref} AS {spec.parse_types[i]})"
            if kind == "double":
                digits = f"regexp_replace(regexp_replace(split_part(lower({ref}), 'e', 1), '[^0-9]', '', 'g'), " \
                         "'^0+|0+$', '', 'g')"
                suspect = f"length({digits}) > 15"
            else:
                suspect = f"length(rtrim(regexp_extract({ref}, '[.]([0-9]*)', 1), '0')) > {kind} OR {ref} ILIKE '%e%'"
            exprs.append(f"CAST({parsed} AS {out}) AS {_ident(name)}")
            raws.append(f"CASE WHEN {ref} IS NOT NULL AND ({parsed} IS NULL OR {suspect}) THEN {ref} END "
                        f"AS {_ident(f'__raw_{i}')}")
            unparsed.append(f"({ref} IS NOT NULL AND {parsed} IS NULL)")
        else:
            exprs.append(f"CAST({ref} AS {out}) AS {_ident(name)}")
        if src and spec.parse_types[i] == "TIMESTAMP_NS":  # Spark holds microseconds: nanoseconds would be cut
            raws.append(f"CASE WHEN epoch_ns(CAST({ref} AS TIMESTAMP_NS)) % 1000 <> 0 THEN CAST({ref} AS VARCHAR) "
                        f"END AS {_ident(f'__ns_{i}')}")
    # --on-error skip: rows DuckDB's reader would reject for a value of the wrong type are dropped here, as it would.
    where = f" WHERE NOT ({' OR '.join(unparsed)})" if unparsed and spec.params.get("ignore_errors") else ""
    return con.sql(f"SELECT {', '.join(exprs + raws)} FROM {source}{where}")


def _exact(spec: FileRead, i: int) -> str:
    """The check column i needs: `double` (digits a DOUBLE drops), a scale (`0`: rounding to an integer or to
    the table's DECIMAL), or none."""
    return spec.exact[i] if spec.exact else ""


def exact_check(duckdb_type: Any, *, sniffed: bool) -> str:
    """Which rounding check a CSV column parsed as this DuckDB type needs (see `_exact`)."""
    tid = str(duckdb_type.id)
    if tid == "double":
        return "double" if sniffed else ""
    if tid == "decimal":
        return str(dict(duckdb_type.children)["scale"])
    if tid in ("tinyint", "smallint", "integer", "bigint", "utinyint", "usmallint", "uinteger", "ubigint",
               "hugeint", "uhugeint"):
        return "0"
    return ""


def _check_exact(batch: pa.RecordBatch, spec: FileRead, path: str, first_row: int) -> None:
    """Refuse CSV text the column's type would round (DuckDB's reader rounds silently)."""
    from decimal import Decimal, InvalidOperation

    for i in range(len(spec.names)):
        k = batch.schema.get_field_index(f"__raw_{i}")
        if k < 0:
            continue
        raw = batch.column(k)
        if raw.null_count == len(raw):
            continue
        parsed = batch.column(i).to_pylist()
        for row, text in enumerate(raw.to_pylist()):
            if text is None:
                continue
            value = parsed[row]
            if value is None:
                raise _Reparse()
            double = _exact(spec, i) == "double"
            try:
                lossy = Decimal(text.strip()) != Decimal(repr(value) if double else value)
            except (InvalidOperation, ValueError, TypeError):
                lossy = False
            if not lossy:
                continue
            name = spec.names[i]
            where = f"{_MARK}{path} data row {first_row + row + 1}: column {name!r} holds {text.strip()}"
            if double:
                raise ValueError(f"{where}, which has more digits than DuckDB's DOUBLE keeps (--schema "
                                 f"'{name} DECIMAL(p,s)' keeps them; '{name} DOUBLE' rounds)")
            raise ValueError(f"{where}, which {spec.parse_types[i]} cannot hold without rounding")


def _check_nanos(batch: pa.RecordBatch, spec: FileRead, path: str, first_row: int) -> None:
    """Refuse TIMESTAMP_NS values with nanosecond digits, which the trip through Spark would cut."""
    for i, name in enumerate(spec.names):
        k = batch.schema.get_field_index(f"__ns_{i}")
        if k < 0 or batch.column(k).null_count == batch.num_rows:
            continue
        row, text = next((r, t) for r, t in enumerate(batch.column(k).to_pylist()) if t is not None)
        raise ValueError(f"{_MARK}{path} data row {first_row + row + 1}: column {name!r} holds {text}, whose "
                         "nanoseconds Spark cannot carry (it keeps microseconds); nothing was written")


class _Reparse(Exception):
    """A value the sniffed type cannot parse: read the file again with it, for DuckDB's own error and line."""


def read_file(path: str, spec: FileRead, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """One file's rows, parsed by DuckDB with the fixed schema, as Arrow batches in Spark's layout."""
    import pyarrow as pa

    con = connect_duckdb(spec.storage_options, [path])
    rows = 0
    try:
        reader = _file_relation(con, spec, path).to_arrow_reader(spec.batch_rows)
        for batch in reader:
            if batch.num_rows:
                if any(spec.exact):
                    _check_exact(batch, spec, path, rows)
                _check_nanos(batch, spec, path, rows)
                rows += batch.num_rows
                arrays = [batch.column(i).cast(target.field(i).type) for i in range(len(target))]
                yield pa.RecordBatch.from_arrays(arrays, schema=target)
    except _Reparse:
        try:
            _file_relation(con, spec, path, checked=False).fetchall()
        except Exception as exc:
            raise ValueError(_MARK + csv_error(exc, path)) from None
        raise ValueError(f"{_MARK}{path}: a value does not parse as DOUBLE") from None
    except Exception as exc:
        if _MARK in str(exc):
            raise
        raise ValueError(_MARK + csv_error(exc, path)) from None
    finally:
        con.close()


def read_files(batches: Iterator[pa.RecordBatch], spec: FileRead, target: pa.Schema,
               files: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: parse every file whose index is in the `id` column."""
    for b in batches:
        for i in b.column(0).to_pylist():
            yield from read_file(files[i], spec, target)


def count_rejects(batches: Iterator[pa.RecordBatch], spec: FileRead, files: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body for `--on-error skip`: how many rows of the files (by index) DuckDB's reader rejects."""
    import pyarrow as pa

    total = 0
    for b in batches:
        for path in (files[i] for i in b.column(0).to_pylist()):
            con = connect_duckdb(spec.storage_options, [path])
            try:
                params = {k: v for k, v in spec.params.items() if k not in ("union_by_name", "ignore_errors")}
                params["store_rejects"] = True
                params["types"] = {}
                rel = _file_relation(con, FileRead(spec.fmt, params, spec.names, spec.parse_types, spec.out_types,
                                                   spec.storage_options), path, checked=False)
                for _ in rel.to_arrow_reader(spec.batch_rows):  # every value converted (count(*) would skip that)
                    pass
                row = con.sql("SELECT count(DISTINCT (file_id, line)) FROM reject_errors").fetchone()
                total += int(row[0]) if row else 0
            finally:
                con.close()
    yield pa.RecordBatch.from_arrays([pa.array([total], pa.int64())], ["n"])


def ingest_errors_text(exc: BaseException) -> str | None:
    """The one-line message an executor's ingest error carries, if `exc` (or its text) holds one."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    i = text.find(_MARK)
    if i < 0:
        return None
    return text[i + len(_MARK):].splitlines()[0].strip()


@contextlib.contextmanager
def ingest_errors() -> Iterator[None]:
    """An input file's parse error raised on an executor, as one-line `InputError` naming the file and line."""
    try:
        yield
    except DuckLakeError:
        raise
    except Exception as exc:  # Spark's wrapper of an executor's exception
        text = ingest_errors_text(exc)
        if text is None:
            raise
        hint = "give the column an exact type with --schema" if "DOUBLE keeps" in text else \
            "append to a table whose type holds these values" if "without rounding" in text else \
            "round the values to microseconds first" if "nanoseconds Spark" in text else \
            "fix the file, or pass --on-error skip to skip malformed CSV rows"
        raise InputError(text, hint=hint) from None


