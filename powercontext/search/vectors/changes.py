"""The token that names what an index's stored vectors are
(``VectorIndexState.vectors_token``).

An engine that keeps vectors it read in memory (SQLite keeps each scope's codes:
``vector_sqlite``) reads the token before the vectors and keeps them under it; while the
stored token is the same, no change to the vectors has been committed since, by this
process or any other. That holds because every change writes a fresh random token in
the change's own transaction (:func:`changed`, and ``record.record_model`` when the
objects are created): a token read first and vectors read after are at most newer than
the token, which costs one needless read later, never a stale answer; and a token is
never written twice, so a rolled-back change, a restored copy of the database or an
index recreated from nothing cannot bring back a token whose vectors were others.
"""

from django.db import connection

from powercontext.search.indexes import SearchIndex


def _table() -> str:
    from powercontext.models import VectorIndexState

    return connection.ops.quote_name(VectorIndexState._meta.db_table)


def token(index: SearchIndex) -> str | None:
    """The index's token, None when it has no vector objects."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT vectors_token FROM {_table()} WHERE {connection.ops.quote_name('index')} = %s",  # noqa: S608
            [index.name],
        )
        found = cursor.fetchone()
    return None if found is None else str(found[0])


def changed(index: SearchIndex) -> None:
    """Write a fresh token for the index: call it in the transaction that changes the
    vectors, after the change."""
    from powercontext.models import new_vectors_token

    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_table()} SET vectors_token = %s "  # noqa: S608
            f"WHERE {connection.ops.quote_name('index')} = %s",
            [new_vectors_token(), index.name],
        )
