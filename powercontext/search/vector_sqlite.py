"""The vector channel on SQLite: a sqlite-vec ``vec0`` table per declared index.

``<name>_vec`` is a ``vec0`` virtual table whose rowid is the indexed table's row key,
partitioned by scope (a KNN query reads only that scope's chunks), with the cited id and
version the vector was computed from as auxiliary columns and the embedding as float32
under cosine distance. No trigger on the indexed table: one would need sqlite-vec in
every tool that deletes a row there (the ``sqlite3`` shell has no ``vec0``), so the write
path drops a deleted row's vector itself (``vectors.writing``) and ``rebuild_index``
drops any other orphan. sqlite-vec is loaded by ``powercontext.db.backends.sqlite``.

Quirks that bite: ``vec0`` has no UPSERT (a replaced vector is deleted and inserted); a
KNN query takes its ``k`` and the partition key as constraints beside ``MATCH`` and
cannot join, so the join to the rows is a second query; ``k`` is at most 4096.
"""

from collections.abc import Sequence
from typing import Any, ClassVar

from django.db import connection

from powercontext.embeddings import to_sqlite_vec
from powercontext.search.indexes import SearchIndex
from powercontext.search.vectors import StoredVector, VectorRow, delete_vectors, vec_table

MAX_K = 4096


class SqliteVectors:
    transactional_ddl: ClassVar[bool] = True

    @staticmethod
    def ddl(index: SearchIndex, dimension: int) -> tuple[list[str], list[str]]:
        vec = vec_table(index)
        create = (
            f"CREATE VIRTUAL TABLE {vec} USING vec0("
            "scope_id text partition key, "
            f"embedding float[{int(dimension)}] distance_metric=cosine, "
            "+cited_id text, +version text)"
        )
        return [create], [f"DROP TABLE IF EXISTS {vec}"]

    def problem(self, index: SearchIndex) -> str | None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s",
                [vec_table(index)],
            )
            present = cursor.fetchone() is not None
        return None if present else f"missing vector table {vec_table(index)}"

    def upsert(self, index: SearchIndex, rows: Sequence[tuple[VectorRow, Any]]) -> None:
        vec = connection.ops.quote_name(vec_table(index))
        self.delete(index, [row.row_key for row, _ in rows])
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {vec}(rowid, scope_id, embedding, cited_id, version) "  # noqa: S608
                "VALUES (%s, %s, %s, %s, %s)",
                [
                    (
                        row.row_key,
                        row.scope_id,
                        to_sqlite_vec(vector),
                        row.cited_id,
                        str(row.version),
                    )
                    for row, vector in rows
                ],
            )

    def delete(self, index: SearchIndex, row_keys: Sequence[int]) -> None:
        delete_vectors(index, "rowid", row_keys)

    def nearest(
        self, index: SearchIndex, *, scope_id: str, vector: Any, k: int
    ) -> list[tuple[int, str, str, float]]:
        vec = connection.ops.quote_name(vec_table(index))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT rowid, cited_id, version, distance FROM {vec} "  # noqa: S608
                "WHERE embedding MATCH %s AND k = %s AND scope_id = %s ORDER BY distance",
                [to_sqlite_vec(vector), min(k, MAX_K), scope_id],
            )
            return [
                (int(key), cited, version, float(distance))
                for key, cited, version, distance in cursor.fetchall()
            ]

    def stored(self, index: SearchIndex, scope_id: str | None) -> dict[int, StoredVector]:
        vec = connection.ops.quote_name(vec_table(index))
        sql = f"SELECT rowid, cited_id, version FROM {vec}"  # noqa: S608
        with connection.cursor() as cursor:
            if scope_id is None:
                cursor.execute(sql)
            else:
                cursor.execute(f"{sql} WHERE scope_id = %s", [scope_id])
            return {
                int(key): StoredVector(cited, version) for key, cited, version in cursor.fetchall()
            }
