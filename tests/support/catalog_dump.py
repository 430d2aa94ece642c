"""A catalog's whole content in one comparable form, whatever its backend: equal dumps mean equal catalogs."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from ducklake_cli.catalog import schema as s
from ducklake_cli.catalog.backends import backend_for
from ducklake_cli.catalog.migrate import layout
from ducklake_cli.catalog.queries import as_bool
from ducklake_cli.catalog.url import parse_catalog

_KINDS = {col: kind for version in ("0.2", "1.0") for _, cols, _ in layout(version) for col, kind in cols}


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
