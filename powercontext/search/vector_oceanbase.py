"""The vector channel on OceanBase (seekdb): a table with a VECTOR column and an HNSW
index per declared index.

``<name>_vec`` holds, per row key of the indexed table, the scope, the cited id and
version the vector was computed from (VARBINARY, compared byte for byte like every
identity here) and ``VECTOR(<dimension>)``, with ``CREATE VECTOR INDEX ... WITH
(distance=cosine, type=hnsw, lib=vsag)``. No foreign key to the indexed table (it would
block dropping or altering that table in a migration): as on SQLite, the write path drops
a deleted row's vector and ``rebuild_index`` any orphan. What seekdb 1.4 (embedded) does,
checked for real (tests/powercontext/test_vectors.py, bench/vector_bench.py; figures on
the shared 2-core machine at load 2-5, random unit vectors, real prompts' segments as
queries, k = 66, in a read snapshot):

- :meth:`OceanBaseVectors.nearest` is one exact scan for all the query vectors:
  ``LEAST(cosine_distance(embedding, q1), ...)`` over the scope's rows, ``ORDER BY``
  that, then the row key, ``LIMIT k``. Not the HNSW graph: ``ORDER BY
  cosine_distance(...) APPROXIMATE LIMIT k`` with ``WHERE scope_id = %s`` planned as
  ``VECTOR INDEX ADAPTIVE SCAN (PRE-FILTER)`` in every case measured (one scope of 10,000
  rows; 10,000 of 30,000; 50 of 20,050; with no statistics, statistics of an emptier
  table, or fresh ones), and that plan is slower than the exact scan: 47-78 ms a vector
  against 10-22 ms. It did return the exact answer. The hint ``/*+ VECTOR_INDEX(t idx
  post_filter) */`` left the plan as it was. (An earlier note here saw ``ADAPTIVE SCAN
  (POST-ITERATIVE-FILTER)``, which walks the graph, once statistics were gathered at
  30,000 rows, 19 ms; not seen again in these cases.) Eight vectors at 10,000 rows, p50: one
  APPROXIMATE query each, merged in Python, 376-475 ms; the same in one statement
  (``UNION ALL`` of the eight, ``GROUP BY`` row key with ``MIN``) 380-418 ms (the round
  trips were not the cost); the exact scan 33-41 ms, 33-62 ms when the table also holds
  another scope of 20,000, 4-6 ms for a scope of 50 rows. The graph without the scope
  filter costs 5 ms a vector but found 28-44 % of the exact nearest rows on these random
  vectors, and cannot keep to a scope. The exact scan's cost grows with the scope's rows
  (about 10x at 100,000, not measured). The HNSW index is still created and kept up
  (a cost to every write) though no read uses it now, so a later seekdb whose planner
  walks the graph within a scope can be tried without a layout change.
- Optimizer statistics (``DBMS_STATS.GATHER_TABLE_STATS(DATABASE(), '<table>')``;
  ``ANALYZE TABLE`` works too; ``oceanbase.DBA_TAB_STATISTICS`` shows ``num_rows`` and
  ``last_analyzed``) are gathered when the table is created and after every
  ``rebuild_index`` (:meth:`OceanBaseVectors.refresh_statistics`): 25-60 ms at 10,000
  rows (the first call on a new instance 130-230 ms), 320-420 ms at 20,000-30,000 under
  load. Without any the planner guesses a scope keeps 99 rows; with any, even of an empty
  table or of 2 rows with 20,050 there now, it estimated the scope from the table itself
  (50 rows: 50; a whole table of 10,000: 10,002) and chose the same plans as with fresh
  statistics (the scope's key for a small scope, a full scan for a large one), at the
  same latency. So nothing gathers them as a table grows: statistics once are what the
  planner needs, and ``rebuild_index`` refreshes them.
- The APPROXIMATE query joined to the rows in SQL lost rows (3 of 10 returned with every row
  matching): the join is a second query here, as on SQLite.
- ``VECTOR(384)``, ``cosine_distance`` and the HNSW (vsag) index all work in the embedded
  kernel; a foreign key ``ON DELETE CASCADE`` on such a table works too (not used).
- DDL commits implicitly: the table is created outside any write transaction.
"""

from collections.abc import Sequence
from typing import Any, ClassVar

from django.db import connection

from powercontext.embeddings import to_oceanbase_vector
from powercontext.search.indexes import SearchIndex
from powercontext.search.vectors import StoredVector, VectorRow, delete_vectors, vec_table


def _hnsw(index: SearchIndex) -> str:
    return vec_table(index) + "_hnsw"


def _text(value: Any) -> str:
    return bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


class OceanBaseVectors:
    transactional_ddl: ClassVar[bool] = False
    # Recorded with the model (``VectorIndexState.layout``); the one layout so far.
    layout: ClassVar[str] = "vector hnsw"

    @staticmethod
    def ddl(index: SearchIndex, dimension: int) -> tuple[list[str], list[str]]:
        vec = vec_table(index)
        create = (
            f"CREATE TABLE {vec} ("
            "row_key BIGINT NOT NULL PRIMARY KEY, "
            "scope_id VARBINARY(1024) NOT NULL, "
            "cited_id VARBINARY(1024) NOT NULL, "
            "version VARBINARY(1024) NOT NULL, "
            f"embedding VECTOR({int(dimension)}) NOT NULL, "
            f"KEY {vec}_scope (scope_id))"
        )
        hnsw = (
            f"CREATE VECTOR INDEX {_hnsw(index)} ON {vec} (embedding) "
            "WITH (distance=cosine, type=hnsw, lib=vsag)"
        )
        return [create, hnsw], [f"DROP TABLE IF EXISTS {vec}"]

    def problem(self, index: SearchIndex) -> str | None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT index_name FROM information_schema.statistics "
                "WHERE table_schema = DATABASE() AND table_name = %s",
                [vec_table(index)],
            )
            present = {_text(name) for (name,) in cursor.fetchall()}
        if not present:
            return f"missing vector table {vec_table(index)}"
        if _hnsw(index) not in present:
            return f"missing vector index {_hnsw(index)}"
        return None

    def upsert(self, index: SearchIndex, rows: Sequence[tuple[VectorRow, Any]]) -> None:
        vec = connection.ops.quote_name(vec_table(index))
        with connection.cursor() as cursor:
            cursor.executemany(
                f"REPLACE INTO {vec} (row_key, scope_id, cited_id, version, embedding) "  # noqa: S608
                "VALUES (%s, %s, %s, %s, %s)",
                [
                    (
                        row.row_key,
                        row.scope_id.encode("utf-8"),
                        row.cited_id.encode("utf-8"),
                        str(row.version).encode("utf-8"),
                        to_oceanbase_vector(vector),
                    )
                    for row, vector in rows
                ],
            )

    def delete(self, index: SearchIndex, row_keys: Sequence[int]) -> None:
        delete_vectors(index, "row_key", row_keys)

    def nearest(
        self, index: SearchIndex, *, scope_id: str, vectors: Sequence[Any], k: int
    ) -> list[tuple[int, str, str, float]]:
        if k <= 0 or not vectors:
            return []
        vec = connection.ops.quote_name(vec_table(index))
        # One exact scan of the scope for all the vectors (the module's docstring says why
        # not the HNSW graph): each row's distance to the nearest of them. MySQL's LEAST
        # needs two arguments at least.
        each = ", ".join(["cosine_distance(embedding, %s)"] * len(vectors))
        distance = f"LEAST({each})" if len(vectors) > 1 else each
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT row_key, cited_id, version, {distance} AS distance "  # noqa: S608
                f"FROM {vec} WHERE scope_id = %s ORDER BY distance, row_key LIMIT %s",
                [*(to_oceanbase_vector(vector) for vector in vectors), scope_id.encode(), int(k)],
            )
            return [
                (int(key), _text(cited), _text(version), float(found))
                for key, cited, version, found in cursor.fetchall()
            ]

    def stored(self, index: SearchIndex, scope_id: str | None) -> dict[int, StoredVector]:
        vec = connection.ops.quote_name(vec_table(index))
        sql = f"SELECT row_key, cited_id, version FROM {vec}"  # noqa: S608
        with connection.cursor() as cursor:
            if scope_id is None:
                cursor.execute(sql)
            else:
                cursor.execute(f"{sql} WHERE scope_id = %s", [scope_id.encode("utf-8")])
            return {
                int(key): StoredVector(_text(cited), _text(version))
                for key, cited, version in cursor.fetchall()
            }

    def refresh_statistics(self, index: SearchIndex) -> None:
        """Gather the optimizer statistics of the vector table (a few tens of ms at
        10,000 rows; it commits on its own)."""
        with connection.cursor() as cursor:
            cursor.execute("CALL DBMS_STATS.GATHER_TABLE_STATS(DATABASE(), %s)", [vec_table(index)])
