"""A prompt on a project with nothing stored yet is answered at once: the same empty pack,
without embedding the prompt (issue 41: an empty scope's prepare cost the model's time,
2.4 -> 6.8 ms on a quiet machine). A scope holding only approved Experience, or only
another scope's neighbours, is judged as before."""

import pytest

from tests.api_calls import prepare

pytestmark = pytest.mark.django_db

EMPTY = {
    "schema": "powercontext.prepared-context.v1",
    "status": "empty",
    "content": None,
    "content_bytes": 0,
}


def test_a_scope_with_nothing_stored_embeds_nothing(api, remember, embedded_texts):
    # Another project's entries do not make this one searchable.
    remember("Deploys go out from the release branch on Thursdays.", scope_id="busy")
    embedded_texts.clear()

    assert prepare(api, "new-project", "When do deploys go out from the release branch?") == EMPTY
    assert embedded_texts == []


def test_the_first_entry_makes_the_scope_searchable_again(api, remember, embedded_texts):
    remember("Deploys go out from the release branch on Thursdays.", scope_id="new-project")
    embedded_texts.clear()

    prepared = prepare(api, "new-project", "Which day do deploys go out from the release branch?")

    assert prepared["status"] == "ready"
    assert "Thursdays" in prepared["content"]
    # The prompt was embedded for the semantic channel, as on any searchable scope.
    assert embedded_texts == [["Which day do deploys go out from the release branch?"]]


def test_a_scope_with_only_approved_experience_still_gets_its_lessons(api, propose, approve):
    candidate = propose(
        "Run the importer's migration tests before merging a schema change.", scope_id="lessons"
    )
    approve(candidate, scope_id="lessons")

    prepared = prepare(api, "lessons", "I changed the schema; which migration tests should I run?")

    assert prepared["status"] == "ready"
    assert "importer's migration tests" in prepared["content"]


def test_a_pending_candidate_alone_leaves_the_scope_unsearched(api, propose, embedded_texts):
    # Only approval writes an Experience head: a candidate awaiting review is not indexed.
    propose("Run the importer's migration tests before merging a schema change.", scope_id="desk")
    embedded_texts.clear()

    assert prepare(api, "desk", "Which migration tests should I run for the importer?") == EMPTY
    assert embedded_texts == []
