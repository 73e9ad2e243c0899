"""The vector channel on OceanBase (seekdb): a table with a VECTOR column and an HNSW
index per declared index.

``<name>_vec`` holds, per row key of the indexed table, the scope, the cited id and
version the vector was computed from (VARBINARY, compared byte for byte like every
identity here) and ``VECTOR(<dimension>)``, with ``CREATE VECTOR INDEX ... WITH
(distance=cosine, type=hnsw, lib=vsag)``. No foreign key to the indexed table (it would
block dropping or altering that table in a migration): as on SQLite, the write path drops
a deleted row's vector and ``rebuild_index`` any orphan. What seekdb 1.4 (embedded) does,
checked for real (tests/powercontext/search/vectors/test_vectors.py,
bench/vector_bench.py; figures on
the shared 2-core machine at load 2-7, random unit vectors, real prompts' segments as
queries, k = 66, in a read snapshot):

- :meth:`OceanBaseVectors.nearest` is one exact scan for all the query vectors:
  ``LEAST(cosine_distance(embedding, q1), ...)`` over the scope's rows, ``ORDER BY``
  that, then the row key, ``LIMIT k``. Eight vectors (a prompt's segments), p50:

  =====================  ===============  ==============  ===================
  rows in the scope      one APPROXIMATE  the same, one   the exact scan
                         query each       ``UNION ALL``
  =====================  ===============  ==============  ===================
  50 (of 20,050)         19-27 ms         -               4-6 ms
  10,000                 376-475 ms       380-418 ms      33-75 ms
  10,000 (of 30,000)     541-623 ms       729-743 ms      33-62 ms
  30,000                 115 ms           -               118 ms
  100,000                266 ms           -               308-367 ms
  100,000, statistics    229 ms           -               (the same)
  =====================  ===============  ==============  ===================

  ``ORDER BY cosine_distance(...) APPROXIMATE LIMIT k`` with ``WHERE scope_id = %s``
  planned as ``VECTOR INDEX ADAPTIVE SCAN (PRE-FILTER)`` (the scope filtered first) in
  every case but the last: at 10,000 rows it returned the exact answer at 47-78 ms a
  vector (the exact scan: 10-22 ms); at 30,000 and 100,000 it adapts to a filtered graph
  walk, 14-33 ms a vector in a run of eight, and found 35 % and 14 % of the exact
  nearest rows (random vectors, the graph's worst case; real embeddings fare better).
  Only statistics gathered at 100,000 rows gave ``ADAPTIVE SCAN
  (POST-ITERATIVE-FILTER)``: 28 ms a vector (one alone: 28 ms, against the exact scan's
  92-101 ms), the same 14 % found. The hint ``/*+ VECTOR_INDEX(t idx post_filter) */``
  left every plan as it was, and one ``UNION ALL`` statement did the same work as the
  loop (the round trips were not the cost). So the exact scan: exact, and fastest up to
  tens of thousands of rows in a scope; at 100,000 it costs 1.2-1.6x the graph for a
  prompt's eight segments (both far over prepare's budget there). The HNSW index is
  still created and kept up (a cost to every write) though no read uses it, so a graph
  path for large scopes can be added without a layout change; it would need statistics
  kept fresh as the table grows (below).
- Optimizer statistics (``DBMS_STATS.GATHER_TABLE_STATS(DATABASE(), '<table>')``;
  ``ANALYZE TABLE`` works too; ``oceanbase.DBA_TAB_STATISTICS`` shows ``num_rows`` and
  ``last_analyzed``) are gathered when the table is created and after every
  ``rebuild_index`` (:meth:`OceanBaseVectors.refresh_statistics`): 25-60 ms at 10,000
  rows (the first call on a new instance 130-230 ms), 320-420 ms at 20,000-30,000 and
  455-625 ms at 100,000, under load. Without any the planner guesses a scope keeps 99
  rows. For the exact scan, statistics of any age are enough: with those of an empty
  table or of 2 rows, the scope was estimated from the table itself (50 of 20,050 rows:
  50, the scope's key used, 5 ms; 10,000 of 30,000: a full scan, with none or fresh ones).
  The APPROXIMATE plan is what stale statistics change (still PRE-FILTER at 100,000 rows
  with those of the empty table, 266 ms for eight vectors against 229 after gathering).
  So nothing regathers them as a table grows while no read uses the graph;
  ``rebuild_index`` refreshes them.
- The APPROXIMATE query joined to the rows in SQL lost rows (3 of 10 returned with every
  row matching): the join is a second query here, as on SQLite.
- ``VECTOR(384)``, ``cosine_distance`` and the HNSW (vsag) index all work in the embedded
  kernel; a foreign key ``ON DELETE CASCADE`` on such a table works too (not used).
- DDL commits implicitly: the table is created outside any write transaction.
"""

import json
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from django.db import DataError, connection

from powercontext.embedding import to_oceanbase_vector
from powercontext.search.indexes import SearchIndex
from powercontext.search.vectors.engine import VectorEngine
from powercontext.search.vectors.values import Damage, StoredVector, VectorRow, vec_table

# MySQL's "out of range value": what seekdb answers when a vector's arithmetic overflows
# (``vector_norm`` of a vector holding 1e20, or ``cosine_distance`` at some dimensions:
# the whole statement fails).
OUT_OF_RANGE = 1264
# A value is finite when subtracting the vector from itself gives zeros (NaN and
# infinities give NaN, and NaN equals nothing): the one test seekdb 1.4 answers for every
# row without failing; ``vector_norm`` and the distances fail on an overflow.
_FINITE = "(embedding - embedding) = (embedding - embedding)"
# Rows read at once when looking for the ones the engine cannot compute with.
_DAMAGE_BATCH = 1000


def _error_code(error: Exception) -> int | None:
    cause = error.__cause__ or error
    args = getattr(cause, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _hnsw(index: SearchIndex) -> str:
    return vec_table(index) + "_hnsw"


def _text(value: Any) -> str:
    return bytes(value).decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


class OceanBaseVectors(VectorEngine):
    transactional_ddl: ClassVar[bool] = False
    # Recorded with the model (``VectorIndexState.layout``); the one layout so far.
    layout: ClassVar[str] = "vector hnsw"
    key_column: ClassVar[str] = "row_key"

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
        # A vector holding NaN or an infinity comes back at a distance that reads as 0
        # (seekdb 1.4, 384 dimensions): it would rank first for every query. The finite
        # test beside it marks it to be left out (10,000 rows, eight vectors: no cost
        # measurable, the column is computed for the rows kept alone).
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT row_key, cited_id, version, {distance} AS distance, "  # noqa: S608
                    f"{_FINITE} FROM {vec} WHERE scope_id = %s "
                    "ORDER BY distance, row_key LIMIT %s",
                    [
                        *(to_oceanbase_vector(vector) for vector in vectors),
                        scope_id.encode(),
                        int(k),
                    ],
                )
                found = cursor.fetchall()
        except DataError as error:
            if _error_code(error) != OUT_OF_RANGE:
                raise
            # An overflowing vector fails the scope's whole scan (seen at 3 dimensions:
            # a value of 1e30; at 384 seekdb answers distance 1): searched lexically.
            raise self.damage.note_scope(index, scope_id, error) from error
        self.damage.scope_searched(index, scope_id)
        damaged = {
            int(key): "its vector holds values that are not finite"
            if not sane
            else "its vector is all zeros"
            for key, _, _, value, sane in found
            if not sane or value is None
        }
        if damaged:
            self.damage.note_rows(index, damaged)
        return [
            (int(key), _text(cited), _text(version), float(value))
            for key, cited, version, value, _ in found
            if int(key) not in damaged
        ]

    def vectors(
        self, index: SearchIndex, row_keys: Sequence[int]
    ) -> list[tuple[int, str, str, Any]]:
        if not row_keys:
            return []
        vec = connection.ops.quote_name(vec_table(index))
        marks = ", ".join(["%s"] * len(row_keys))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT row_key, cited_id, version, embedding FROM {vec} "  # noqa: S608
                f"WHERE row_key IN ({marks})",
                list(row_keys),
            )
            found = cursor.fetchall()
        vectors = []
        for key, cited, version, embedding in found:
            # The VECTOR column reads back as its literal, ``[0.1,-0.2,...]``.
            values = np.asarray(json.loads(_text(embedding)), dtype=np.float32)
            if values.size and np.isfinite(values).all() and values.any():
                vectors.append((int(key), _text(cited), _text(version), values))
        return vectors

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

    def stored_keys(self, index: SearchIndex, *, after: int | None, count: int) -> list[int]:
        vec = connection.ops.quote_name(vec_table(index))
        past = "" if after is None else f"WHERE row_key > {int(after)} "
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT row_key FROM {vec} {past}ORDER BY row_key LIMIT {int(count)}"  # noqa: S608 - names and integers only
            )
            return [int(key) for (key,) in cursor.fetchall()]

    def stored_of(self, index: SearchIndex, row_keys: Sequence[int]) -> dict[int, StoredVector]:
        if not row_keys:
            return {}
        vec = connection.ops.quote_name(vec_table(index))
        marks = ", ".join(["%s"] * len(row_keys))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT row_key, cited_id, version FROM {vec} "  # noqa: S608 - names only
                f"WHERE row_key IN ({marks})",
                list(row_keys),
            )
            return {
                int(key): StoredVector(_text(cited), _text(version))
                for key, cited, version in cursor.fetchall()
            }

    def damaged(
        self,
        index: SearchIndex,
        *,
        dimension: int,
        scope_id: str | None = None,
        keys: Sequence[int] | None = None,
    ) -> Damage:
        """Vectors whose values are not finite, are all zero, or overflow the engine's
        arithmetic (found by halving the batch that fails). A vector of another length
        cannot be stored (``VECTOR(n)`` refuses it: "inconsistent dimension"), so
        ``dimension`` is the column's and not checked again."""
        vec = connection.ops.quote_name(vec_table(index))
        found = Damage()
        if keys is not None:
            batches = [list(keys)]
        else:
            where, params = (
                ("", [])
                if scope_id is None
                else (
                    " WHERE scope_id = %s",
                    [scope_id.encode("utf-8")],
                )
            )
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT row_key FROM {vec}{where} ORDER BY row_key", params)  # noqa: S608
                every = [int(key) for (key,) in cursor.fetchall()]
            batches = [
                every[start : start + _DAMAGE_BATCH]
                for start in range(0, len(every), _DAMAGE_BATCH)
            ]
        for batch in batches:
            if batch:
                self._damaged_among(vec, batch, found.rows)
        return found

    def _damaged_among(self, vec: str, keys: list[int], found: dict[int, str]) -> None:
        marks = ", ".join(["%s"] * len(keys))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT row_key FROM {vec} WHERE row_key IN ({marks}) AND NOT {_FINITE}",  # noqa: S608
                keys,
            )
            for (key,) in cursor.fetchall():
                found[int(key)] = "its vector holds values that are not finite"
            finite = [key for key in keys if key not in found]
            if not finite:
                return
            marks = ", ".join(["%s"] * len(finite))
            try:
                cursor.execute(
                    f"SELECT row_key FROM {vec} WHERE row_key IN ({marks}) "  # noqa: S608
                    "AND vector_norm(embedding) = 0",
                    finite,
                )
            except DataError as error:
                if _error_code(error) != OUT_OF_RANGE:
                    raise
                if len(finite) == 1:
                    found[finite[0]] = "its vector's values overflow the engine's arithmetic"
                    return
                half = len(finite) // 2
                self._damaged_among(vec, finite[:half], found)
                self._damaged_among(vec, finite[half:], found)
                return
            for (key,) in cursor.fetchall():
                found[int(key)] = "its vector is all zeros"

    def refresh_statistics(self, index: SearchIndex) -> None:
        """Gather the optimizer statistics of the vector table (a few tens of ms at
        10,000 rows; it commits on its own)."""
        with connection.cursor() as cursor:
            cursor.execute("CALL DBMS_STATS.GATHER_TABLE_STATS(DATABASE(), %s)", [vec_table(index)])
