"""SQLite keeps each scope's codes between searches, and a small scope's float vectors
(``vector_sqlite``, ``vectors.kept``), under the index's token (``vectors.changes``): a
search answers from what it kept only while no change to the vectors has been committed
since, by any connection, never from a change that was rolled back, and exactly as it
answers from the database."""

import threading
from dataclasses import dataclass

import numpy as np
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from powercontext.models import VectorIndexState
from powercontext.search import vector_sqlite
from powercontext.search.vectors import VectorRow, changes
from powercontext.search.vectors.kept import KeptScopes
from tests.conftest import sqlite_only

DIMENSION = 384
SCOPE = "scope-kept"
# More rows than the candidates of a search for k=5 (COARSE_MIN), so the codes are compared.
ROWS = vector_sqlite.COARSE_MIN + 200


@dataclass(frozen=True)
class Index:
    name: str


def _unit(matrix):
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


@pytest.fixture
def table():
    """A vector table with a record (so a token), filled with random rows."""
    index = Index("kept_test")
    engine = vector_sqlite.SqliteVectors()
    forward, reverse = engine.ddl(index, DIMENSION)
    with connection.cursor() as cursor:
        for statement in [*reverse, *forward]:
            cursor.execute(statement)
    VectorIndexState.objects.create(
        index=index.name, model_identity="test", dimension=DIMENSION, layout=engine.layout
    )
    matrix = _unit(np.random.default_rng(3).standard_normal((ROWS, DIMENSION)))
    _store(index, {key + 1: matrix[key] for key in range(ROWS)})
    yield index
    with connection.cursor() as cursor:
        for statement in reverse:
            cursor.execute(statement)


def _store(index, vectors_by_key):
    vector_sqlite.SqliteVectors().upsert(
        index,
        [
            (VectorRow(key, SCOPE, f"cited-{key}", 1, ""), vector)
            for key, vector in vectors_by_key.items()
        ],
    )


def _nearest(index, query, k=5):
    found = vector_sqlite.SqliteVectors().nearest(index, scope_id=SCOPE, vectors=[query], k=k)
    return [key for key, *_ in found]


def _chunk_reads(index, query):
    """How many statements a search reads the scope's chunks with."""
    with CaptureQueriesContext(connection) as captured:
        _nearest(index, query)
    return sum(
        1 for query in captured.captured_queries if f"{index.name}_vec_chunks" in query["sql"]
    )


QUERY = _unit(np.random.default_rng(9).standard_normal(DIMENSION))


@pytest.mark.django_db(transaction=True)
@sqlite_only("SQLite's kept codes")
def test_a_scope_is_read_once_until_its_vectors_change(table):
    assert _chunk_reads(table, QUERY) == 1
    assert _chunk_reads(table, QUERY) == 0
    _store(table, {ROWS + 1: QUERY})
    assert _chunk_reads(table, QUERY) == 1
    assert _nearest(table, QUERY)[0] == ROWS + 1
    vector_sqlite.SqliteVectors().delete(table, [ROWS + 1])
    assert ROWS + 1 not in _nearest(table, QUERY)


@pytest.mark.django_db(transaction=True)
@sqlite_only("SQLite's kept codes")
def test_a_change_committed_by_another_connection_is_searched(table):
    """The token is read from the database: another connection's (another process's)
    write is seen by the next search, though this one kept the scope before it."""
    before = _nearest(table, QUERY)

    def write():
        try:
            _store(table, {ROWS + 1: QUERY})
        finally:
            connection.close()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join()

    after = _nearest(table, QUERY)
    assert after[0] == ROWS + 1
    assert after[1:] == before[:-1]


@pytest.mark.django_db(transaction=True)
@sqlite_only("SQLite's kept codes")
def test_a_change_rolled_back_is_never_searched_again(table):
    """Searched inside the transaction that wrote it, a row is kept with the rest; once
    rolled back, no later token names it (a counter would: the next write would count
    to the same number)."""
    committed = _nearest(table, QUERY)

    def write_search_and_fail():
        with transaction.atomic():
            _store(table, {ROWS + 1: QUERY})
            assert _nearest(table, QUERY)[0] == ROWS + 1
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        write_search_and_fail()
    # The next change: searched from codes kept with the rolled-back row, this row (in
    # none of them) would be missed.
    _store(table, {ROWS + 2: QUERY})

    assert _nearest(table, QUERY) == [ROWS + 2, *committed[:-1]]


@pytest.mark.django_db(transaction=True)
@sqlite_only("SQLite's kept codes")
def test_objects_created_again_are_not_answered_from_the_old_ones(table):
    """Recreating the index's objects (rebuild_index) records a fresh token: the empty
    table is read, not the full one a search kept."""
    from powercontext.search.vectors import record

    assert _nearest(table, QUERY)

    class Model:
        identity = "test"
        dimension = DIMENSION

    record.create(table, Model(), replace=True)

    assert _chunk_reads(table, QUERY) == 1
    assert _nearest(table, QUERY) == []


@pytest.mark.django_db(transaction=True)
@sqlite_only("SQLite's kept codes")
def test_an_index_without_a_record_is_read_every_time(table):
    VectorIndexState.objects.filter(index=table.name).delete()
    assert changes.token(table) is None
    assert _chunk_reads(table, QUERY) == 1
    assert _chunk_reads(table, QUERY) == 1


def test_the_least_recently_used_go_past_the_budget():
    kept = KeptScopes[str](budget=10)
    kept.put("a", "t", "A", 4)
    kept.put("b", "t", "B", 4)
    assert kept.get("a", "t") == "A"  # now b is the least recently used
    kept.put("c", "t", "C", 4)
    assert kept.get("b", "t") is None
    assert (kept.get("a", "t"), kept.get("c", "t"), kept.size) == ("A", "C", 8)
    kept.put("d", "t", "D", 11)  # larger than the budget: not kept, nothing dropped
    assert (kept.get("d", "t"), kept.size) == (None, 8)


def test_what_was_read_under_another_token_is_dropped():
    kept = KeptScopes[str](budget=10)
    kept.put("a", "old", "A", 4)
    assert kept.get("a", "new") is None
    assert kept.get("a", "old") is None
    assert kept.size == 0


@pytest.mark.django_db(transaction=True)
@sqlite_only("SQLite's kept codes")
@pytest.mark.parametrize("rows", [300, ROWS, vector_sqlite.FLOATS_KEPT_ROWS + 100])
def test_kept_vectors_answer_bit_for_bit_what_the_stored_ones_do(table, rows):
    """A small scope keeps its float vectors, cited ids and versions too; a large one
    reads its candidates'. Either way the answer is the one read from the database (an
    index without a token is), to the last bit of each distance, and a damaged vector
    is left out of both."""
    rng = np.random.default_rng(rows)
    matrix = _unit(rng.standard_normal((rows, DIMENSION)))
    _store(table, {key + 1: matrix[key] for key in range(rows)})  # replaces the fixture's
    vector_sqlite.SqliteVectors().delete(table, list(range(rows + 1, ROWS + 1)))
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE kept_test_vec_auxiliary SET value02 = %s WHERE rowid = 7",
            [np.full(DIMENSION, np.nan, dtype=np.float32).tobytes()],
        )
    queries = list(_unit(rng.standard_normal((4, DIMENSION))))
    engine = vector_sqlite.SqliteVectors()

    def search(k):
        return engine.nearest(table, scope_id=SCOPE, vectors=queries, k=k)

    kept = [search(k) for k in (5, 66)]
    slots = vector_sqlite._KEPT.get(
        (connection.settings_dict["NAME"], table.name, SCOPE), changes.token(table)
    )
    assert (slots.floats is not None) == (rows <= vector_sqlite.FLOATS_KEPT_ROWS)
    VectorIndexState.objects.filter(index=table.name).delete()
    stored = [search(k) for k in (5, 66)]

    assert kept == stored
    assert [len(found) for found in kept] == [5, 66]
    assert all(key != 7 for found in kept for key, *_ in found)


@pytest.mark.django_db(transaction=True)
@sqlite_only("SQLite's kept codes")
def test_searches_beside_a_writer_see_every_change_committed_before_they_began(table):
    """Three threads search while a fourth writes vectors one at a time, each the query
    itself (distance 0, so the nearest, ties by row key). A search that began after the
    n-th write was committed finds the first min(n, 5) written rows: none answers from
    codes kept before a change it should see, however the threads interleave."""
    writes = 30
    committed = 0
    done = threading.Event()
    stale: list[tuple[int, list[int]]] = []
    errors: list[BaseException] = []

    def write():
        nonlocal committed
        try:
            for number in range(1, writes + 1):
                _store(table, {ROWS + number: QUERY})
                committed = number
        except BaseException as error:  # reported by the test, not lost in the thread
            errors.append(error)
        finally:
            done.set()
            connection.close()

    def search():
        try:
            while True:
                finished = done.is_set()
                seen = committed
                found = _nearest(table, QUERY, k=5)
                expected = list(range(ROWS + 1, ROWS + 1 + min(seen, 5)))
                if found[: len(expected)] != expected:
                    stale.append((seen, found))
                if finished:
                    return
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=search) for _ in range(3)]
    threads.append(threading.Thread(target=write))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)
    assert not stale, stale[:3]
    assert _nearest(table, QUERY, k=5) == list(range(ROWS + 1, ROWS + 6))


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_recorded_index_a_token():
    from django.db.migrations.executor import MigrationExecutor

    before = [("powercontext", "0005_source_agent_columns")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps.get_model(
            "powercontext", "VectorIndexState"
        )
        old.objects.create(index="recorded_before", model_identity="m", dimension=384)
        executor = MigrationExecutor(connection)
        executor.migrate([("powercontext", "0006_vector_index_state_vectors_token")])
        assert len(changes.token(Index("recorded_before")) or "") == 32
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
