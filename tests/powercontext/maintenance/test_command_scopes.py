"""``--scope`` of check_integrity and rebuild_index (issue 14.10): an unknown scope is an
error, not a pass; a known one limits every family, Experience's index included."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

from experience import services
from experience.models import ExperienceTermStat
from experience.selectors import experience_search_at
from experience.values import Proposal
from memory.models import MemoryTermStat
from powercontext.models import ArtifactHead
from powercontext.search.analyzer import query_terms
from powercontext.search.query import Query
from tests.conftest import sqlite_only
from tests.experience.conftest import SOURCE, capture_source, proposal

pytestmark = pytest.mark.django_db


def run(command, *args):
    """(stdout, CommandError message or None)."""
    out = io.StringIO()
    try:
        call_command(command, *args, stdout=out)
    except CommandError as error:
        return out.getvalue(), str(error)
    return out.getvalue(), None


@pytest.fixture
def lessons(db):
    services.reviewer_token_issue(username="rita", create=True)
    reviewer = get_user_model().objects.get(username="rita")
    for scope_id, lesson in [("scope-a", "Pin the base image."), ("scope-b", "Rotate keys.")]:
        capture_source(scope_id)
        candidate = services.experience_propose(
            scope_id=scope_id,
            proposal=Proposal(**proposal(lesson)),
            source_refs=[SOURCE],
            artifact_refs=[],
        )
        services.candidate_approve(
            scope_id=scope_id,
            candidate_id=candidate.candidate_id,
            expected_version=1,
            reviewer=reviewer,
        )


@pytest.mark.parametrize("command", ["check_integrity", "rebuild_index"])
def test_an_unknown_scope_fails_and_says_so(remember, command):
    remember("Run make lint before pushing")
    output, error = run(command, "--scope", "scope-nope")
    assert error == "Unknown scope 'scope-nope': no table has a row in it."
    assert "passed" not in output
    assert "complete" not in output


@pytest.mark.parametrize("command", ["check_integrity", "rebuild_index"])
def test_a_known_scope_is_accepted(remember, command):
    remember("Run make lint before pushing", scope_id="scope-a")
    assert run(command, "--scope", "scope-a")[1] is None


def test_a_scope_with_only_stray_derived_rows_is_known_and_cleaned(db):
    MemoryTermStat.objects.create(scope_id="ghost", term="phantom", documents=3)
    output, error = run("rebuild_index", "--scope", "ghost")
    assert error is None
    assert "term statistics: 1 row(s) repaired" in output
    assert not MemoryTermStat.objects.filter(scope_id="ghost").exists()
    assert run("rebuild_index", "--scope", "ghost")[1] == (
        "Unknown scope 'ghost': no table has a row in it."
    )


def test_a_scoped_rebuild_leaves_other_scopes_experience_alone(lessons):
    ArtifactHead.objects.filter(family="experience").update(searchable_text="stale")
    ExperienceTermStat.objects.filter(scope_id="scope-b").update(documents=9)
    output, error = run("rebuild_index", "--scope", "scope-a")
    assert error is None
    assert "experience: 1 approved heads in 1 scope(s)" in output
    assert "full-text index: rebuilt for this scope" in output
    heads = dict(
        ArtifactHead.objects.filter(family="experience").values_list("scope_id", "searchable_text")
    )
    assert heads["scope-a"] != "stale"
    assert heads["scope-b"] == "stale"
    assert set(
        ExperienceTermStat.objects.filter(scope_id="scope-b").values_list("documents", flat=True)
    ) == {9}
    assert run("check_integrity", "--scope", "scope-a")[1] is None
    assert run("check_integrity", "--scope", "scope-b")[1] is not None


def _hits(scope_id, query):
    return [
        hit.lesson
        for hit in experience_search_at(
            scope_id=scope_id, query=Query(query, query_terms(query)), limit=8
        )
    ]


@sqlite_only("edits the FTS5 table of the Experience index")
def test_a_scoped_rebuild_rewrites_only_that_scopes_index_rows(lessons):
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM experience_head_fts")
    assert _hits("scope-a", "base image") == []
    assert run("rebuild_index", "--scope", "scope-a")[1] is None
    assert _hits("scope-a", "base image") == ["Pin the base image."]
    assert _hits("scope-b", "rotate keys") == []  # not this rebuild's scope
    assert run("rebuild_index")[1] is None
    assert _hits("scope-b", "rotate keys") == ["Rotate keys."]
