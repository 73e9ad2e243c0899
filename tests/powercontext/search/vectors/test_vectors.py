"""The vector channel's contract (``powercontext.search.vectors``), for every declared
index that has one (Memory's active entries, approved Experience heads), on the engine
the suite runs on (SQLite; ``POWERCONTEXT_TEST_DATABASE=oceanbase`` for seekdb).

Real model, real vector tables: ``transaction=True`` because OceanBase commits DDL, and
the vector table is created outside any transaction there.
"""

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection

from experience import services as experience_services
from experience.search_index import EXPERIENCE_INDEX, proposal_document
from experience.values import ArtifactRef, Proposal
from memory import services as memory_services
from memory.search_index import MEMORY_INDEX
from memory.values import Citation
from powercontext import embedding, maintenance
from powercontext.embedding import model as embedding_model
from powercontext.migration_operations import engine_of
from powercontext.models import ArtifactHead, VectorIndexState
from powercontext.search import vectors
from powercontext.search.indexes import SearchIndex
from powercontext.search.vectors import rebuilding as vector_rebuilding
from powercontext.search.vectors import record as vector_record
from powercontext.search.vectors import rows as vector_rows
from powercontext.snapshot import read_snapshot
from server.health import readiness
from tests.experience.conftest import SOURCE, capture_source

pytestmark = pytest.mark.django_db(transaction=True)

SCOPE = "scope-vectors"
POSTGRES = "The PostgreSQL connection pool runs out of connections under load."
INVOICES = "Invoices are emailed to every customer at the end of the month."
CSS = "The CSS grid collapses into one column on narrow phone screens."
QUERY = "postgres database connections exhausted"


@dataclass
class Family:
    """Writes rows of one declared index through its family's own services."""

    index: SearchIndex

    def add(self, text: str, scope_id: str = SCOPE) -> str:
        raise NotImplementedError

    def revise(self, cited_id: str, text: str, scope_id: str = SCOPE) -> None:
        raise NotImplementedError

    def version(self, cited_id: str, scope_id: str = SCOPE) -> Any:
        raise NotImplementedError

    def document(self, text: str) -> str:
        """The original text the channel embeds for a row written with ``text``."""
        return text


class MemoryFamily(Family):
    def add(self, text, scope_id=SCOPE):
        result = memory_services.memory_remember(scope_id=scope_id, kind="note", text=text)
        return result.entry.citation.entry_id

    def _citation(self, cited_id, scope_id):
        result = memory_services.MemoryActiveEntry.objects.get(scope_id=scope_id, entry_id=cited_id)
        return Citation(revision=0, entry_id=cited_id, entry_version_id=result.entry_version_id)

    def revise(self, cited_id, text, scope_id=SCOPE):
        head = memory_services.head_revision(
            scope_id=scope_id, family="memory", artifact_id="memory"
        )
        citation = self._citation(cited_id, scope_id)
        citation = Citation(head, citation.entry_id, citation.entry_version_id)
        memory_services.memory_entry_revise(
            scope_id=scope_id, citation=citation, kind="note", text=text
        )

    def version(self, cited_id, scope_id=SCOPE):
        return memory_services.MemoryActiveEntry.objects.get(
            scope_id=scope_id, entry_id=cited_id
        ).entry_version_id


class ExperienceFamily(Family):
    def document(self, text):
        return proposal_document(Proposal(text, text, text, text))

    def _reviewer(self):
        # A flushed database has no reviewer group: a superuser may review all the same.
        user = get_user_model().objects.filter(username="root").first()
        return user or get_user_model().objects.create_superuser("root", password=None)

    def _approve(self, text, scope_id, target=None):
        capture_source(scope_id)
        candidate = experience_services.experience_propose(
            scope_id=scope_id,
            proposal=Proposal(text, text, text, text),
            source_refs=[SOURCE],
            artifact_refs=[],
            target=target,
        )
        approved = experience_services.candidate_approve(
            scope_id=scope_id,
            candidate_id=candidate.candidate_id,
            expected_version=candidate.version,
            reviewer=self._reviewer(),
        )
        return approved.result_artifact.artifact_id

    def add(self, text, scope_id=SCOPE):
        return self._approve(text, scope_id)

    def revise(self, cited_id, text, scope_id=SCOPE):
        target = ArtifactRef("experience", cited_id, self.version(cited_id, scope_id))
        self._approve(text, scope_id, target)

    def version(self, cited_id, scope_id=SCOPE):
        return ArtifactHead.objects.get(
            scope_id=scope_id, family="experience", artifact_id=cited_id
        ).revision


@pytest.fixture(params=["memory", "experience"])
def family(request):
    return {"memory": MemoryFamily(MEMORY_INDEX), "experience": ExperienceFamily(EXPERIENCE_INDEX)}[
        request.param
    ]


def nearest(family, query=QUERY, scope_id=SCOPE, limit=5):
    vector = embedding.embedder().embed_query(query)
    with read_snapshot():
        return vectors.vector_match(
            family.index, scope_id=scope_id, query_vectors=[vector], limit=limit
        )


def findings(family):
    return [str(finding) for finding in vectors.check(family.index).findings]


def set_stored_version(index, cited_id, version):
    """Make the stored vector of ``cited_id`` claim another version (a stale vector)."""
    table = vectors.vec_table(index)
    key = {hit_key for hit_key, stored in _stored(index).items() if stored.cited_id == cited_id}
    (row_key,) = key
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f"UPDATE {table} SET version = %s WHERE rowid = %s",  # noqa: S608
                [version, row_key],
            )
        else:
            cursor.execute(
                f"UPDATE {table} SET version = %s WHERE row_key = %s",  # noqa: S608
                [str(version).encode(), row_key],
            )


def _stored(index):
    return vectors.vector_engine().stored(index, None)


# -- writing and matching -------------------------------------------------------------


def test_a_written_row_is_found_by_meaning_at_its_version(family):
    wanted = family.add(POSTGRES)
    family.add(INVOICES)
    family.add(CSS)
    hits = nearest(family)
    assert hits[0].cited_id == wanted
    assert len(hits) == 3
    assert hits[0].version == hits[0].indexed_version == family.version(wanted)
    assert 0.3 < hits[0].score <= 1.0 + 1e-6
    assert hits[0].score > hits[1].score >= hits[2].score
    # What the full-text side scores: the row's analyzed text, read in the snapshot.
    assert "postgresql" in hits[0].searchable_text
    assert findings(family) == []


def test_several_query_vectors_find_each_row_by_the_one_it_is_nearest(family):
    """A prompt's segments in one search: each answer is found, and scores its similarity
    to the segment nearest it, as the segment alone would find it."""
    postgres, invoices = family.add(POSTGRES), family.add(INVOICES)
    family.add(CSS)
    model = embedding.embedder()
    asks = [model.embed_query(QUERY), model.embed_query("when are invoices sent to customers")]
    with read_snapshot():
        both = vectors.vector_match(family.index, scope_id=SCOPE, query_vectors=asks, limit=2)
        alone = [
            vectors.vector_match(family.index, scope_id=SCOPE, query_vectors=[ask], limit=1)[0]
            for ask in asks
        ]

    assert {hit.cited_id for hit in both} == {postgres, invoices}
    assert [hit.cited_id for hit in alone] == [postgres, invoices]
    by_id = {hit.cited_id: hit.score for hit in both}
    for hit in alone:
        assert by_id[hit.cited_id] == pytest.approx(hit.score, abs=1e-5)
    assert both[0].score >= both[1].score


def test_the_engine_finds_each_rows_distance_to_the_nearest_vector_exactly():
    """The engine alone, on more rows than the answer: the k nearest to any of several
    vectors, each at its distance to the nearest one, as a brute force computes them."""
    model = embedding.embedder()
    vector_record.create(MEMORY_INDEX, model, replace=True)
    engine = vectors.vector_engine()
    rng = np.random.default_rng(16)
    stored = rng.standard_normal((60, model.dimension)).astype(np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    asks = stored[:3] + 0.5 * rng.standard_normal((3, model.dimension)).astype(np.float32)
    asks /= np.linalg.norm(asks, axis=1, keepdims=True)
    engine.upsert(
        MEMORY_INDEX,
        [
            (vectors.VectorRow(key, scope, f"e{key}", 1, ""), stored[key])
            for key in range(60)
            for scope in [SCOPE if key % 6 else "scope-other"]
        ],
    )
    in_scope = [key for key in range(60) if key % 6]
    distance = {key: float(np.min(1.0 - asks @ stored[key])) for key in in_scope}
    expected = sorted(in_scope, key=lambda key: (distance[key], key))[:12]

    found = engine.nearest(MEMORY_INDEX, scope_id=SCOPE, vectors=list(asks), k=12)

    assert [key for key, *_ in found] == expected
    assert [(cited, version) for _, cited, version, _ in found] == [
        (f"e{key}", "1") for key in expected
    ]
    assert [value for *_, value in found] == pytest.approx(
        [distance[key] for key in expected], abs=1e-4
    )


def _vector_table_statistics(index: SearchIndex) -> tuple[Any, Any] | None:
    """(rows, when gathered) of the vector table in OceanBase's optimizer statistics."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT num_rows, last_analyzed FROM oceanbase.DBA_TAB_STATISTICS "
            "WHERE owner = DATABASE() AND table_name = %s",
            [vectors.vec_table(index)],
        )
        return cursor.fetchone()


@pytest.mark.skipif(engine_of(connection) != "oceanbase", reason="OceanBase's optimizer statistics")
def test_oceanbase_vector_tables_get_statistics_when_created_and_rebuilt(family):
    """Without any, seekdb's planner guesses a scope keeps 99 rows; with some, even of
    an empty table, it estimates the scope from the table (vector_oceanbase's docstring),
    and a rebuild brings them up to date."""
    family.add(POSTGRES)  # the first write creates the table
    created = _vector_table_statistics(family.index)
    assert created is not None
    assert created[1] is not None
    family.add(INVOICES)
    family.add(CSS)
    vectors.rebuild(family.index)
    rows, gathered = _vector_table_statistics(family.index)
    assert int(rows) == 3
    assert gathered >= created[1]


def test_statistics_that_cannot_be_gathered_fail_neither_the_write_nor_the_rebuild(
    family, monkeypatch
):
    def refused(self, index):
        raise DatabaseError("no privilege to gather statistics")

    monkeypatch.setattr(type(vectors.vector_engine()), "refresh_statistics", refused)
    wanted = family.add(POSTGRES)  # the first write creates the table
    assert nearest(family)[0].cited_id == wanted
    family.add(INVOICES)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {vectors.vec_table(family.index)}")  # noqa: S608
    assert vectors.rebuild(family.index).inserted == 2


def test_the_vector_is_of_the_original_text_not_the_stemmed_tokens(family):
    cited = family.add(POSTGRES)
    (stored,) = _stored(family.index).values()
    assert stored.cited_id == cited
    # The same text embedded as a query is the stored vector itself.
    (hit,) = nearest(family, query=family.document(POSTGRES))
    assert hit.score == pytest.approx(1.0, abs=1e-3)
    # The analyzed tokens would be another vector.
    (stemmed,) = nearest(family, query=hit.searchable_text)
    assert stemmed.score < 0.99


def test_a_revised_row_is_found_at_its_new_version_only(family):
    cited = family.add(POSTGRES)
    family.revise(cited, CSS)
    (stored,) = _stored(family.index).values()
    assert stored.version == str(family.version(cited))
    (hit,) = nearest(family, query=family.document(CSS))
    assert (hit.cited_id, hit.version) == (cited, family.version(cited))
    assert hit.score == pytest.approx(1.0, abs=1e-3)


def test_scopes_do_not_see_each_other(family):
    family.add(POSTGRES, scope_id="other-scope")
    mine = family.add(CSS)
    assert [hit.cited_id for hit in nearest(family)] == [mine]
    assert nearest(family, scope_id="nobody") == []


def test_a_stale_vector_is_never_a_hit_and_is_reported_and_repaired(family):
    cited = family.add(POSTGRES)
    other = family.add(INVOICES)
    set_stored_version(family.index, cited, "an-old-version")
    assert [hit.cited_id for hit in nearest(family)] == [other]
    assert any("(stale)" in finding for finding in findings(family))
    report = vectors.rebuild(family.index)
    assert report.inserted == 1
    assert nearest(family)[0].cited_id == cited
    assert findings(family) == []


def test_pending_counts_what_coverage_finds_a_chunk_of_rows_at_a_time(family, monkeypatch):
    family.add(INVOICES)
    stale = family.add(POSTGRES)
    family.add(CSS, scope_id="scope-vectors-other")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    family.add("The nightly backup is copied to a second region.")
    monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS")
    set_stored_version(family.index, stale, "an-old-version")
    # Chunks of two rows: the rows of one chunk, their vectors, then the next.
    monkeypatch.setattr(vector_rebuilding, "PENDING_CHUNK", 2)
    whole = vectors.coverage(family.index)
    found = vectors.pending(family.index)
    counted = (len(whole.rows), len(whole.missing), len(whole.stale))
    assert (found.rows, found.missing, found.stale) == counted == (4, 1, 1)
    vectors.rebuild(family.index)
    assert vectors.pending(family.index) == vectors.Pending(rows=4)
    # A chunk is of every row: with keys too the statement would not be one.
    with pytest.raises(ValueError, match="not of keys"), read_snapshot():
        vector_rows.indexed_rows(family.index, [1], scope_id=None, count=2)


def test_the_catch_up_rebuild_reads_a_chunk_of_rows_and_vectors_at_a_time(family, monkeypatch):
    """Serve's catch-up (a rebuild without ``damaged``) finds its work as ``pending``
    counts it: never every row or every vector at once, whatever the index holds."""
    family.add(INVOICES)
    stale = family.add(POSTGRES)
    family.add(CSS, scope_id="scope-vectors-other")
    gone = family.add("The staging database is restored from the nightly snapshot.")
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    missing = [family.add(f"Service {name} logs to its own index.") for name in "abc"]
    monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS")
    set_stored_version(family.index, stale, "an-old-version")
    with connection.cursor() as cursor:
        table = connection.ops.quote_name(family.index.table)
        cursor.execute(
            f"DELETE FROM {table} WHERE {family.index.cited_id} = %s",  # noqa: S608
            [gone],
        )
    engine = vectors.vector_engine()
    monkeypatch.setattr(vector_rebuilding, "PENDING_CHUNK", 2)
    read: list[int] = []

    def whole(*args, **kwargs):
        raise AssertionError("the catch-up read every row or every vector at once")

    def rows_of(index, keys, **kwargs):
        found = indexed_rows(index, keys, **kwargs)
        read.append(len(found))
        return found

    indexed_rows = vector_rows.indexed_rows
    monkeypatch.setattr(vector_rebuilding, "coverage", whole)
    monkeypatch.setattr(engine, "stored", whole)
    monkeypatch.setattr(vector_rebuilding, "indexed_rows", rows_of)
    report = vectors.rebuild(family.index, batch_size=2)
    assert max(read) <= 2
    assert (report.entries, report.inserted, report.deleted, report.scopes) == (4, 4, 1, 2)
    monkeypatch.undo()
    assert findings(family) == []
    assert set(missing) <= {stored.cited_id for stored in _stored(family.index).values()}


def test_stored_keys_walk_every_vector_in_order_a_chunk_at_a_time(family):
    added = [family.add(text) for text in (POSTGRES, INVOICES, CSS)]
    engine = vectors.vector_engine()
    with read_snapshot():
        every = engine.stored_keys(family.index, after=None, count=10)
        first = engine.stored_keys(family.index, after=None, count=2)
        rest = engine.stored_keys(family.index, after=first[-1], count=2)
    assert every == sorted(_stored(family.index))
    assert len(every) == len(added)
    assert first + rest == every
    assert len(first) == 2


def test_a_row_written_with_the_model_off_is_missing_then_embedded_by_rebuild(family, monkeypatch):
    family.add(INVOICES)  # creates the vector index
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    cited = family.add(POSTGRES)
    assert vectors.status(family.index).state is vectors.State.OFF
    monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS")
    assert cited not in [hit.cited_id for hit in nearest(family)]
    assert any("has no vector" in finding for finding in findings(family))
    report = vectors.rebuild(family.index)
    assert (report.entries, report.inserted) == (1, 1)
    assert "entries/s" in report.index
    assert nearest(family)[0].cited_id == cited
    assert findings(family) == []


def test_a_revision_written_with_the_model_off_drops_the_old_vector(family, monkeypatch):
    cited = family.add(POSTGRES)
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    family.revise(cited, CSS)
    monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS")
    assert _stored(family.index) == {}
    assert nearest(family) == []


def test_a_row_deleted_behind_the_servers_back_leaves_an_orphan_never_a_hit(family):
    cited = family.add(POSTGRES)
    keep = family.add(CSS)
    with connection.cursor() as cursor:
        table = connection.ops.quote_name(family.index.table)
        cursor.execute(
            f"DELETE FROM {table} WHERE {family.index.cited_id} = %s",  # noqa: S608
            [cited],
        )
    assert [hit.cited_id for hit in nearest(family)] == [keep]
    assert any("which is gone" in finding for finding in findings(family))
    report = vectors.rebuild(family.index)
    assert report.deleted == 1
    assert [stored.cited_id for stored in _stored(family.index).values()] == [keep]
    assert findings(family) == []


def test_a_retired_entry_has_no_vector_and_a_reactivated_one_has_it_again():
    family = MemoryFamily(MEMORY_INDEX)
    cited = family.add(POSTGRES)
    head = memory_services.head_revision(scope_id=SCOPE, family="memory", artifact_id="memory")
    version = family.version(cited)
    memory_services.memory_entry_retire(scope_id=SCOPE, citation=Citation(head, cited, version))
    assert _stored(MEMORY_INDEX) == {}
    memory_services.memory_entry_reactivate(
        scope_id=SCOPE, citation=Citation(head + 1, cited, version)
    )
    (hit,) = nearest(family)
    assert (hit.cited_id, hit.version) == (cited, version)


# -- the model -------------------------------------------------------------------------


class OtherModel:
    """The same vectors under another identity: what a model upgrade looks like."""

    def __init__(self, model):
        self._model = model
        self.identity = "another-model/1/000000000000"
        self.dimension = model.dimension

    def embed_documents(self, texts):
        return self._model.embed_documents(texts)

    def embed_with_tokens(self, texts):
        return self._model.embed_with_tokens(texts)

    def embed_query(self, text):
        return self._model.embed_query(text)


def test_a_model_change_is_detected_never_mixed_and_rebuild_reembeds_everything(
    family, monkeypatch
):
    first = family.add(POSTGRES)
    real = embedding.embedder()
    monkeypatch.setattr(embedding_model, "_embedder", OtherModel(real))
    current = vectors.status(family.index)
    assert current.state is vectors.State.MODEL_CHANGED
    assert "model changed" in current.detail
    assert "rebuild_index" in current.detail
    with pytest.raises(vectors.VectorsNotReady):
        nearest(family)
    # A write under the new model stores nothing in the old model's index.
    second = family.add(CSS)
    assert {stored.cited_id for stored in _stored(family.index).values()} == {first}
    assert any("model changed" in finding for finding in findings(family))
    readiness_check = readiness()["checks"]["vector_index"]
    assert readiness_check["status"] == "ok"
    assert "model changed" in readiness_check["detail"]

    report = vectors.rebuild(family.index)
    assert report.inserted == 2
    assert "recreated" in report.index
    recorded = VectorIndexState.objects.get(index=family.index.name)
    assert recorded.model_identity == "another-model/1/000000000000"
    assert vectors.status(family.index).ready
    assert {hit.cited_id for hit in nearest(family)} == {first, second}
    assert findings(family) == []


def test_a_dimension_change_recreates_the_table_for_the_new_dimension(family):
    family.add(POSTGRES)
    VectorIndexState.objects.filter(index=family.index.name).update(dimension=8)
    assert vectors.status(family.index).state is vectors.State.MODEL_CHANGED
    vectors.rebuild(family.index)
    assert vectors.status(family.index).ready
    assert len(nearest(family)) == 1


def test_a_table_of_another_layout_is_not_read_nor_written_until_rebuilt(family):
    """What a database upgraded from before the engine's current layout looks like (the
    migration records layout "" for a SQLite table made then; test_vector_sqlite.py
    does it with the real old table)."""
    first = family.add(POSTGRES)
    VectorIndexState.objects.filter(index=family.index.name).update(layout="")
    current = vectors.status(family.index)
    assert current.state is vectors.State.LAYOUT_CHANGED
    assert "rebuild_index" in current.detail
    with pytest.raises(vectors.VectorsNotReady):
        nearest(family)
    second = family.add(CSS)
    assert {stored.cited_id for stored in _stored(family.index).values()} == {first}

    report = vectors.rebuild(family.index)

    assert "recreated" in report.index
    assert report.inserted == 2
    assert VectorIndexState.objects.get(index=family.index.name).layout == (
        vectors.vector_engine().layout
    )
    assert vectors.status(family.index).ready
    assert {hit.cited_id for hit in nearest(family)} == {first, second}


def test_the_migration_keeps_oceanbase_tables_at_their_layout():
    from importlib import import_module

    from powercontext.search.vector_oceanbase import OceanBaseVectors

    migration = import_module("powercontext.migrations.0003_vector_index_state_layout")
    assert migration.OCEANBASE_LAYOUT == OceanBaseVectors.layout


# -- rebuilding, checking, readiness ---------------------------------------------------


def test_rebuild_recreates_a_dropped_vector_table(family):
    cited = family.add(POSTGRES)
    _, reverse = vectors.vector_engine().ddl(family.index, 384)
    with connection.cursor() as cursor:
        for statement in reverse:
            cursor.execute(statement)
    current = vectors.status(family.index)
    assert current.state is vectors.State.MISSING
    assert "rebuild_index" in current.detail
    assert readiness()["status"] == "ready"
    assert "missing" in readiness()["checks"]["vector_index"]["detail"]
    assert vectors.check(family.index).skipped
    report = vectors.rebuild(family.index)
    assert report.inserted == 1
    assert nearest(family)[0].cited_id == cited


def test_rebuild_is_idempotent_and_reports_progress(family):
    for text in (POSTGRES, INVOICES, CSS):
        family.add(text)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {vectors.vec_table(family.index)}")  # noqa: S608
    calls = []
    report = vectors.rebuild(family.index, batch_size=2, progress=lambda *a: calls.append(a))
    assert report.inserted == 3
    assert calls == [(2, 3), (3, 3)]
    again = vectors.rebuild(family.index)
    assert (again.entries, again.inserted, again.deleted) == (0, 0, 0)


def test_a_stopped_rebuild_keeps_its_batches_and_the_next_one_goes_on(family):
    for text in (POSTGRES, INVOICES, CSS):
        family.add(text)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {vectors.vec_table(family.index)}")  # noqa: S608
    stop = threading.Event()

    # Asked to stop while the first batch is written: that batch stays, no other starts.
    report = vectors.rebuild(family.index, batch_size=2, progress=lambda *_: stop.set(), stop=stop)

    assert report.inserted == 2
    assert "stopped after 2 of 3" in report.index
    assert len(_stored(family.index)) == 2
    assert vectors.rebuild(family.index, stop=threading.Event()).inserted == 1
    assert nearest(family)[0].cited_id is not None
    assert findings(family) == []


def test_rebuild_index_and_check_integrity_include_the_vectors(family):
    family.add(POSTGRES)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {vectors.vec_table(family.index)}")  # noqa: S608
    checks = {result.check: result for result in maintenance.check()}
    assert checks[f"{family.index.name}.vectors"].findings
    reports = {report.family: report for report in maintenance.rebuild()}
    assert reports[f"{family.index.name} vectors"].inserted == 1
    checks = {result.check: result for result in maintenance.check()}
    assert checks[f"{family.index.name}.vectors"].findings == []


def test_readiness_says_ready_when_every_channel_is(family):
    family.add(POSTGRES)
    # Both indexes need a vector table for the whole channel to be ready.
    vectors.rebuild_all()
    assert readiness()["checks"]["vector_index"] == {"status": "ok", "detail": "ready"}


def test_readiness_with_the_channel_off_stays_ready_and_says_so(monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    result = readiness()
    assert result["status"] == "ready"
    assert "switched off" in result["checks"]["vector_index"]["detail"]
    assert vectors.check(MEMORY_INDEX).skipped


def test_no_vector_index_yet_is_skipped_not_a_finding(family, monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    family.add(POSTGRES)
    monkeypatch.delenv("POWERCONTEXT_EMBEDDINGS")
    assert vectors.status(family.index).state is vectors.State.MISSING
    assert findings(family) == []
    assert "no vector index yet" in vectors.check(family.index).skipped


def test_vector_match_needs_a_ready_channel(monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_EMBEDDINGS", "off")
    with pytest.raises(vectors.VectorsNotReady):
        vectors.vector_match(MEMORY_INDEX, scope_id=SCOPE, query_vectors=[[0.0] * 384], limit=3)


def test_both_declared_indexes_have_a_vector_channel():
    assert {index.name for index in vectors.vector_indexes()} == {
        MEMORY_INDEX.name,
        EXPERIENCE_INDEX.name,
    }


def test_a_write_reads_the_row_and_the_record_no_more_than_it_needs(family):
    """Writing a new row's vector reads the vector index's record once to create it and
    once to write, and (a remember) its projection row before and after the change: the
    row the block left is not read again to write its vector, nor the record checked
    before it is read (it was 3 and 3 reads for a remember, 3 record reads for an
    approval)."""
    from django.test.utils import CaptureQueriesContext

    family.add(INVOICES)
    with CaptureQueriesContext(connection) as captured:
        cited_id = family.add(POSTGRES)
    statements = [query["sql"] for query in captured.captured_queries]
    record_reads = [
        sql for sql in statements if sql.startswith("SELECT") and "vectorindexstate" in sql.lower()
    ]
    assert len(record_reads) == 2, record_reads
    if family.index is MEMORY_INDEX:
        row_reads = [
            sql
            for sql in statements
            if sql.startswith("SELECT")
            and MEMORY_INDEX.table in sql
            and MEMORY_INDEX.cited_id in sql
            and "searchable_text" not in sql
        ]
        assert len(row_reads) == 2, row_reads
    with read_snapshot():  # and the vector is written
        assert vectors.stored_vectors(family.index, scope_id=SCOPE, cited_ids=[cited_id])
