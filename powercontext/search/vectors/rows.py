"""The indexed rows a vector describes, read in the caller's snapshot: by key, by cited
id, or all of a scope's. Only rows that can have a vector count (the index's fixed
filters hold, the text is not empty)."""

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection

from powercontext.fields import identity_text
from powercontext.search.indexes import SearchIndex


def row_of(index: SearchIndex, scope_id: str, cited_id: str) -> tuple[int, Any] | None:
    """(row key, version) of the row citing ``cited_id`` in the scope, if any."""
    quote = connection.ops.quote_name
    conditions = " AND ".join(
        f"{quote(column)} = %s"
        for column in (index.scope_column, index.cited_id, *(name for name, _ in index.filters))
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {quote(index.row_key)}, {quote(index.version)} "  # noqa: S608 - names only
            f"FROM {quote(index.table)} WHERE {conditions}",
            [scope_id, cited_id, *(value for _, value in index.filters)],
        )
        found = cursor.fetchone()
    return None if found is None else (int(found[0]), plain_version(found[1]))


def cited_rows(
    index: SearchIndex, scope_id: str, cited_ids: Sequence[str]
) -> dict[int, tuple[str, str]]:
    """{row key: (cited id, version)} of the rows of ``index`` citing ``cited_ids``."""
    quote = connection.ops.quote_name
    conditions = [f"{quote(index.scope_column)} = %s"]
    conditions += [f"{quote(column)} = %s" for column, _ in index.filters]
    marks = ", ".join(["%s"] * len(cited_ids))
    conditions.append(f"{quote(index.cited_id)} IN ({marks})")
    sql = (
        f"SELECT {quote(index.row_key)}, {quote(index.cited_id)}, {quote(index.version)} "  # noqa: S608 - names only
        f"FROM {quote(index.table)} WHERE {' AND '.join(conditions)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [scope_id, *(value for _, value in index.filters), *cited_ids])
        return {
            int(key): (identity_text(cited), str(plain_version(version)))
            for key, cited, version in cursor.fetchall()
        }


def indexed_rows(
    index: SearchIndex,
    keys: Sequence[int] | None,
    *,
    scope_id: str | None,
    with_text: bool = False,
    after: int | None = None,
    count: int | None = None,
) -> dict[int, tuple[Any, ...]]:
    """{row key: (scope, cited id, version[, searchable text])} of the indexed rows that
    can have a vector (the fixed filters hold, the text is not empty), read in the
    caller's snapshot; of ``keys`` only, or all of them; with ``count``, the first
    ``count`` of them by row key past ``after`` (a chunk at a time)."""
    quote = connection.ops.quote_name
    columns = [index.row_key, index.scope_column, index.cited_id, index.version]
    if with_text:
        columns.append(index.text_column)
    conditions = [f"{quote(column)} = %s" for column, _ in index.filters]
    params: list[Any] = [value for _, value in index.filters]
    conditions.append(f"{quote(index.text_column)} <> ''")
    if scope_id is not None and keys is None:
        conditions.append(f"{quote(index.scope_column)} = %s")
        params.append(scope_id)
    if after is not None:
        conditions.append(f"{quote(index.row_key)} > %s")
        params.append(after)
    # Given keys, the scope is checked here, not in SQL: with both, SQLite's planner (no
    # statistics) walked the scope's index, every row of a 100,000-row scope, instead of
    # looking the keys up (20 ms a search).
    sql = (
        f"SELECT {', '.join(quote(column) for column in columns)} "  # noqa: S608 - names only
        f"FROM {quote(index.table)} WHERE {' AND '.join(conditions)}"
    )
    if count is not None:
        if keys is not None:
            raise ValueError("indexed_rows: count reads a chunk of every row, not of keys")
        sql += f" ORDER BY {quote(index.row_key)} LIMIT {int(count)}"
    found: dict[int, tuple[Any, ...]] = {}
    batches: Iterable[Sequence[int] | None] = (
        [None]
        if keys is None
        else [keys[start : start + 500] for start in range(0, len(keys), 500)]
    )
    with connection.cursor() as cursor:
        for batch in batches:
            if batch is None:
                cursor.execute(sql, params)
            else:
                marks = ", ".join(["%s"] * len(batch))
                cursor.execute(f"{sql} AND {quote(index.row_key)} IN ({marks})", [*params, *batch])
            for key, scope, cited, version, *text in cursor.fetchall():
                # Identity columns come back as bytes on OceanBase; a version may be a
                # number (a revision): the vector stores it as text.
                row = (identity_text(scope), identity_text(cited))
                if scope_id is not None and row[0] != scope_id:
                    continue
                if with_text:
                    found[int(key)] = (*row, plain_version(version), *text)
                else:
                    found[int(key)] = (*row, str(plain_version(version)))
    return found


def scope_cited_version(row: tuple[Any, ...]) -> tuple[str, str, str]:
    scope, cited, version = row
    return scope, cited, version


def plain_version(value: Any) -> Any:
    return bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else value
