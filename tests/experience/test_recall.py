"""Approved Experience in search and in the Context Pack; pending and rejected never."""

import json

import pytest
from django.db import connection

from contextpack.builder import ArtifactRef, PreparedContextBuilder
from experience.rebuild import experience_rebuild
from experience.selectors import experience_search_at
from powercontext.models import ArtifactHead
from powercontext.search import SearchInconsistent
from powercontext.search.analyzer import query_terms
from powercontext.search.query import Query
from tests.conftest import engine, sqlite_only
from tests.experience.conftest import SCOPE, integrity_problems, proposal

pytestmark = pytest.mark.django_db

QUERY = "Why did the nightly importer break after the schema migration?"


def _search(query, scope_id=SCOPE):
    return experience_search_at(scope_id=scope_id, query=Query(query, query_terms(query)), limit=8)


def _lessons(hits):
    return [hit.lesson for hit in hits]


def _pack_items(content):
    body = content.split("BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1\n", 1)[1]
    return json.loads(body.rsplit("\nEND_POWERCONTEXT_PREPARED_CONTEXT_V1", 1)[0])["items"]


def _propose_about(propose, lesson):
    # Every field matches the query as well as the approved one does.
    return propose(
        proposal=proposal(
            lesson,
            situation="The nightly importer broke after the schema migration.",
            action="Investigated why the importer broke.",
            outcome="Importer fixed after the migration.",
        )
    )


def test_only_approved_experience_is_searchable(propose, approve, reject):
    approved = approve(_propose_about(propose, "Approved: test the importer on migrations."))
    _propose_about(propose, "Pending: nightly importer schema migration broke.")
    reject(_propose_about(propose, "Rejected: nightly importer schema migration broke."))
    hits = _search(QUERY)
    assert _lessons(hits) == ["Approved: test the importer on migrations."]
    assert hits[0].artifact_ref == ArtifactRef(
        "experience", approved["result_artifact"]["artifact_id"], 1
    )
    # However well the query matches a pending or rejected lesson's exact words.
    for words in ["Pending: nightly importer", "Rejected: nightly importer schema migration"]:
        lessons = _lessons(_search(words))
        assert all(lesson.startswith("Approved") for lesson in lessons), words


def test_search_is_scoped(propose, approve):
    approve(propose("Scope A lesson about flaky importers."))
    assert _search("flaky importers", scope_id="scope-b") == []


def test_search_names_the_current_revision_after_a_revision(propose, approve):
    first = approve(propose("Cache the wheel builds."))["result_artifact"]
    approve(propose("Cache the wheel builds per Python version.", target=first))
    hits = _search("wheel builds")
    assert [(hit.artifact_ref.revision, hit.lesson) for hit in hits] == [
        (2, "Cache the wheel builds per Python version.")
    ]


def test_search_text_is_deterministic_and_on_the_head(propose, approve):
    artifact = approve(propose("Ünïcödé lesson, 缓存 builds."))["result_artifact"]
    head = ArtifactHead.objects.get(family="experience", artifact_id=artifact["artifact_id"])
    assert "ünïcödé" in head.searchable_text.split()
    assert "缓存" in head.searchable_text.split()
    assert _search("缓存")[0].artifact_ref.revision == 1


def test_pack_built_from_search_hits_cites_the_exact_revision(propose, approve, reject):
    artifact = approve(_propose_about(propose, "Approved: test the importer on migrations."))[
        "result_artifact"
    ]
    reject(_propose_about(propose, "Rejected: importer."))
    _propose_about(propose, "Pending: importer.")
    hits = _search(QUERY)
    pack = PreparedContextBuilder().build(
        head=ArtifactRef("memory", "memory", 1),
        memory_hits=[],
        experience_hits=hits,
        max_bytes=8000,
    )
    assert pack.status == "ready"
    items = _pack_items(pack.content)
    assert [item["citation"] for item in items] == [{"artifact_ref": artifact}]
    assert "Lesson: Approved: test the importer on migrations." in items[0]["content"]
    assert "Rejected" not in pack.content
    assert "Pending" not in pack.content


def test_rebuild_restores_the_index_and_searchable_text(propose, approve):
    approve(propose("Rotate the signing key yearly."))
    ArtifactHead.objects.filter(family="experience").update(searchable_text="")
    if engine() == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM experience_head_fts")
    assert _search("signing key") == []
    assert any("stale searchable_text" in p for p in integrity_problems())
    assert experience_rebuild().entries == 1
    assert _lessons(_search("signing key")) == ["Rotate the signing key yearly."]
    assert integrity_problems() == []


@sqlite_only("OceanBase's FULLTEXT index lives on the head row and cannot go stale")
def test_a_stale_index_row_is_an_internal_error_not_a_wrong_citation(propose, approve):
    approve(propose("Keep the lockfile committed."))
    with connection.cursor() as cursor:
        cursor.execute("UPDATE experience_head_fts SET revision = 7")
    with pytest.raises(SearchInconsistent):
        _search("lockfile")


def test_user_text_never_becomes_query_syntax(propose, approve):
    approve(propose("Quote the NEAR operator properly."))
    for query in ['"', "NEAR(", "a AND -b *", "scope_token : x", "\x00 😀 )"]:
        _search(query)


# -- the Context Pack over HTTP (POST /v1/context/prepare) -------------------------------


def test_context_pack_has_approved_lesson_and_never_pending_or_rejected(
    api, propose, approve, reject
):
    artifact = approve(_propose_about(propose, "Approved: test the importer on migrations."))[
        "result_artifact"
    ]
    _propose_about(propose, "Pending: nightly importer schema migration broke.")
    reject(_propose_about(propose, "Rejected: nightly importer schema migration broke."))
    pack = api.ok("/v1/context/prepare", {"scope_id": SCOPE, "query": QUERY, "max_bytes": 8000})
    assert pack["status"] == "ready"
    items = _pack_items(pack["content"])
    experience = [item for item in items if item.get("kind") == "experience"]
    assert [item["citation"] for item in experience] == [{"artifact_ref": artifact}]
    assert "Pending" not in pack["content"]
    assert "Rejected" not in pack["content"]


def test_the_users_recurring_instructions_do_not_pull_in_experience(api, propose, approve):
    # A lesson that shares only the user's usual instructions with the prompt.
    approve(
        propose(
            proposal={
                "situation": "Reviewing a branch before it is merged.",
                "action": "Ran the full test suite and read the diff line by line.",
                "outcome": "Two regressions found before merging.",
                "lesson": "Run the full test suite and review the diff before merging.",
            }
        )
    )
    template = "Run the full test suite and review the diff afterwards. {question}"

    def experience_cited(question):
        query = template.format(question=question)
        pack = api.ok("/v1/context/prepare", {"scope_id": SCOPE, "query": query})
        if pack["status"] == "empty":
            return []
        return [item for item in _pack_items(pack["content"]) if item.get("kind")]

    assert experience_cited("Why did the importer hang?")
    for turn, question in enumerate(["Where is the exporter?", "Who owns billing?"] * 3):
        api.ok(
            "/v1/sources/content",
            {
                "scope_id": SCOPE,
                "source_id": f"prompt:{turn}",
                "content": template.format(question=question),
            },
            status=202,
        )
    assert experience_cited("Why did the importer hang?") == []


def test_context_pack_is_empty_when_only_pending_or_rejected_match(api, propose, reject):
    _propose_about(propose, "Pending: nightly importer schema migration broke.")
    reject(_propose_about(propose, "Rejected: nightly importer schema migration broke."))
    pack = api.ok("/v1/context/prepare", {"scope_id": SCOPE, "query": QUERY, "max_bytes": 8000})
    assert pack == {
        "schema": "powercontext.prepared-context.v1",
        "status": "empty",
        "content": None,
        "content_bytes": 0,
    }
