"""SQLite FTS5 search over any declared index (``powercontext.search.indexes``).

An index kept by the engine (Memory's) is an external-content FTS5 table ``<name>_fts``
over the declared table (scope token + analyzed text), kept in step by three triggers, so
the index changes in the same transaction as the row. An index kept by writes
(Experience's) is a plain FTS5 table ``<name>_fts`` (rowid = the row key) that also holds
the cited id and version it describes (unindexed: the version lets search notice a stale
row), written by the owning service in its transaction. Quirks that bite:

- FTS5 has no unary NOT and its query language treats ``"``, ``*``, ``-``, ``:``, ``^``,
  ``NEAR``, ``AND``/``OR``/``NOT`` and parentheses as syntax. User text never reaches it:
  the MATCH expression is built from analyzer tokens only, each quoted as a string, and
  passed as a bound parameter.
- bm25() is "lower is better" and negative; hits are returned with ``-bm25`` so higher is
  better, as the interface promises.
- Tokens come from powercontext.search.analyzer already split by spaces; unicode61 with "_" as a
  token character and diacritics kept splits that text exactly at the spaces (marks are
  token characters, as in the analyzer, so words of scripts with combining vowel signs
  stay whole).
"""

from collections.abc import Iterable
from typing import Any, ClassVar

from django.db import DatabaseError, connection, transaction

from powercontext.search.indexes import IndexHit, IndexRow, Kept, SearchIndex, scope_token

ENGINE = "sqlite"
# The FTS5 column that holds the scope token in an index kept by writes.
SCOPE_TOKEN = "scope_token"  # noqa: S105 - a column name
TOKENIZE = "tokenize=\"unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '_'\""
TRIGGERS = ("insert", "delete", "update")
# Row keys per DELETE ... IN (...): well under SQLite's limit on bound parameters.
_BATCH = 500


def fts_table(index: SearchIndex) -> str:
    return index.object_name(ENGINE, "_fts")


def _token_column(index: SearchIndex) -> str:
    return index.scope_token_column or SCOPE_TOKEN


def _quoted(term: str) -> str:
    # Analyzer tokens hold only letters, digits, marks and "_", never a quote; doubling
    # is FTS5's escape and keeps this safe even if that ever changed.
    return '"' + term.replace('"', '""') + '"'


def _scope_expression(index: SearchIndex, scope: str) -> str:
    return f"{_token_column(index)} : {_quoted(scope_token(scope))}"


def match_expression(index: SearchIndex, scope: str, terms: list[str]) -> str:
    """The FTS5 MATCH expression for ``terms`` restricted to one scope's rows."""
    any_term = " OR ".join(_quoted(term) for term in terms)
    return f"{_scope_expression(index, scope)} AND {index.text_column} : ({any_term})"


def _statement(*lines: str) -> str:
    # The layout of the statements as the migrations first wrote them, kept to the byte
    # (tests/powercontext/search/test_search_indexes.py compares them).
    return "\n" + "".join(f"    {line}\n" for line in lines) + "    "


def _index_objects(index: SearchIndex) -> list[str]:
    fts = fts_table(index)
    if index.kept is Kept.BY_WRITES:
        return [fts]
    return [fts, *(f"{fts}_{event}" for event in TRIGGERS)]


def _filters(index: SearchIndex, alias: str) -> tuple[str, list[Any]]:
    """SQL conditions (each followed by AND) and parameters for the fixed filters."""
    sql = "".join(f"{alias}{column} = %s AND " for column, _ in index.filters)
    return sql, [value for _, value in index.filters]


class SqliteSearchEngine:
    checks_integrity: ClassVar[bool] = True

    @staticmethod
    def ddl(index: SearchIndex) -> tuple[list[str], list[str]]:
        fts, text = fts_table(index), index.text_column
        if index.kept is Kept.BY_WRITES:
            columns = (
                f"{SCOPE_TOKEN}, {text}, {index.cited_id} UNINDEXED, {index.version} UNINDEXED,"
            )
            table = _statement(
                f"CREATE VIRTUAL TABLE {fts} USING fts5(", f"    {columns}", f"    {TOKENIZE}", ")"
            )
            return [table], [f"DROP TABLE IF EXISTS {fts}"]
        token, source, key = _token_column(index), index.table, index.row_key
        table = _statement(
            f"CREATE VIRTUAL TABLE {fts} USING fts5(",
            f"    {token}, {text},",
            f"    content='{source}', content_rowid='{key}',",
            f"    {TOKENIZE}",
            ")",
        )
        add = (
            f"    INSERT INTO {fts}(rowid, {token}, {text})",
            f"    VALUES (new.{key}, new.{token}, new.{text});",
        )
        remove = (
            f"    INSERT INTO {fts}({fts}, rowid, {token}, {text})",
            f"    VALUES ('delete', old.{key}, old.{token}, old.{text});",
        )
        bodies = {"insert": add, "delete": remove, "update": (*remove, *add)}
        triggers = [
            _statement(
                f"CREATE TRIGGER {fts}_{event} AFTER {event.upper()} ON {source} BEGIN",
                *bodies[event],
                "END",
            )
            for event in TRIGGERS
        ]
        forward = [table, *triggers, f"INSERT INTO {fts}({fts}) VALUES ('rebuild')"]  # noqa: S608
        reverse = [f"DROP TRIGGER IF EXISTS {fts}_{event}" for event in reversed(TRIGGERS)]
        return forward, [*reverse, f"DROP TABLE IF EXISTS {fts}"]

    def match(
        self, index: SearchIndex, *, scope_id: str, terms: list[str], limit: int
    ) -> list[IndexHit]:
        """Rank the scope's rows matching any of ``terms`` by bm25, best first.

        The join reads the indexed row in the caller's snapshot: its version is the one
        cited. An index kept by writes holds copies that may be stale, so the table's
        scope and fixed filters also keep anything but this scope's rows out; one kept by
        the engine is the table's rows, whose scope token is the scope filter. Only the
        text column carries weight in bm25."""
        if not terms:
            return []
        if index.kept is Kept.BY_ENGINE and not index.filters:
            return self._match_rows_first(index, scope_id=scope_id, terms=terms, limit=limit)
        quote = connection.ops.quote_name
        fts, table = quote(fts_table(index)), quote(index.table)
        cited, version, text = index.cited_id, index.version, index.text_column
        conditions = [f"{fts} MATCH %s", *(f"t.{column} = %s" for column, _ in index.filters)]
        values = [match_expression(index, scope_id, terms), *(value for _, value in index.filters)]
        if index.kept is Kept.BY_WRITES:
            # The index holds its own copy of the text and the version it describes.
            weights, indexed, searched = "0.0, 1.0, 0.0, 0.0", f"{fts}.{version}", f"{fts}.{text}"
            conditions.append(f"t.{index.scope_column} = %s")
            values.append(scope_id)
        else:
            weights, indexed, searched = "0.0, 1.0", f"t.{version}", f"t.{text}"
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT t.{cited}, t.{version}, {indexed}, "  # noqa: S608 - names only
                f"bm25({fts}, {weights}) AS rank, {searched} "
                f"FROM {fts} JOIN {table} t ON t.{index.row_key} = {fts}.rowid "
                f"WHERE {' AND '.join(conditions)} ORDER BY rank, t.{cited} LIMIT %s",
                [*values, limit],
            )
            rows = cursor.fetchall()
        return [
            IndexHit(cited_id, version_read, _as(version_read, indexed_version), -rank, text)
            for cited_id, version_read, indexed_version, rank, text in rows
        ]

    def _match_rows_first(
        self, index: SearchIndex, *, scope_id: str, terms: list[str], limit: int
    ) -> list[IndexHit]:
        """:meth:`match` for an index whose every full-text row is a row of its table (kept
        by the engine, no fixed filter), with the same answer. The matching rows are
        ranked in the full-text index alone, and only those ranked at or above the
        ``limit``-th (ties included) are joined to the table, then ordered by rank and
        cited id as :meth:`match` orders them. Joining every match first read the table's
        row, text included, for each of them: a common word matches thousands of rows in
        a large scope (at 100,000 entries 31 ms a prompt, 20 ms this way)."""
        if limit < 1:
            return []
        quote = connection.ops.quote_name
        fts, table = quote(fts_table(index)), quote(index.table)
        cited, version, text = index.cited_id, index.version, index.text_column
        with connection.cursor() as cursor:
            cursor.execute(
                f"WITH matched AS MATERIALIZED ("  # noqa: S608 - names only
                f"SELECT rowid AS row_key, bm25({fts}, 0.0, 1.0) AS rank FROM {fts} "
                f"WHERE {fts} MATCH %s), "
                "cut AS (SELECT rank FROM matched ORDER BY rank LIMIT 1 OFFSET %s) "
                f"SELECT t.{cited}, t.{version}, m.rank, t.{text} "
                f"FROM matched m JOIN {table} t ON t.{index.row_key} = m.row_key "
                "WHERE m.rank <= coalesce((SELECT rank FROM cut), m.rank) "
                f"ORDER BY m.rank, t.{cited} LIMIT %s",
                [match_expression(index, scope_id, terms), limit - 1, limit],
            )
            rows = cursor.fetchall()
        return [
            IndexHit(cited_id, version_read, version_read, -rank, text)
            for cited_id, version_read, rank, text in rows
        ]

    def write(self, index: SearchIndex, rows: Iterable[IndexRow]) -> None:
        if index.kept is not Kept.BY_WRITES:
            return  # the triggers carried the rows' change already
        fts = connection.ops.quote_name(fts_table(index))
        with connection.cursor() as cursor:
            for row in rows:
                cursor.execute(f"DELETE FROM {fts} WHERE rowid = %s", [row.row_key])  # noqa: S608
                cursor.execute(_insert_sql(index), _insert_values(row))

    def status(self, index: SearchIndex) -> str | None:
        # The triggers count as part of the index: without them it silently goes stale.
        wanted = _index_objects(index)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger') "  # noqa: S608
                f"AND name IN ({', '.join(['%s'] * len(wanted))})",
                wanted,
            )
            present = {name for (name,) in cursor.fetchall()}
        missing = [name for name in wanted if name not in present]
        if not missing:
            return None
        if index.kept is Kept.BY_WRITES:
            return f"missing full-text table: {missing[0]}"
        return f"missing full-text object(s): {', '.join(missing)}"

    def rebuild(self, index: SearchIndex, scope_id: str | None = None) -> None:
        """Recreate a missing index with ``ddl`` (dropping what is left of it), else make
        it describe the table's rows again. Run inside a transaction: under WAL readers
        keep the old index until commit, never see a partial one.

        An index kept by the engine is rebuilt as a whole (FTS5 ``'rebuild'``, one
        statement; FTS5 cannot re-index single rows of an external-content index whose
        old contents are unknown), whatever ``scope_id`` says. One kept by writes has the
        rows of ``scope_id``'s rows (or every row) replaced by the table's current ones,
        and any row carrying the scope's token (a stray one would otherwise match inside
        the scope)."""
        fts = connection.ops.quote_name(fts_table(index))
        forward, reverse = self.ddl(index)
        with connection.cursor() as cursor:
            if self.status(index) is not None:
                for statement in (*reverse, *forward):
                    cursor.execute(statement)
                if index.kept is Kept.BY_ENGINE:
                    return  # the forward DDL ends by filling the index
                scope_id = None
            if index.kept is Kept.BY_ENGINE:
                cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")  # noqa: S608
                return
            table = connection.ops.quote_name(index.table)
            filters, values = _filters(index, "")
            if scope_id is None:
                cursor.execute(f"DELETE FROM {fts}")  # noqa: S608
                scoped, scope_values = "", []
            else:
                cursor.execute(
                    f"SELECT {index.row_key} FROM {table} "  # noqa: S608 - names only
                    f"WHERE {filters}{index.scope_column} = %s",
                    [*values, scope_id],
                )
                doomed = {key for (key,) in cursor.fetchall()}
                cursor.execute(
                    f"SELECT rowid FROM {fts} WHERE {fts} MATCH %s",  # noqa: S608
                    [_scope_expression(index, scope_id)],
                )
                doomed |= {key for (key,) in cursor.fetchall()}
                keys = sorted(doomed)
                for start in range(0, len(keys), _BATCH):
                    batch = keys[start : start + _BATCH]
                    marks = ", ".join(["%s"] * len(batch))
                    cursor.execute(f"DELETE FROM {fts} WHERE rowid IN ({marks})", batch)  # noqa: S608
                scoped, scope_values = f"{index.scope_column} = %s AND ", [scope_id]
            cursor.execute(
                f"SELECT {index.row_key}, {index.scope_column}, {index.cited_id}, "  # noqa: S608
                f"{index.version}, {index.text_column} FROM {table} "
                f"WHERE {filters}{scoped}{index.text_column} <> ''",
                [*values, *scope_values],
            )
            rows = [IndexRow(*row) for row in cursor.fetchall()]
            cursor.executemany(_insert_sql(index), [_insert_values(row) for row in rows])

    def integrity(self, index: SearchIndex) -> str | None:
        """FTS5's own integrity check, including (rank = 1) that an external-content
        index matches the table it is built from. None when consistent, else the reason."""
        fts = connection.ops.quote_name(fts_table(index))
        try:
            # A savepoint, so a failed check leaves an enclosing transaction usable.
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)"  # noqa: S608
                )
        except DatabaseError as error:
            return f"FTS5 integrity-check failed: {error}"
        return None


def _insert_sql(index: SearchIndex) -> str:
    fts = connection.ops.quote_name(fts_table(index))
    return (
        f"INSERT INTO {fts}(rowid, {SCOPE_TOKEN}, {index.text_column}, "  # noqa: S608
        f"{index.cited_id}, {index.version}) VALUES (%s, %s, %s, %s, %s)"
    )


def _insert_values(row: IndexRow) -> list[Any]:
    return [row.row_key, scope_token(row.scope_id), row.text, row.cited_id, row.version]


def _as(like: Any, value: Any) -> Any:
    """``value`` with the type of ``like`` (FTS5 hands an unindexed column back as it
    was stored; the table's column type is the one callers compare with)."""
    return value if isinstance(value, type(like)) else type(like)(value)
