"""Damaged stored vectors (issue 27, item 5): what each engine finds
(``VectorEngine.damaged``), what a search does with them (the damaged rows left out, or
the scope searched lexically when the engine cannot compute with them), what readiness
says, and that ``rebuild_index`` re-embeds them. On the engine the suite runs on; the
damage is written straight into the vector table, as a disk or another tool would."""

import logging

import numpy as np
import pytest
from django.db import connection

from memory import services as memory_services
from memory.search_index import MEMORY_INDEX
from powercontext import embedding as embeddings
from powercontext import maintenance
from powercontext.migration_operations import engine_of
from powercontext.search import vectors
from powercontext.snapshot import read_snapshot
from server.health import readiness

pytestmark = pytest.mark.django_db(transaction=True)

SCOPE = "scope-damage"
TEXTS = [
    "The PostgreSQL connection pool runs out of connections under load.",
    "Invoices are emailed to every customer at the end of the month.",
    "The CSS grid collapses into one column on narrow phone screens.",
    "Deploys go out through the release train every Tuesday.",
    "Redis keeps the sessions; their keys expire after a day.",
]
QUERY = "postgres database connections exhausted"
DIMENSION = 384

sqlite = pytest.mark.skipif(engine_of(connection) != "sqlite", reason="SQLite's vec0 storage")
oceanbase = pytest.mark.skipif(
    engine_of(connection) != "oceanbase", reason="OceanBase's VECTOR arithmetic"
)


@pytest.fixture(autouse=True)
def _nothing_noted():
    vectors.DAMAGE.forget()
    yield
    vectors.DAMAGE.forget()


POSTGRES: list[str] = []  # the entry id of TEXTS[0], once remembered


@pytest.fixture
def keys():
    """Row key of each of TEXTS, remembered in SCOPE with their vectors."""
    cited = [
        memory_services.memory_remember(scope_id=SCOPE, kind="note", text=text).entry.citation
        for text in TEXTS
    ]
    POSTGRES[:] = [cited[0].entry_id]
    stored = vectors.vector_engine().stored(MEMORY_INDEX, SCOPE)
    by_cited = {vector.cited_id: key for key, vector in stored.items()}
    return [by_cited[citation.entry_id] for citation in cited]


def _postgres_first():
    return _search()[0].cited_id == POSTGRES[0]


def _set_float(key, blob):
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_activeentry_vec_auxiliary SET value02 = %s WHERE rowid = %s",
            [blob, key],
        )


def _set_code(key, code):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT chunk_id, chunk_offset FROM memory_activeentry_vec_rowids WHERE rowid = %s",
            [key],
        )
        chunk, offset = cursor.fetchone()
        table = "memory_activeentry_vec_vector_chunks00"
        cursor.execute(f"SELECT vectors FROM {table} WHERE rowid = %s", [chunk])  # noqa: S608
        (codes,) = cursor.fetchone()
        size = len(code)
        codes = bytes(codes[: offset * size]) + code + bytes(codes[(offset + 1) * size :])
        cursor.execute(f"UPDATE {table} SET vectors = %s WHERE rowid = %s", [codes, chunk])  # noqa: S608


def _set_vector(key, values):
    literal = "[" + ",".join(values) + "]"
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_activeentry_vec SET embedding = %s WHERE row_key = %s", [literal, key]
        )


def _search(query=QUERY, limit=5):
    vector = embeddings.embedder().embed_query(query)
    with read_snapshot():
        return vectors.vector_match(
            MEMORY_INDEX, scope_id=SCOPE, query_vectors=[vector], limit=limit
        )


def _vector_findings():
    name = f"{MEMORY_INDEX.name}.vectors"
    (result,) = [r for r in maintenance.check(scope_id=SCOPE) if r.check == name]
    return [str(finding) for finding in result.findings]


def _detail():
    return readiness()["checks"]["vector_index"]["detail"]


def _damage_every_kind(keys):
    """One row per kind of damage the engine can hold; {row key: words of its finding}."""
    if engine_of(connection) == "sqlite":
        good = np.full(DIMENSION, 1 / np.sqrt(DIMENSION), dtype=np.float32)
        nan = good.copy()
        nan[7] = np.nan
        _set_float(keys[0], good.tobytes()[:100])
        _set_float(keys[1], nan.tobytes())
        _set_float(keys[2], np.zeros(DIMENSION, dtype=np.float32).tobytes())
        _set_code(keys[3], bytes(2 * DIMENSION // 8))
        return {
            keys[0]: "is 100 bytes, not 1536",
            keys[1]: "not finite",
            keys[2]: "all zeros",
            keys[3]: "code disagrees",
        }
    unit = f"{1 / np.sqrt(DIMENSION):.6f}"
    _set_vector(keys[0], ["nan"] + [unit] * (DIMENSION - 1))
    _set_vector(keys[1], ["inf"] + [unit] * (DIMENSION - 1))
    _set_vector(keys[2], ["0"] * DIMENSION)
    _set_vector(keys[3], ["1e30"] + [unit] * (DIMENSION - 1))
    return {
        keys[0]: "not finite",
        keys[1]: "not finite",
        keys[2]: "all zeros",
        keys[3]: "overflow",
    }


def test_every_kind_of_damage_is_found_and_rebuild_reembeds_it(keys):
    expected = _damage_every_kind(keys)
    found = vectors.vector_engine().damaged(MEMORY_INDEX, dimension=DIMENSION)
    assert found.storage == []
    assert set(found.rows) == set(expected)
    for key, words in expected.items():
        assert words in found.rows[key], (key, found.rows[key])
    # By key alone (readiness' look): what a float vector shows by itself.
    by_key = vectors.vector_engine().damaged(MEMORY_INDEX, dimension=DIMENSION, keys=keys)
    assert set(by_key.rows) <= set(expected)
    assert keys[4] not in by_key.rows

    findings = _vector_findings()
    assert len([f for f in findings if "vector is damaged" in f]) == len(expected), findings

    report = vectors.rebuild(MEMORY_INDEX, damaged=True)
    assert report.inserted == len(expected)
    assert f"({len(expected)} of them damaged)" in report.index
    assert vectors.vector_engine().damaged(MEMORY_INDEX, dimension=DIMENSION).rows == {}
    assert _vector_findings() == []
    assert _postgres_first()


def test_the_catch_up_rebuild_does_not_read_every_vector(keys):
    """Only rebuild_index looks for damage (a read of every vector); the rebuild that
    serve runs at each start does not."""
    _damage_every_kind(keys)
    assert vectors.rebuild(MEMORY_INDEX).inserted == 0
    assert vectors.rebuild(MEMORY_INDEX, damaged=True).inserted == 4


def test_a_search_leaves_a_damaged_row_out_says_so_once_and_readiness_names_it(keys, caplog):
    if engine_of(connection) == "sqlite":
        _set_float(keys[0], b"\x00" * 100)
    else:
        _set_vector(keys[0], ["0"] * DIMENSION)
    caplog.set_level(logging.WARNING, logger="powercontext.search.vectors")
    for _ in range(3):
        hits = _search(limit=5)
        assert len(hits) == 4
        assert POSTGRES[0] not in [hit.cited_id for hit in hits]
    warnings = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert f"row {keys[0]}" in warnings[0]
    assert readiness()["status"] == "ready"
    assert "memory_activeentry: 1 damaged vector(s) left out of search" in _detail()

    maintenance.rebuild(scope_id=SCOPE)
    assert "damaged" not in _detail()
    assert _postgres_first()


@oceanbase
def test_a_vector_holding_an_infinity_is_left_out_not_ranked_first(keys):
    # seekdb answers such a vector's distance as 0: it would be every query's best hit.
    unit = f"{1 / np.sqrt(DIMENSION):.6f}"
    _set_vector(keys[2], ["inf"] + [unit] * (DIMENSION - 1))
    hits = _search(limit=5)
    assert hits[0].cited_id == POSTGRES[0]
    assert len(hits) == 4
    assert "memory_activeentry: 1 damaged vector(s) left out of search" in _detail()


@oceanbase
def test_a_scope_whose_vectors_overflow_the_engine_is_searched_lexically():
    """At 3 dimensions seekdb fails the whole scan for a vector holding 1e30 (at 384 it
    answers distance 1): that scope is searched lexically, logged once, until a search
    of it succeeds again."""
    from dataclasses import dataclass

    from powercontext.search.vector_oceanbase import OceanBaseVectors

    @dataclass(frozen=True)
    class Index:
        name: str

    index, engine = Index("overflow_test"), OceanBaseVectors()
    create, drop = engine.ddl(index, 3)
    with connection.cursor() as cursor:
        for statement in [*drop, *create]:
            cursor.execute(statement)
    try:
        rows = [
            (vectors.VectorRow(key, SCOPE, f"c{key}", 1, ""), [1.0, 0.0, 0.0]) for key in (1, 2)
        ]
        engine.upsert(index, rows)
        _set_raw(index, 2, "[1e30,0,0]")
        with pytest.raises(vectors.VectorsDamaged):
            engine.nearest(index, scope_id=SCOPE, vectors=[[1.0, 0.0, 0.0]], k=2)
        assert vectors.DAMAGE.noted(index) == (0, 1)
        found = engine.damaged(index, dimension=3)
        assert found.rows == {2: "its vector's values overflow the engine's arithmetic"}
        _set_raw(index, 2, "[0,1,0]")
        assert [
            key for key, *_ in engine.nearest(index, scope_id=SCOPE, vectors=[[1.0, 0.0, 0.0]], k=2)
        ] == [1, 2]
        assert vectors.DAMAGE.noted(index) == (0, 0)
    finally:
        with connection.cursor() as cursor:
            for statement in drop:
                cursor.execute(statement)


def _set_raw(index, key, literal):
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {vectors.vec_table(index)} SET embedding = %s WHERE row_key = %s",  # noqa: S608
            [literal, key],
        )


@sqlite
def test_a_damaged_chunk_has_its_scope_searched_lexically_and_the_table_recreated(keys):
    with connection.cursor() as cursor:
        cursor.execute("UPDATE memory_activeentry_vec_chunks SET rowids = substr(rowids, 1, 16)")
    with pytest.raises(vectors.VectorsDamaged):
        _search()
    assert "1 scope(s) searched lexically" in _detail()
    found = vectors.vector_engine().damaged(MEMORY_INDEX, dimension=DIMENSION)
    assert found.storage
    assert "row id" in found.storage[0]
    assert any("rebuild_index recreates it" in f for f in _vector_findings())

    report = vectors.rebuild(MEMORY_INDEX, damaged=True)
    assert report.index.startswith("recreated (vector chunk")
    assert report.inserted == len(TEXTS)
    assert _vector_findings() == []
    assert _postgres_first()
    assert "damaged" not in _detail()
