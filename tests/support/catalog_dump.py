"""A catalog as tests read and change it behind ducklake's back: its whole content in one comparable form whatever
its backend (equal dumps mean equal catalogs), statements run straight on its database, its version string."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import backend_for
from ducklake_cli.catalog.migrate import layout
from ducklake_cli.catalog.queries import as_bool
from ducklake_cli.catalog.url import parse_catalog

_KINDS = {col: kind for version in ("0.2", "1.1") for _, cols, _ in layout(version) for col, kind in cols}


def dump(catalog: str) -> dict[str, list[str]]:
    """Every `ducklake_*` table's rows (sorted; booleans, times and ids in one form whatever the backend): equal
    dumps mean equal catalog content."""
    backend = backend_for(parse_catalog(catalog))
    engine = backend.create_engine(read_only=True)

    def norm(col: str, value: Any) -> str:
        kind = _KINDS.get(col)
        if value is None:
            return "NULL"
        if kind == s.BOOLEAN:
            return str(as_bool(value))
        if kind == s.TIMESTAMPTZ:
            return str(backend.decode_timestamp(value))
        return str(int(value)) if kind == s.BIGINT else str(value)

    try:
        with engine.connect() as conn:
            out = {}
            for name in sorted(n for n in backend.list_tables(conn) if n.startswith("ducklake_")):
                cols = backend.column_names(conn, name)
                rows = conn.execute(text(f"SELECT * FROM {backend.qualify(name)}")).all()
                out[name] = sorted(repr(sorted((c, norm(c, v)) for c, v in zip(cols, r, strict=True))) for r in rows)
            return out
    finally:
        engine.dispose()


def run_sql(catalog: str, *statements: str, params: dict[str, Any] | None = None) -> list[Any]:
    """Run statements straight on the catalog database (as another client would); rows of the last one."""
    backend = backend_for(parse_catalog(catalog))
    engine = backend.create_engine(read_only=False)
    try:
        with engine.begin() as conn:
            rows: list[Any] = []
            for st in statements:
                result = conn.execute(text(st.replace("{q}", backend.qualify("ducklake_metadata"))), params or {})
                rows = list(result.all()) if result.returns_rows else []
            return rows
    finally:
        engine.dispose()


def version_of(catalog: str) -> str:
    """The stored version string."""
    return str(run_sql(catalog, "SELECT value FROM {q} WHERE " + ("`key`" if "mysql" in catalog else '"key"')
                    + " = 'version'")[0][0])


def set_version(catalog: str, version: str) -> None:
    """Overwrite the version string."""
    key = "`key`" if catalog.startswith("mysql") else '"key"'
    run_sql(catalog, f"UPDATE {{q}} SET value = :v WHERE {key} = 'version'", params={"v": version})
