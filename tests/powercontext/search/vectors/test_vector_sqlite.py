"""SQLite's vector table (``powercontext.search.vector_sqlite``): the scan of 2-bit codes
that finds the candidates, the exact cosine that orders them, and a table of the layout an
older release created (float vectors only), which is detected and rebuilt."""

from dataclasses import dataclass

import numpy as np
import pytest
from django.db import connection

from memory import services as memory_services
from memory.search_index import MEMORY_INDEX
from powercontext import embedding
from powercontext.models import VectorIndexState
from powercontext.search import vector_sqlite, vector_sqlite_slots, vectors
from powercontext.search.vectors import VectorRow
from powercontext.snapshot import read_snapshot
from tests.conftest import sqlite_only

pytestmark = [
    pytest.mark.django_db(transaction=True),
    sqlite_only("sqlite-vec's vec0 table and its chunk storage"),
]

DIMENSION = 384
SCOPE = "scope-knn"


@dataclass(frozen=True)
class Index:
    """As much of a declared index as the engine reads: its name."""

    name: str


@pytest.fixture
def table():
    index = Index("knn_test")
    engine = vector_sqlite.SqliteVectors()
    forward, reverse = engine.ddl(index, DIMENSION)
    with connection.cursor() as cursor:
        for statement in [*reverse, *forward]:
            cursor.execute(statement)
    yield index
    with connection.cursor() as cursor:
        for statement in reverse:
            cursor.execute(statement)


def _unit(matrix):
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


def _store(index, vectors_by_key, scope_id=SCOPE):
    vector_sqlite.SqliteVectors().upsert(
        index,
        [
            (VectorRow(key, scope_id, f"cited-{key}", 1, ""), vector)
            for key, vector in vectors_by_key.items()
        ],
    )


def test_the_code_scan_finds_what_sqlite_vecs_own_hamming_knn_finds(table):
    """The scan reads vec0's chunk storage itself: same candidates as vec0's KNN over the
    same column, across several chunks, with deleted rows and another scope around."""
    rng = np.random.default_rng(16)
    matrix = _unit(rng.standard_normal((2600, DIMENSION)))
    _store(table, {key + 1: matrix[key] for key in range(2300)})
    _store(table, {key + 1: matrix[key] for key in range(2300, 2600)}, scope_id="other")
    vector_sqlite.SqliteVectors().delete(table, list(range(1, 2300, 7)))
    engine = vector_sqlite.SqliteVectors()
    for query in _unit(rng.standard_normal((5, DIMENSION))):
        ours = engine.code_nearest(table, scope_id=SCOPE, vectors=[query], k=300)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT rowid, distance FROM knn_test_vec WHERE embedding_code MATCH "
                "vec_bit(%s) AND k = 300 AND scope_id = %s",
                [vector_sqlite_slots.code(query).tobytes(), SCOPE],
            )
            theirs = dict(cursor.fetchall())
        distance = {key: _levels_apart(matrix[key - 1], query) for key in ours}
        assert [distance[key] for key in ours] == sorted(theirs.values())
        # Ties at the 300th distance may be cut differently; everything nearer is the same.
        nearer = max(theirs.values())
        assert {key for key in ours if distance[key] < nearer} == {
            key for key, found in theirs.items() if found < nearer
        }
        assert all(key % 7 != 1 for key in ours)  # no deleted row


def test_the_stored_vectors_are_read_as_vec0_itself_lists_them(table):
    """``stored`` reads the plain tables under ``vec0`` (its auxiliary columns and its
    chunks' rowids), not the virtual table: the same rows, cited ids and versions as vec0
    lists, for the whole table and for each scope, across chunks, after deletions and
    replacements."""
    rng = np.random.default_rng(28)
    matrix = _unit(rng.standard_normal((2500, DIMENSION)))
    _store(table, {key + 1: matrix[key] for key in range(2200)})
    _store(table, {key + 1: matrix[key] for key in range(2200, 2500)}, scope_id="other")
    engine = vector_sqlite.SqliteVectors()
    engine.delete(table, list(range(1, 2500, 5)))
    engine.upsert(table, [(VectorRow(3, SCOPE, "cited-3", 2, ""), matrix[2])])

    def listed(scope_id=None):
        sql = "SELECT rowid, cited_id, version FROM knn_test_vec"
        with connection.cursor() as cursor:
            if scope_id is None:
                cursor.execute(sql)
            else:
                cursor.execute(sql + " WHERE scope_id = %s", [scope_id])
            return {key: (cited, version) for key, cited, version in cursor.fetchall()}

    def read(scope_id):
        found = engine.stored(table, scope_id)
        return {key: (stored.cited_id, stored.version) for key, stored in found.items()}

    assert read(None) == listed()
    assert read(SCOPE) == listed(SCOPE)
    assert read("other") == listed("other")
    assert read("nobody") == {}
    assert len(read(SCOPE)) == 2200 - 440
    assert read(SCOPE)[3] == ("cited-3", "2")


def _levels_apart(vector, other):
    """The codes' Hamming distance, from its definition: the sum of level differences."""
    step = vector_sqlite_slots.LEVEL / np.sqrt(DIMENSION)

    def levels(values):
        return (values > -step).astype(int) + (values > step).astype(int)

    return int(np.abs(levels(vector) - levels(other)).sum())


def test_the_answer_is_in_exact_cosine_order_not_code_order(table):
    """Crafted so the codes mislead: ``same_levels`` has the query's levels but one, yet
    points elsewhere; ``close`` is nearer the query with 100 small components of the other
    sign. Cosine must win."""
    query = _unit(np.r_[1.0, np.full(DIMENSION - 1, 0.05)])
    same_levels = _unit(np.r_[0.2, np.full(DIMENSION - 1, 1.0)])
    close = _unit(np.r_[1.0, np.full(DIMENSION - 101, 0.05), np.full(100, -0.05)])
    nearest = _unit(np.r_[1.0, np.full(DIMENSION - 1, 0.1)])
    rows = {1: same_levels, 2: close, 3: nearest}
    _store(table, rows)
    engine = vector_sqlite.SqliteVectors()
    assert engine.code_nearest(table, scope_id=SCOPE, vectors=[query], k=3) == [3, 1, 2]

    found = engine.nearest(table, scope_id=SCOPE, vectors=[query], k=3)

    assert [key for key, *_ in found] == [3, 2, 1]
    for key, cited, version, distance in found:
        assert (cited, version) == (f"cited-{key}", "1")
        assert distance == pytest.approx(1.0 - float(rows[key] @ query), abs=1e-5)
    two = engine.nearest(table, scope_id=SCOPE, vectors=[query], k=2)
    assert [key for key, *_ in two] == [3, 2]


def test_several_vectors_are_searched_in_one_pass_each_row_by_its_nearest(table):
    """A prompt's segments are searched together: a row's code distance is to the
    segment code nearest it, and the answer is the exact top k by the cosine to the
    nearest segment, as one search per segment merged would give."""
    rng = np.random.default_rng(28)
    matrix = _unit(rng.standard_normal((600, DIMENSION)))
    _store(table, {key + 1: matrix[key] for key in range(600)})
    engine = vector_sqlite.SqliteVectors()
    queries = _unit(rng.standard_normal((3, DIMENSION)))

    codes = engine.code_nearest(table, scope_id=SCOPE, vectors=queries, k=600)
    found = engine.nearest(table, scope_id=SCOPE, vectors=queries, k=40)

    apart = {
        key: min(_levels_apart(matrix[key - 1], query) for query in queries)
        for key in range(1, 601)
    }
    assert [apart[key] for key in codes] == sorted(apart.values())
    # 600 rows are fewer than the candidates: the search is exact.
    nearest = 1.0 - (matrix @ queries.T).max(axis=1)
    assert [key for key, *_ in found] == (np.argsort(nearest, kind="stable")[:40] + 1).tolist()
    for key, _, _, distance in found:
        assert distance == pytest.approx(nearest[key - 1], abs=1e-5)
    # Each query alone finds its own nearest rows, and all of them are in the merged answer
    # when they are nearer than its last.
    for query in queries:
        alone = engine.nearest(table, scope_id=SCOPE, vectors=[query], k=40)
        assert {key for key, *_, distance in alone if distance < found[-1][3]} <= {
            key for key, *_ in found
        }


def test_a_rows_distance_does_not_depend_on_the_other_candidates(table):
    """Bit for bit: a search repeated after rows around it changed (a rebuild, other
    writes) scores the same row and query the same, or a rebuilt index would not answer
    as before."""
    rng = np.random.default_rng(7)
    matrix = _unit(rng.standard_normal((600, DIMENSION)))
    _store(table, {key + 1: matrix[key] for key in range(600)})
    engine = vector_sqlite.SqliteVectors()
    queries = list(_unit(rng.standard_normal((3, DIMENSION))))
    before = {
        key: distance
        for key, *_, distance in engine.nearest(table, scope_id=SCOPE, vectors=queries, k=600)
    }
    engine.delete(table, [key for key in range(1, 601) if key % 3])

    after = engine.nearest(table, scope_id=SCOPE, vectors=queries, k=600)

    assert len(after) == 200
    assert all(distance == before[key] for key, *_, distance in after)


def test_codes_are_compared_only_when_the_scope_has_more_rows_than_the_candidates(
    table, monkeypatch
):
    """A scope the candidates cover (at most COARSE_MIN rows for a small k) is rescored
    whole, exactly, without the code pass; one row more and the pass picks them."""
    rng = np.random.default_rng(5)
    matrix = _unit(rng.standard_normal((vector_sqlite.COARSE_MIN + 1, DIMENSION)))
    _store(table, {key + 1: matrix[key] for key in range(vector_sqlite.COARSE_MIN)})
    engine = vector_sqlite.SqliteVectors()
    query = _unit(rng.standard_normal(DIMENSION))
    passes = []
    code_nearest = vector_sqlite.nearest_by_code

    def counted(*args):
        passes.append(args[-1])
        return code_nearest(*args)

    monkeypatch.setattr(vector_sqlite, "nearest_by_code", counted)

    found = engine.nearest(table, scope_id=SCOPE, vectors=[query], k=5)

    assert passes == []
    exact = 1.0 - matrix[: vector_sqlite.COARSE_MIN] @ query
    assert [key for key, *_ in found] == (np.argsort(exact, kind="stable")[:5] + 1).tolist()
    _store(table, {vector_sqlite.COARSE_MIN + 1: matrix[-1]})
    engine.nearest(table, scope_id=SCOPE, vectors=[query], k=5)
    assert passes == [vector_sqlite.COARSE_MIN]


def test_a_scope_with_no_vectors_and_k_zero_answer_nothing(table):
    engine = vector_sqlite.SqliteVectors()
    query = _unit(np.ones(DIMENSION))
    assert engine.nearest(table, scope_id="empty", vectors=[query], k=5) == []
    _store(table, {1: query})
    assert engine.nearest(table, scope_id=SCOPE, vectors=[query], k=0) == []
    vector_sqlite.SqliteVectors().delete(table, [1])
    assert engine.nearest(table, scope_id=SCOPE, vectors=[query], k=5) == []


# The vector table as the release before the sign-bit layout created it.
OLD_LAYOUT = (
    "CREATE VIRTUAL TABLE memory_activeentry_vec USING vec0(scope_id text partition key, "
    "embedding float[384] distance_metric=cosine, +cited_id text, +version text)"
)


def test_a_table_of_the_old_layout_is_reported_never_written_and_rebuilt():
    assert vectors.vec_table(MEMORY_INDEX) == "memory_activeentry_vec"
    first = memory_services.memory_remember(
        scope_id=SCOPE, kind="note", text="The PostgreSQL pool runs out of connections."
    ).entry.citation.entry_id
    # What an upgraded database holds: the old table, recorded before layouts were.
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE memory_activeentry_vec")
        cursor.execute(OLD_LAYOUT)
    VectorIndexState.objects.filter(index=MEMORY_INDEX.name).update(layout="")

    current = vectors.status(MEMORY_INDEX)
    assert current.state is vectors.State.LAYOUT_CHANGED
    assert "older layout" in current.detail
    assert "rebuild_index" in current.detail
    query = embedding.embedder().embed_query("postgres connections exhausted")
    with read_snapshot(), pytest.raises(vectors.VectorsNotReady):
        vectors.vector_match(MEMORY_INDEX, scope_id=SCOPE, query_vectors=[query], limit=5)
    # A write goes through (its vector is not written into the old table).
    second = memory_services.memory_remember(
        scope_id=SCOPE, kind="note", text="Invoices are emailed at the end of the month."
    ).entry.citation.entry_id
    assert any("older layout" in str(f) for f in vectors.check(MEMORY_INDEX).findings)

    report = vectors.rebuild(MEMORY_INDEX)

    assert "recreated" in report.index
    assert report.inserted == 2
    assert vectors.status(MEMORY_INDEX).ready
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'memory_activeentry_vec'")
        assert "embedding_code bit[768]" in cursor.fetchone()[0]
    with read_snapshot():
        hits = vectors.vector_match(MEMORY_INDEX, scope_id=SCOPE, query_vectors=[query], limit=5)
    assert hits[0].cited_id == first
    assert {hit.cited_id for hit in hits} == {first, second}
