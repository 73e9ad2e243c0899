"""OceanBase FULLTEXT search over the derived projections (MySQL mode).

``memory_memoryactiveentry.searchable_text`` carries a ``FULLTEXT ... WITH PARSER SPACE``
index (migration ``memory.0004``): the analyzer's space-separated tokens are split at
the spaces, exactly as FTS5 splits them on SQLite. Quirks that bite:

- ``PARSER_PROPERTIES=(min_token_size=1)`` is required: the default of 3 silently drops
  one- and two-character tokens (CJK unigrams and bigrams, "db", "ci").
- The space parser never indexes a built-in list of English stop words ("the", "of",
  ...); term selection drops such common terms anyway, so rankings agree with SQLite's
  in practice, but a query made only of stop words finds nothing here.
- MATCH scores are positive and BM25-like (higher is better), 0 for a non-match.
- The index is transactional: a writer's own uncommitted rows match in its session,
  other sessions see them right after commit.
- User text never reaches the query: AGAINST receives analyzer tokens joined by spaces,
  as a bound parameter, in natural-language mode (no operators).
"""

from typing import TYPE_CHECKING, cast

from django.db import connection

from powercontext.fields import identity_text
from powercontext.models import ArtifactHead
from powercontext.search import RankedArtifact, RankedHit

if TYPE_CHECKING:
    from powercontext.db.backends.oceanbase.schema import (
        DatabaseSchemaEditor as OceanBaseSchemaEditor,
    )

MEMORY_TABLE = "memory_memoryactiveentry"
MEMORY_FULLTEXT_INDEX = "memory_activeentry_ft"
EXPERIENCE_FAMILY = "experience"
HEAD_FULLTEXT_INDEX = "artifact_head_searchable_ft"


def _index_exists(table: str, index: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.statistics "
            "WHERE table_schema = DATABASE() AND table_name = %s AND index_name = %s LIMIT 1",
            [table, index],
        )
        return cursor.fetchone() is not None


class OceanBaseSearchBackend:
    def memory_match(self, *, scope_id: str, terms: list[str], limit: int) -> list[RankedHit]:
        quote = connection.ops.quote_name
        table = quote(MEMORY_TABLE)
        against = " ".join(terms)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT entry_id, entry_version_id, "  # noqa: S608 - names only
                f"MATCH (searchable_text) AGAINST (%s IN NATURAL LANGUAGE MODE) AS score, "
                f"searchable_text FROM {table} "
                f"WHERE scope_id = %s "
                f"AND MATCH (searchable_text) AGAINST (%s IN NATURAL LANGUAGE MODE) "
                f"ORDER BY score DESC, entry_id LIMIT %s",
                [against, scope_id, against, limit],
            )
            rows = cursor.fetchall()
        return [
            RankedHit(identity_text(entry_id), identity_text(version_id), float(score), text)
            for entry_id, version_id, score, text in rows
        ]

    def memory_index_status(self) -> str | None:
        if _index_exists(MEMORY_TABLE, MEMORY_FULLTEXT_INDEX):
            return None
        return f"missing FULLTEXT index {MEMORY_FULLTEXT_INDEX}"

    def memory_rebuild(self) -> None:
        """The FULLTEXT index follows its table's rows, so rebuilding the projection rows
        rebuilds it. Only a missing index is (re)created here."""
        if self.memory_index_status() is None:
            return
        _create_fulltext_index(MEMORY_TABLE, MEMORY_FULLTEXT_INDEX)

    def experience_match(
        self, *, scope_id: str, terms: list[str], limit: int
    ) -> list[RankedArtifact]:
        """Approved Experience heads: the FULLTEXT index is on the head's searchable_text
        itself, so the indexed revision is always the head's revision."""
        if not terms:
            return []
        table = connection.ops.quote_name(ArtifactHead._meta.db_table)
        against = " ".join(terms)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT artifact_id, revision, "  # noqa: S608 - names only
                f"MATCH (searchable_text) AGAINST (%s IN NATURAL LANGUAGE MODE) AS score, "
                f"searchable_text FROM {table} WHERE family = %s AND scope_id = %s "
                f"AND MATCH (searchable_text) AGAINST (%s IN NATURAL LANGUAGE MODE) "
                f"ORDER BY score DESC, artifact_id LIMIT %s",
                [against, EXPERIENCE_FAMILY, scope_id, against, limit],
            )
            rows = cursor.fetchall()
        return [
            RankedArtifact(identity_text(artifact_id), revision, revision, float(score), text)
            for artifact_id, revision, score, text in rows
        ]

    def experience_index(
        self, *, head_id: int, scope_id: str, artifact_id: str, revision: int, searchable_text: str
    ) -> None:
        """Nothing to do: the FULLTEXT index follows the head row's searchable_text."""

    def experience_index_status(self) -> str | None:
        if _index_exists(ArtifactHead._meta.db_table, HEAD_FULLTEXT_INDEX):
            return None
        return f"missing FULLTEXT index {HEAD_FULLTEXT_INDEX}"

    def experience_rebuild(self, scope_id: str | None = None) -> None:
        """Heads' searchable_text is rewritten by the Experience rebuild (an empty one
        never matches); only a missing index is (re)created here, for every scope."""
        if self.experience_index_status() is None:
            return
        _create_fulltext_index(ArtifactHead._meta.db_table, HEAD_FULLTEXT_INDEX)


def _create_fulltext_index(table: str, index: str) -> None:
    with connection.schema_editor() as editor:
        # This backend runs only on OceanBase, whose schema editor builds the index DDL.
        editor = cast("OceanBaseSchemaEditor", editor)
        editor.execute(editor.fulltext_index_sql(table, index, ["searchable_text"]))
