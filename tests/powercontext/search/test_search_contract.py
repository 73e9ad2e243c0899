"""The search engine contract, for every declared index on the suite's engine (SQLite by
default, OceanBase with ``POWERCONTEXT_TEST_DATABASE=oceanbase``): what
``powercontext.search.SearchEngine`` promises, checked the same way for Memory's index
(kept by the engine) and Experience's (kept by writes).

Rows are made through the HTTP API, the way the families write them; each declared index
needs a row maker below, so a new declaration fails here until it is covered."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from experience import services as experience_services
from powercontext.search import IndexRow, SearchIndex, analyzer, database_engine
from powercontext.search.indexes import declared_indexes
from tests.conftest import ApiClient
from tests.experience.conftest import SOURCE, capture_source, proposal

pytestmark = pytest.mark.django_db

SCOPE, OTHER = "contract-scope", "contract-other"


def _remember(api, scope_id, text):
    entry = api.ok("/v1/memory/remember", {"scope_id": scope_id, "kind": "note", "text": text})[
        "entry"
    ]
    return entry["citation"]["entry_id"], entry["citation"]["entry_version_id"]


def _approve(api, scope_id, text):
    capture_source(scope_id)
    candidate = api.ok(
        "/v1/experience/propose",
        {"scope_id": scope_id, "proposal": proposal(text), "source_refs": [SOURCE]},
        status=201,
    )
    if not get_user_model().objects.filter(username="contract").exists():
        # A flushed database (after a transactional test) has no reviewer group: a
        # superuser may review all the same.
        get_user_model().objects.create_superuser("contract", password=None)
    token = experience_services.reviewer_token_issue(username="contract").token
    approved = ApiClient(api.client, token=token).ok(
        "/v1/artifact-candidates/approve",
        {
            "scope_id": scope_id,
            "candidate_id": candidate["candidate_id"],
            "expected_version": candidate["version"],
        },
    )["result_artifact"]
    return approved["artifact_id"], approved["revision"]


# Index name -> make one row of that index: (api, scope_id, text) -> (cited id, version).
ROW_MAKERS = {"memory_activeentry": _remember, "experience_head": _approve}
INDEXES = list(declared_indexes())


@pytest.fixture(params=INDEXES, ids=[index.name for index in INDEXES])
def index(request) -> SearchIndex:
    return request.param


@pytest.fixture
def engine():
    """The lexical engine of the suite's database."""
    return database_engine()


@pytest.fixture
def make(api, index):
    def _make(text, scope_id=SCOPE):
        return ROW_MAKERS[index.name](api, scope_id, text)

    return _make


def match(engine, index, words, scope_id=SCOPE, limit=10):
    return engine.match(index, scope_id=scope_id, terms=analyzer.query_terms(words), limit=limit)


def test_every_declared_index_has_a_row_maker():
    assert {index.name for index in INDEXES} == set(ROW_MAKERS)


def test_a_migrated_database_has_every_index(engine, index):
    assert engine.status(index) is None


def test_match_cites_the_row_at_its_version_with_its_searchable_text(engine, index, make):
    cited = make("The nightly quokka importer retries three times")
    make("Something else entirely about deployments")
    (hit,) = match(engine, index, "quokka")
    assert (hit.cited_id, hit.version) == cited
    assert hit.indexed_version == hit.version
    assert hit.score > 0
    assert "quokka" in hit.searchable_text.split()


def test_match_stays_inside_the_scope(engine, index, make):
    make("The wombat cache is warmed at noon", scope_id=OTHER)
    assert match(engine, index, "wombat") == []
    assert len(match(engine, index, "wombat", scope_id=OTHER)) == 1


def test_match_ranks_best_first_ties_by_cited_id_and_respects_the_limit(engine, index, make):
    for number in range(4):
        make(f"Numbat rule {number}: numbat tests run before numbat pushes")
    make("Numbat mentioned once among many other unrelated words here")
    hits = match(engine, index, "numbat")
    assert len(hits) == 5
    keys = [(-hit.score, hit.cited_id) for hit in hits]
    assert keys == sorted(keys)
    assert len(match(engine, index, "numbat", limit=2)) == 2


def test_a_limit_through_tied_rows_keeps_the_lowest_cited_ids(engine, index, make):
    # Equal ranks (same length, one match each) in an order their cited ids do not
    # follow: the limit falls among them, and the ties go by cited id, not row order.
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    cited = [make(f"Dingo note {word}")[0] for word in words]
    hits = match(engine, index, "dingo", limit=3)
    assert len({hit.score for hit in match(engine, index, "dingo")}) == 1
    assert [hit.cited_id for hit in hits] == sorted(cited)[:3]
    assert len(match(engine, index, "dingo", limit=1)) == 1


def test_match_of_no_terms_or_unknown_terms_finds_nothing(engine, index, make):
    make("The platypus dashboard refreshes hourly")
    assert engine.match(index, scope_id=SCOPE, terms=[], limit=10) == []
    assert match(engine, index, "zzyzx") == []


def test_rebuild_of_every_scope_or_one_answers_the_same(engine, index, make):
    make("The echidna worker drains the queue", scope_id=SCOPE)
    make("The echidna worker sleeps", scope_id=OTHER)
    before = [match(engine, index, "echidna", scope) for scope in (SCOPE, OTHER)]
    engine.rebuild(index)
    assert [match(engine, index, "echidna", scope) for scope in (SCOPE, OTHER)] == before
    engine.rebuild(index, scope_id=SCOPE)
    assert [match(engine, index, "echidna", scope) for scope in (SCOPE, OTHER)] == before
    assert engine.integrity(index) is None


def test_writing_the_current_row_again_changes_nothing(engine, index, make):
    cited_id, version = make("The bilby exporter compresses its output")
    (hit,) = match(engine, index, "bilby")
    table = connection.ops.quote_name(index.table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {index.row_key}, {index.text_column} FROM {table} "  # noqa: S608
            f"WHERE {index.cited_id} = %s",
            [cited_id],
        )
        ((key, text),) = cursor.fetchall()
    engine.write(index, [IndexRow(key, SCOPE, cited_id, version, text)])
    assert match(engine, index, "bilby") == [hit]


@pytest.mark.django_db(transaction=True)
def test_rebuild_recreates_a_dropped_index_with_its_ddl(engine, index, make):
    cited = make("The quoll scheduler skips holidays")
    _, reverse = engine.ddl(index)
    try:
        with connection.cursor() as cursor:
            for statement in reverse:
                cursor.execute(statement)
        assert engine.status(index) is not None
        engine.rebuild(index)
        assert engine.status(index) is None
        assert [(hit.cited_id, hit.version) for hit in match(engine, index, "quoll")] == [cited]
    finally:
        # DDL commits on OceanBase: whatever happened, the rest of the session needs it.
        if engine.status(index) is not None:
            engine.rebuild(index)
