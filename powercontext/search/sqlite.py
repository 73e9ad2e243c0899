"""SQLite FTS5 search over the derived projections.

``memory_activeentry_fts`` is an external-content FTS5 table over
``memory_memoryactiveentry`` (scope token + analyzed text), kept in step by triggers, so
the index changes in the same transaction as the projection row (migration
``memory.0002``). Quirks that bite:

- FTS5 has no unary NOT and its query language treats ``"``, ``*``, ``-``, ``:``, ``^``,
  ``NEAR``, ``AND``/``OR``/``NOT`` and parentheses as syntax. User text never reaches it:
  the MATCH expression is built from analyzer tokens only, each quoted as a string, and
  passed as a bound parameter.
- bm25() is "lower is better" and negative; hits are returned with ``-bm25`` so higher is
  better, as the interface promises.
"""

from django.db import connection

from memory.values import scope_token
from powercontext.search import RankedHit
from powercontext.search.policy import select_terms

MEMORY_TABLE = "memory_memoryactiveentry"
MEMORY_FTS = "memory_activeentry_fts"
MEMORY_VOCAB = "memory_activeentry_fts_vocab"


def _quoted(term: str) -> str:
    # Analyzer tokens hold only letters, digits, marks and "_", never a quote; doubling
    # is FTS5's escape and keeps this safe even if that ever changed.
    return '"' + term.replace('"', '""') + '"'


def match_expression(scope: str, terms: list[str]) -> str:
    """The FTS5 MATCH expression for ``terms`` restricted to one scope's rows."""
    any_term = " OR ".join(_quoted(term) for term in terms)
    return f"scope_token : {_quoted(scope_token(scope))} AND searchable_text : ({any_term})"


class SqliteSearchBackend:
    def document_frequencies(self, terms: list[str]) -> tuple[dict[str, int], int]:
        """(documents containing each term, documents in the index), over all scopes."""
        quote = connection.ops.quote_name
        placeholders = ", ".join(["%s"] * len(terms))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT term, doc FROM {quote(MEMORY_VOCAB)} "  # noqa: S608 - names only
                f"WHERE col = 'searchable_text' AND term IN ({placeholders})",
                terms,
            )
            frequencies = dict(cursor.fetchall())
            cursor.execute(f"SELECT count(*) FROM {quote(MEMORY_TABLE)}")  # noqa: S608
            (documents,) = cursor.fetchone()
        return frequencies, documents

    def memory_search(self, *, scope_id: str, terms: list[str], limit: int) -> list[RankedHit]:
        if not terms:
            return []
        frequencies, documents = self.document_frequencies(terms)
        selected = select_terms(terms, frequencies, documents)
        if not selected:
            return []
        return self.memory_match(scope_id=scope_id, terms=selected, limit=limit)

    def memory_match(self, *, scope_id: str, terms: list[str], limit: int) -> list[RankedHit]:
        """Rank the scope's entries matching any of ``terms`` by bm25 (no term selection)."""
        quote = connection.ops.quote_name
        fts, table = quote(MEMORY_FTS), quote(MEMORY_TABLE)
        with connection.cursor() as cursor:
            cursor.execute(
                # bm25 weights: the scope token column counts for nothing.
                f"SELECT e.entry_id, e.entry_version_id, bm25({fts}, 0.0, 1.0) AS rank "  # noqa: S608
                f"FROM {fts} JOIN {table} e ON e.id = {fts}.rowid "
                f"WHERE {fts} MATCH %s ORDER BY rank, e.entry_id LIMIT %s",
                [match_expression(scope_id, terms), limit],
            )
            rows = cursor.fetchall()
        return [RankedHit(entry_id, version_id, -rank) for entry_id, version_id, rank in rows]

    def memory_index_status(self) -> str | None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (%s, %s)",
                [MEMORY_FTS, MEMORY_VOCAB],
            )
            present = {name for (name,) in cursor.fetchall()}
        missing = sorted({MEMORY_FTS, MEMORY_VOCAB} - present)
        return f"missing full-text table(s): {', '.join(missing)}" if missing else None

    def memory_rebuild(self) -> None:
        """Re-read every projection row into the FTS5 index (one statement, one transaction)."""
        fts = connection.ops.quote_name(MEMORY_FTS)
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")  # noqa: S608
