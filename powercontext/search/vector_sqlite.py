"""The vector channel on SQLite: a sqlite-vec ``vec0`` table per declared index, searched
by a scan of 2-bit codes and rescored by exact cosine.

``<name>_vec`` is a ``vec0`` virtual table whose rowid is the indexed table's row key,
partitioned by scope, with one vector column, ``embedding_code bit[2 x dimension]`` (each
value of the embedding quantised to three levels, :func:`_code`), and as auxiliary columns
the cited id and version the vector was computed from and ``embedding``, the float32
vector itself.

:meth:`SqliteVectors.nearest` finds the ``k`` rows of a scope nearest to any of a few
vectors (a query's, or each of a prompt's segments') in two steps:

1. the :data:`COARSE_FACTOR` x ``k`` rows (at least :data:`COARSE_MIN`) whose codes are
   nearest by Hamming distance to the code of the vector they are nearest to, every row
   of the scope compared, the scope's codes read once for all the vectors and kept
   until the index's vectors change (:data:`KEPT_BYTES`, ``vectors.changes``);
2. their exact cosine distance to the nearest vector (the float vectors, numpy), sorted,
   cut to ``k``.

So the answer is in exact cosine order; it can miss a row only when the row is among the
``k`` nearest by cosine but not among the candidates, which on real embeddings was under
1 % of the top 50 (docs/relevance-history.md, "Vectors on SQLite"); a scope of no more rows than
the candidates is searched exactly, step 1 skipped. Three levels, not signs alone: sign bits
(``vec_quantize_binary``) needed four times as many candidates for the same overlap, and
rescoring, a row lookup each, is the costly step. All the vectors in one pass, not one
search each: eight segments searched one by one cost eight scans and eight rescorings
(prepare's vector step at 100,000 rows: 167 ms one by one, 32 ms together, against 19
for one vector).

Step 1 reads the codes straight from the table's chunk storage (``_chunks`` and
``_vector_chunks00``, whose format sqlite-vec 0.1.9 describes in its ARCHITECTURE.md: per
chunk a validity bitmap, the rowids as 64-bit integers, the vectors end to end) and
computes the distances with numpy. Not with ``embedding_code MATCH ... AND k = ...``: that
KNN selects its top ``k`` in each chunk in O(``k`` x chunk size), so 1,000 candidates at
100,000 rows would cost 200 ms where the scan costs a few. A test checks the scan against
sqlite-vec's own Hamming KNN, so a format change in another sqlite-vec fails loudly.
Step 2 reads the auxiliary columns by rowid (``_auxiliary``, a plain table): fetching a
``vec0`` vector column costs a blob open per row. It reads the float vector of every
candidate and the cited id and version of the ``k`` kept only; numpy takes every
candidate's products with every vector in one call, where ``vec_distance_cosine`` would
need a statement per vector.

No trigger on the indexed table: one would need sqlite-vec in every tool that deletes a
row there (the ``sqlite3`` shell has no ``vec0``), so the write path drops a deleted row's
vector itself (``vectors.writing``) and ``rebuild_index`` drops any other orphan.
sqlite-vec is loaded by ``powercontext.db.backends.sqlite``. ``vec0`` has no UPSERT: a
replaced vector is deleted and inserted.
"""

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
from django.db import connection, transaction

from powercontext.embedding import to_sqlite_vec
from powercontext.search.indexes import SearchIndex
from powercontext.search.vector_sqlite_slots import (
    Floats,
    Slots,
    chunk_slots,
    code,
    codes,
    float_matrix,
    float_problem,
    nearest_by_code,
    slots_of,
    valid_slots,
)
from powercontext.search.vectors import changes
from powercontext.search.vectors.engine import VectorEngine
from powercontext.search.vectors.kept import KeptScopes
from powercontext.search.vectors.values import Damage, StoredVector, VectorRow, vec_table

# Candidates by code per row asked for, and their least number (see the module's
# docstring; chosen on real embeddings, docs/relevance-history.md).
COARSE_FACTOR = 16
COARSE_MIN = 512
# Row keys bound to one statement (SQLite allows 32,766; the write paths use 500 too).
_BATCH = 500


# Each scope's slots are kept between searches until the index's vectors change
# (``vectors.changes``): reading a scope's chunks and turning its codes word by word was
# half a search at 100,000 rows (20 of 45 ms). 64 MB keeps about 600,000 codes of the
# 384-dimension model (96 bytes each, and a row key).
KEPT_BYTES = 64 * 2**20
# A scope of at most this many vectors keeps its float vectors too (3 MB at 384
# dimensions): at 1,000 rows every row is a candidate, and reading and checking their
# vectors was three quarters of a search (3 of 4 ms). Larger scopes read the candidates'
# alone: 100,000 rows' would be 150 MB.
FLOATS_KEPT_ROWS = 2048
_KEPT: KeptScopes[Slots] = KeptScopes(KEPT_BYTES)


class SqliteVectors(VectorEngine):
    transactional_ddl: ClassVar[bool] = True
    # Recorded with the model (``VectorIndexState.layout``): a table of another layout
    # (before it, ``embedding float[...]`` alone) is rebuilt, never read or written.
    layout: ClassVar[str] = "vec0 2-bit code, float rescoring"
    # The row key is the vec0 table's rowid.
    key_column: ClassVar[str] = "rowid"
    # refresh_statistics is the base's no-op: :meth:`nearest` reads the chunks and rows by
    # key, no plan to choose (and the read path already avoids what SQLite's planner gets
    # wrong).

    @staticmethod
    def ddl(index: SearchIndex, dimension: int) -> tuple[list[str], list[str]]:
        vec = vec_table(index)
        create = (
            f"CREATE VIRTUAL TABLE {vec} USING vec0("
            "scope_id text partition key, "
            f"embedding_code bit[{2 * int(dimension)}], "
            "+cited_id text, +version text, +embedding blob)"
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
        # With a fresh token in the same transaction (``vectors.changes``): the scopes'
        # slots kept by any process are no longer the stored ones.
        with transaction.atomic(savepoint=False):
            self._insert(index, rows)
            changes.changed(index)

    def delete(self, index: SearchIndex, row_keys: Sequence[int]) -> None:
        with transaction.atomic(savepoint=False):
            super().delete(index, row_keys)
            changes.changed(index)

    def _insert(self, index: SearchIndex, rows: Sequence[tuple[VectorRow, Any]]) -> None:
        """Store each (row, vector), the row key's previous vector deleted first (``vec0``
        has no UPSERT)."""
        vec = connection.ops.quote_name(vec_table(index))
        super().delete(index, [row.row_key for row, _ in rows])
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {vec}(rowid, scope_id, embedding_code, cited_id, version, "  # noqa: S608
                "embedding) VALUES (%s, %s, vec_bit(%s), %s, %s, %s)",
                [
                    (
                        row.row_key,
                        row.scope_id,
                        code(vector).tobytes(),
                        row.cited_id,
                        str(row.version),
                        to_sqlite_vec(vector),
                    )
                    for row, vector in rows
                ],
            )

    def nearest(
        self, index: SearchIndex, *, scope_id: str, vectors: Sequence[Any], k: int
    ) -> list[tuple[int, str, str, float]]:
        if k <= 0 or not len(vectors):
            return []
        queries = np.stack([np.asarray(vector, dtype=np.float32) for vector in vectors])
        try:
            slots = self._scope_slots(index, scope_id, queries.shape[1])
        except ValueError as error:
            raise self.damage.note_scope(index, scope_id, error) from error
        self.damage.scope_searched(index, scope_id)
        coarse = max(k * COARSE_FACTOR, COARSE_MIN)
        # Every vector of the scope is a candidate when there are no more: no code
        # comparison to make, and kept float vectors are taken whole.
        every = slots.count <= coarse
        floats = slots.floats
        if floats is not None:
            rows, matrix = (
                (floats.keys, floats.matrix)
                if every
                else floats.of(nearest_by_code(slots, list(queries), coarse))
            )
        else:
            candidates = (
                [int(key) for key in slots.keys[slots.valid]]
                if every
                else nearest_by_code(slots, list(queries), coarse)
            )
            if not candidates:
                return []
            # The float vectors of every candidate, then the cited id and version of the
            # k kept alone: each column read costs (1,056 candidates: 1.4 against 1.7 ms).
            stored = self._auxiliary(index, "value02", candidates)
            rows, matrix, damaged = float_matrix(stored, queries.shape[1])
            if damaged:
                # Left out, never a 500 for the whole scope: the others are still exact.
                self.damage.note_rows(index, damaged)
        if not len(rows):
            return []
        # The exact cosine distance to the nearest query (what ``vec_distance_cosine``
        # computes), every candidate with every query in one call. By einsum's own loops,
        # not a BLAS matrix product: BLAS rounds a row's products differently by where the
        # row falls in the matrix, so a row would score otherwise (by 1e-7) with other
        # candidates around it, and a search repeated after a rebuild would not give the
        # same scores; einsum's sum for a row and a query depends on those two alone.
        products = np.einsum("ij,kj->ik", matrix, queries, optimize=False)
        norms = np.einsum("ij,ij->i", matrix, matrix, optimize=False)
        query_norms = np.einsum("ij,ij->i", queries, queries, optimize=False)
        similarity = products / np.maximum(np.sqrt(np.outer(norms, query_norms)), 1e-12)
        distances = 1.0 - similarity.max(axis=1)
        # Nearest first, ties by row key; numpy's sort, not Python's with a key function
        # (1,001 candidates: 0.04 against 0.27 ms).
        nearest = [
            (int(rows[at]), float(distances[at])) for at in np.lexsort((rows, distances))[:k]
        ]
        cited = (
            floats.cited
            if floats is not None
            else {
                key: (cited_id, version)
                for key, cited_id, version in self._auxiliary(
                    index, "value00, value01", [key for key, _ in nearest]
                )
            }
        )
        return [
            (key, *cited[key], distance)
            for key, distance in nearest
            if key in cited  # deleted meanwhile, outside a snapshot: not a hit anyway
        ]

    def _auxiliary(self, index: SearchIndex, columns: str, keys: Sequence[int]) -> list[Any]:
        """(row key, the auxiliary ``columns``) of ``keys`` (value00..02: cited id,
        version, embedding, in the order declared), by rowid."""
        auxiliary = connection.ops.quote_name(vec_table(index) + "_auxiliary")
        found: list[Any] = []
        with connection.cursor() as cursor:
            for start in range(0, len(keys), _BATCH):
                batch = keys[start : start + _BATCH]
                marks = ", ".join(["%s"] * len(batch))
                cursor.execute(
                    f"SELECT rowid, {columns} FROM {auxiliary} "  # noqa: S608 - names only
                    f"WHERE rowid IN ({marks})",
                    batch,
                )
                found.extend(cursor.fetchall())
        return found

    def code_nearest(
        self, index: SearchIndex, *, scope_id: str, vectors: Sequence[Any], k: int
    ) -> list[int]:
        """The row keys of the scope's ``k`` vectors nearest to any of ``vectors`` by
        Hamming distance between their codes (a row's distance is to the code it is
        nearest to; all of them when the scope has no more), nearest first, ties by row
        key. The scope's codes are read once for all of ``vectors``."""
        if not len(vectors):
            return []
        slots = self._scope_slots(index, scope_id, len(np.asarray(vectors[0])))
        return nearest_by_code(slots, vectors, k)

    def _chunks(self, index: SearchIndex, scope_id: str | None) -> list[Any]:
        """(chunk id, slots, validity, row ids, codes, scope) of the scope's chunks (every
        chunk without a scope), in chunk order: the table's own storage."""
        vec = vec_table(index)
        chunks = connection.ops.quote_name(vec + "_chunks")
        vector_chunks = connection.ops.quote_name(vec + "_vector_chunks00")
        sql = (
            f"SELECT c.chunk_id, c.size, c.validity, c.rowids, v.vectors, c.partition00 "  # noqa: S608
            f"FROM {chunks} AS c JOIN {vector_chunks} AS v ON v.rowid = c.chunk_id"
        )
        with connection.cursor() as cursor:
            if scope_id is None:
                cursor.execute(f"{sql} ORDER BY c.chunk_id")
            else:
                cursor.execute(f"{sql} WHERE c.partition00 = %s ORDER BY c.chunk_id", [scope_id])
            found: list[Any] = cursor.fetchall()
        return found

    def _scope_slots(self, index: SearchIndex, scope_id: str, dimension: int) -> Slots:
        """The scope's chunk slots (:class:`Slots`, vectors of ``dimension`` values): as
        kept since they were read, while the index's token (``vectors.changes``) stands,
        else read now (with a small scope's float vectors) and kept under the token read
        before them. ValueError when a chunk's storage is damaged. An index without a
        token (no record of its objects) is read every time, without its floats."""
        code_bytes = 2 * dimension // 8
        token = changes.token(index)
        key = (connection.settings_dict["NAME"], index.name, scope_id)
        if token is not None:
            kept = _KEPT.get(key, token)
            if kept is not None and kept.columns.nbytes == code_bytes * len(kept.keys):
                return kept
        slots = slots_of(*self._scope_codes(index, scope_id, code_bytes))
        if token is not None:
            if slots.count <= FLOATS_KEPT_ROWS:
                slots = replace(slots, floats=self._scope_floats(index, slots, dimension))
            _KEPT.put(key, token, slots, slots.nbytes)
        return slots

    def _scope_floats(self, index: SearchIndex, slots: Slots, dimension: int) -> Floats:
        """The float vectors, cited ids and versions of every slot holding a vector; the
        damaged noted and left out, as a search leaves them out."""
        stored = self._auxiliary(
            index, "value00, value01, value02", [int(key) for key in slots.keys[slots.valid]]
        )
        rows, matrix, damaged = float_matrix([(key, blob) for key, _, _, blob in stored], dimension)
        if damaged:
            self.damage.note_rows(index, damaged)
        order = np.argsort(rows, kind="stable")
        keys, matrix = rows[order], matrix[order]
        for array in (keys, matrix):
            array.flags.writeable = False
        cited = {int(key): (cited_id, version) for key, cited_id, version, _ in stored}
        return Floats(keys, matrix, cited)

    def _scope_codes(
        self, index: SearchIndex, scope_id: str, code_bytes: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scope's chunk slots: their row keys, which hold a vector, and their codes
        (one row of ``code_bytes`` a slot). ValueError when a chunk's storage is damaged."""
        slots = [
            chunk_slots(int(size), bytes(validity), bytes(rowids), bytes(blob), code_bytes)
            for _, size, validity, rowids, blob, _ in self._chunks(index, scope_id)
        ]
        if not slots:
            empty = np.zeros(0, dtype="<i8")
            return empty, empty.astype(bool), np.zeros((0, code_bytes), dtype=np.uint8)
        keys, valid, stored = (np.concatenate(part) for part in zip(*slots, strict=True))
        return keys, valid, stored

    def damaged(
        self,
        index: SearchIndex,
        *,
        dimension: int,
        scope_id: str | None = None,
        keys: Sequence[int] | None = None,
    ) -> Damage:
        """Float vectors that are not ``dimension`` finite float32 values, not all zero;
        without ``keys``, also codes that disagree with their vector (each recomputed from
        it, chunk by chunk) and chunks whose storage is not the size of their slots."""
        found = Damage()
        if keys is not None:
            for key, blob in self._auxiliary(index, "value02", list(keys)):
                problem = float_problem(blob, dimension)
                if problem is not None:
                    found.rows[int(key)] = problem
            return found
        code_bytes = 2 * dimension // 8
        for chunk_id, size, validity, rowids, blob, _ in self._chunks(index, scope_id):
            try:
                slots = chunk_slots(
                    int(size), bytes(validity), bytes(rowids), bytes(blob), code_bytes
                )
            except ValueError as error:
                found.storage.append(f"vector chunk {chunk_id} is damaged: {error}")
                continue
            chunk_keys, valid, chunk_codes = slots
            live = [int(key) for key in chunk_keys[valid]]
            floats = self._auxiliary(index, "value02", live)
            for key in set(live) - {int(key) for key, _ in floats}:
                found.rows[key] = "it has no float vector"
            good, matrix, bad = float_matrix(floats, dimension)
            found.rows.update(bad)
            stored_codes = dict(zip(live, chunk_codes[valid], strict=True))
            for key, recomputed in zip(good, codes(matrix), strict=True):
                if not np.array_equal(stored_codes[int(key)], recomputed):
                    found.rows[int(key)] = "its 2-bit code disagrees with its float vector"
        return found

    def vectors(
        self, index: SearchIndex, row_keys: Sequence[int]
    ) -> list[tuple[int, str, str, Any]]:
        found = []
        for key, cited, version, blob in self._auxiliary(
            index, "value00, value01, value02", list(row_keys)
        ):
            if not isinstance(blob, bytes) or not blob or len(blob) % 4:
                continue
            vector = np.frombuffer(blob, dtype="<f4")
            if float_problem(blob, len(vector)) is None:
                found.append((int(key), str(cited), str(version), vector))
        return found

    def stored(self, index: SearchIndex, scope_id: str | None) -> dict[int, StoredVector]:
        """Every stored vector's row key, cited id and version (of ``scope_id`` alone when
        given), read from the plain tables under the ``vec0`` table: a ``SELECT`` on the
        virtual table itself fetches its auxiliary columns row by row (1.8 s at 100,000
        rows, where these reads take 0.5 s)."""
        vec = vec_table(index)
        auxiliary = connection.ops.quote_name(vec + "_auxiliary")
        sql = f"SELECT rowid, value00, value01 FROM {auxiliary}"  # noqa: S608
        with connection.cursor() as cursor:
            if scope_id is None:
                cursor.execute(sql)
                found = cursor.fetchall()
            else:
                keys = self._scope_keys(index, scope_id)
                found = []
                for start in range(0, len(keys), _BATCH):
                    batch = keys[start : start + _BATCH]
                    marks = ", ".join(["%s"] * len(batch))
                    cursor.execute(f"{sql} WHERE rowid IN ({marks})", batch)
                    found.extend(cursor.fetchall())
        return {int(key): StoredVector(cited, version) for key, cited, version in found}

    def stored_keys(self, index: SearchIndex, *, after: int | None, count: int) -> list[int]:
        auxiliary = connection.ops.quote_name(vec_table(index) + "_auxiliary")
        past = "" if after is None else f"WHERE rowid > {int(after)} "
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT rowid FROM {auxiliary} {past}ORDER BY rowid LIMIT {int(count)}"  # noqa: S608 - names and integers only
            )
            return [int(key) for (key,) in cursor.fetchall()]

    def stored_of(self, index: SearchIndex, row_keys: Sequence[int]) -> dict[int, StoredVector]:
        return {
            int(key): StoredVector(cited, version)
            for key, cited, version in self._auxiliary(index, "value00, value01", row_keys)
        }

    def _scope_keys(self, index: SearchIndex, scope_id: str) -> list[int]:
        """The row keys of the scope's vectors: its chunks' valid slots."""
        chunks = connection.ops.quote_name(vec_table(index) + "_chunks")
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT validity, rowids FROM {chunks} WHERE partition00 = %s",  # noqa: S608
                [scope_id],
            )
            stored = cursor.fetchall()
        keys = np.frombuffer(b"".join(bytes(row[1]) for row in stored), dtype="<i8")
        valid = valid_slots(b"".join(bytes(row[0]) for row in stored), len(keys))
        return [int(key) for key in keys[valid]]
