"""SQLite FTS5 search over the derived projections.

``memory_activeentry_fts`` is an external-content FTS5 table over
``memory_memoryactiveentry`` (scope token + analyzed text), kept in step by triggers, so
the index changes in the same transaction as the projection row (migration
``memory.0002``). ``experience_head_fts`` indexes the approved Experience heads
(``powercontext_artifacthead`` rows of family ``experience``): a plain FTS5 table written
by the approval service in its own transaction (migration ``experience.0002`` says why it
is not kept by triggers). Quirks that bite:

- FTS5 has no unary NOT and its query language treats ``"``, ``*``, ``-``, ``:``, ``^``,
  ``NEAR``, ``AND``/``OR``/``NOT`` and parentheses as syntax. User text never reaches it:
  the MATCH expression is built from analyzer tokens only, each quoted as a string, and
  passed as a bound parameter.
- bm25() is "lower is better" and negative; hits are returned with ``-bm25`` so higher is
  better, as the interface promises.
"""

from importlib import import_module

from django.db import DatabaseError, connection, transaction

from memory.values import scope_token
from powercontext.models import ArtifactHead
from powercontext.search import RankedArtifact, RankedHit

MEMORY_TABLE = "memory_memoryactiveentry"
MEMORY_FTS = "memory_activeentry_fts"
EXPERIENCE_FAMILY = "experience"
EXPERIENCE_FTS = "experience_head_fts"
MEMORY_INDEX_OBJECTS = (
    MEMORY_FTS,
    "memory_activeentry_fts_insert",
    "memory_activeentry_fts_delete",
    "memory_activeentry_fts_update",
)


def _quoted(term: str) -> str:
    # Analyzer tokens hold only letters, digits, marks and "_", never a quote; doubling
    # is FTS5's escape and keeps this safe even if that ever changed.
    return '"' + term.replace('"', '""') + '"'


def match_expression(scope: str, terms: list[str]) -> str:
    """The FTS5 MATCH expression for ``terms`` restricted to one scope's rows."""
    any_term = " OR ".join(_quoted(term) for term in terms)
    return f"scope_token : {_quoted(scope_token(scope))} AND searchable_text : ({any_term})"


class SqliteSearchBackend:
    def memory_match(self, *, scope_id: str, terms: list[str], limit: int) -> list[RankedHit]:
        """Rank the scope's entries matching any of ``terms`` by bm25, best first."""
        quote = connection.ops.quote_name
        fts, table = quote(MEMORY_FTS), quote(MEMORY_TABLE)
        with connection.cursor() as cursor:
            cursor.execute(
                # bm25 weights: the scope token column counts for nothing.
                f"SELECT e.entry_id, e.entry_version_id, bm25({fts}, 0.0, 1.0) AS rank, "  # noqa: S608
                "e.searchable_text "
                f"FROM {fts} JOIN {table} e ON e.id = {fts}.rowid "
                f"WHERE {fts} MATCH %s ORDER BY rank, e.entry_id LIMIT %s",
                [match_expression(scope_id, terms), limit],
            )
            rows = cursor.fetchall()
        return [
            RankedHit(entry_id, version_id, -rank, text)
            for entry_id, version_id, rank, text in rows
        ]

    def memory_index_status(self) -> str | None:
        # The triggers count as part of the index: without them it silently goes stale.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger') "  # noqa: S608
                f"AND name IN ({', '.join(['%s'] * len(MEMORY_INDEX_OBJECTS))})",
                list(MEMORY_INDEX_OBJECTS),
            )
            present = {name for (name,) in cursor.fetchall()}
        missing = [name for name in MEMORY_INDEX_OBJECTS if name not in present]
        return f"missing full-text object(s): {', '.join(missing)}" if missing else None

    def memory_rebuild(self) -> None:
        """Re-read every projection row into the FTS5 index (one statement).

        When a table or trigger of the index is missing, drops what is left of it and
        recreates it with the DDL of migration ``memory.0002`` (which ends by filling the
        index). Run inside a transaction: readers keep the old index until commit.
        """
        fts = connection.ops.quote_name(MEMORY_FTS)
        with connection.cursor() as cursor:
            if self.memory_index_status() is not None:
                ddl = import_module("memory.migrations.0002_fulltext_sqlite")
                for statement in (*ddl.REVERSE, *ddl.FORWARD):
                    cursor.execute(statement)
                return
            cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")  # noqa: S608

    def memory_index_integrity(self) -> str | None:
        """FTS5's own integrity check, including (rank = 1) that the index matches the
        projection table it is built from. None when consistent, else the reason."""
        fts = connection.ops.quote_name(MEMORY_FTS)
        try:
            # A savepoint, so a failed check leaves an enclosing transaction usable.
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)"  # noqa: S608
                )
        except DatabaseError as error:
            return f"FTS5 integrity-check failed: {error}"
        return None

    # -- Experience ---------------------------------------------------------------------

    def experience_match(
        self, *, scope_id: str, terms: list[str], limit: int
    ) -> list[RankedArtifact]:
        """Rank the scope's approved Experience heads matching any of ``terms`` by bm25."""
        if not terms:
            return []
        quote = connection.ops.quote_name
        fts, heads = quote(EXPERIENCE_FTS), quote(ArtifactHead._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                # Only the searchable_text column carries weight in bm25. The join reads
                # the head in the caller's snapshot: its revision is the one cited, and
                # the family and scope filters keep anything but this scope's Experience
                # out even if the index were wrong.
                f"SELECT h.artifact_id, h.revision, {fts}.revision, "  # noqa: S608
                f"bm25({fts}, 0.0, 1.0, 0.0, 0.0) AS rank, {fts}.searchable_text "
                f"FROM {fts} JOIN {heads} h ON h.id = {fts}.rowid "
                f"WHERE {fts} MATCH %s AND h.family = %s AND h.scope_id = %s "
                f"ORDER BY rank, h.artifact_id LIMIT %s",
                [match_expression(scope_id, terms), EXPERIENCE_FAMILY, scope_id, limit],
            )
            rows = cursor.fetchall()
        return [
            RankedArtifact(artifact_id, revision, int(indexed), -rank, text)
            for artifact_id, revision, indexed, rank, text in rows
        ]

    def experience_index(
        self, *, head_id: int, scope_id: str, artifact_id: str, revision: int, searchable_text: str
    ) -> None:
        fts = connection.ops.quote_name(EXPERIENCE_FTS)
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {fts} WHERE rowid = %s", [head_id])  # noqa: S608
            cursor.execute(
                f"INSERT INTO {fts}(rowid, scope_token, searchable_text, artifact_id, revision) "  # noqa: S608
                "VALUES (%s, %s, %s, %s, %s)",
                [head_id, scope_token(scope_id), searchable_text, artifact_id, revision],
            )

    def experience_index_status(self) -> str | None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s",
                [EXPERIENCE_FTS],
            )
            present = cursor.fetchone() is not None
        return None if present else f"missing full-text table: {EXPERIENCE_FTS}"

    def experience_rebuild(self, scope_id: str | None = None) -> None:
        """Replace the index rows of one scope's (or every) ``experience`` head with the
        heads' current searchable_text (recreating the table with the DDL of migration
        ``experience.0002`` when it is missing, then for every scope). Callers run this in
        one transaction, so under WAL a reader sees the old index or the new one, never a
        partial one."""
        fts = connection.ops.quote_name(EXPERIENCE_FTS)
        heads = ArtifactHead.objects.filter(family=EXPERIENCE_FAMILY).exclude(searchable_text="")
        with connection.cursor() as cursor:
            if self.experience_index_status() is not None:
                ddl = import_module("experience.migrations.0002_fulltext_sqlite")
                for statement in (*ddl.REVERSE, *ddl.FORWARD):
                    cursor.execute(statement)
                scope_id = None
            if scope_id is None:
                cursor.execute(f"DELETE FROM {fts}")  # noqa: S608
            else:
                # The scope's heads' rows, and any row carrying the scope's token (a
                # stray one would otherwise match inside the scope).
                head_ids = list(
                    ArtifactHead.objects.filter(
                        family=EXPERIENCE_FAMILY, scope_id=scope_id
                    ).values_list("id", flat=True)
                )
                cursor.execute(
                    f"SELECT rowid FROM {fts} WHERE {fts} MATCH %s",  # noqa: S608
                    [f"scope_token : {_quoted(scope_token(scope_id))}"],
                )
                doomed = sorted(set(head_ids) | {row[0] for row in cursor.fetchall()})
                for start in range(0, len(doomed), 500):
                    batch = doomed[start : start + 500]
                    marks = ", ".join(["%s"] * len(batch))
                    cursor.execute(f"DELETE FROM {fts} WHERE rowid IN ({marks})", batch)  # noqa: S608
                heads = heads.filter(scope_id=scope_id)
            rows = heads.values_list("id", "scope_id", "artifact_id", "revision", "searchable_text")
            cursor.executemany(
                f"INSERT INTO {fts}(rowid, scope_token, searchable_text, artifact_id, revision) "  # noqa: S608
                "VALUES (%s, %s, %s, %s, %s)",
                [
                    (head_id, scope_token(scope), text, artifact_id, revision)
                    for head_id, scope, artifact_id, revision, text in rows.iterator()
                ],
            )
