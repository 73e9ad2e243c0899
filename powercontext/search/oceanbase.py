"""OceanBase FULLTEXT search over any declared index (MySQL mode).

Every declared index is a ``FULLTEXT ... WITH PARSER SPACE`` index ``<name>_ft`` on the
declared table's text column itself, so it follows the rows in their own transaction
(an index declared as kept by writes needs no writes here). The analyzer's
space-separated tokens are split at the spaces, exactly as FTS5 splits them on SQLite.
Quirks that bite:

- ``PARSER_PROPERTIES=(min_token_size=1)`` is required: the default of 3 silently drops
  one- and two-character tokens (CJK unigrams and bigrams, "db", "ci").
- The space parser never indexes a built-in list of English stop words ("the", "of",
  ...); term selection drops such common terms anyway, so rankings agree with SQLite's
  in practice, but a query made only of stop words finds nothing here.
- MATCH scores are positive and BM25-like (higher is better), 0 for a non-match.
- The index is transactional: a writer's own uncommitted rows match in its session,
  other sessions see them right after commit.
- DDL commits implicitly: a missing index is created outside the caller's transaction.
- User text never reaches the query: AGAINST receives analyzer tokens joined by spaces,
  as a bound parameter, in natural-language mode (no operators).
"""

from collections.abc import Iterable
from typing import Any, ClassVar

from django.db import connection

from powercontext.db.backends.oceanbase.schema import FULLTEXT_PARSER
from powercontext.fields import identity_text
from powercontext.search.indexes import IndexHit, IndexRow, SearchIndex

ENGINE = "oceanbase"


def fulltext_index(index: SearchIndex) -> str:
    return index.object_name(ENGINE, "_ft")


def _text(value: Any) -> Any:
    # Raw SQL on an IdentityField (VARBINARY) column gets bytes back.
    return identity_text(value) if isinstance(value, bytes | str) else value


class OceanBaseSearchEngine:
    # The FULLTEXT index is the engine's own structure on the column: nothing to compare.
    checks_integrity: ClassVar[bool] = False

    @staticmethod
    def ddl(index: SearchIndex) -> tuple[list[str], list[str]]:
        name, table = fulltext_index(index), index.table
        forward = f"CREATE FULLTEXT INDEX `{name}` ON `{table}` (`{index.text_column}`) "
        return [forward + FULLTEXT_PARSER], [f"DROP INDEX `{name}` ON `{table}`"]

    def match(
        self, index: SearchIndex, *, scope_id: str, terms: list[str], limit: int
    ) -> list[IndexHit]:
        """The index is on the row's text itself, so the indexed version is always the
        row's version."""
        if not terms:
            return []
        table, cited, text = (
            connection.ops.quote_name(index.table),
            index.cited_id,
            index.text_column,
        )
        filters = "".join(f"{column} = %s AND " for column, _ in index.filters)
        against = " ".join(terms)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {cited}, {index.version}, "  # noqa: S608 - names only
                f"MATCH ({text}) AGAINST (%s IN NATURAL LANGUAGE MODE) AS score, "
                f"{text} FROM {table} WHERE {filters}{index.scope_column} = %s "
                f"AND MATCH ({text}) AGAINST (%s IN NATURAL LANGUAGE MODE) "
                f"ORDER BY score DESC, {cited} LIMIT %s",
                [against, *(value for _, value in index.filters), scope_id, against, limit],
            )
            rows = cursor.fetchall()
        return [
            IndexHit(identity_text(cited_id), _text(version), _text(version), float(score), found)
            for cited_id, version, score, found in rows
        ]

    def write(self, index: SearchIndex, rows: Iterable[IndexRow]) -> None:
        """Nothing to do: the FULLTEXT index follows the row's text."""

    def status(self, index: SearchIndex) -> str | None:
        name = fulltext_index(index)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM information_schema.statistics "
                "WHERE table_schema = DATABASE() AND table_name = %s AND index_name = %s LIMIT 1",
                [index.table, name],
            )
            present = cursor.fetchone() is not None
        return None if present else f"missing FULLTEXT index {name}"

    def rebuild(self, index: SearchIndex, scope_id: str | None = None) -> None:
        """The FULLTEXT index follows its table's rows, so rewriting the rows rebuilds
        it. Only a missing index is (re)created here, for every scope."""
        if self.status(index) is None:
            return
        forward, _ = self.ddl(index)
        with connection.schema_editor() as editor:
            for statement in forward:
                editor.execute(statement)

    def integrity(self, index: SearchIndex) -> str | None:
        return None
