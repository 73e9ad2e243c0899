"""A scope id that is probably a mistake is served as asked, with a warning in the
``PowerContext-Warning`` header (the bodies are a contract: they gain nothing)."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from powercontext import scope_warnings
from powercontext.models import ArtifactHead
from powercontext.scope_warnings import HEADER, one_edit_apart

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _forget_scopes():
    # Each test's database is rolled back under the process's memory of scopes.
    scope_warnings.forget()
    yield
    scope_warnings.forget()


REMEMBER = "/v1/memory/remember"


def _remember(api, scope_id):
    return api.post(REMEMBER, {"scope_id": scope_id, "kind": "convention", "text": "make check"})


def _search(api, scope_id):
    return api.post("/v1/memory/search", {"scope_id": scope_id, "query": "make check"})


@pytest.mark.parametrize(
    ("scope_id", "code"),
    [
        ("https://github.com/acme/widgets", "scope_looks_like_url"),
        ("my repo", "scope_has_spaces"),
    ],
)
def test_a_url_or_a_scope_with_spaces_is_served_with_a_warning(api, scope_id, code):
    response = _remember(api, scope_id)
    assert response.status_code == 200
    assert response[HEADER].startswith(f"{code}: scope_id {scope_id!a} ")
    assert "served as asked" in response[HEADER]
    # Served as asked, in that very scope.
    assert _search(api, scope_id).json()["hits"]


def test_a_new_scope_one_edit_from_an_existing_one_gets_a_warning(api):
    assert HEADER not in _remember(api, "git:github.com/acme/widgets")
    typo = _search(api, "git:github.com/acme/widgest")
    assert typo.status_code == 200
    assert typo.json()["hits"] == []
    assert typo[HEADER] == (
        "scope_near_miss: scope_id 'git:github.com/acme/widgest' holds nothing yet and is "
        "one edit away from the scope 'git:github.com/acme/widgets'; the request was "
        "served as asked (scope ids are exact)"
    )
    prepared = api.post(
        "/v1/context/prepare",
        {"scope_id": "git:github.com/acme/Widgets", "query": "how do I run the tests?"},
    )
    assert prepared[HEADER].startswith("scope_near_miss: ")


def test_the_scope_itself_and_an_unrelated_new_one_get_no_warning(api):
    _remember(api, "git:github.com/acme/widgets")
    assert HEADER not in _search(api, "git:github.com/acme/widgets")
    assert HEADER not in _search(api, "git:github.com/acme/gadgets")


def test_a_non_ascii_scope_is_escaped_in_the_header(api):
    _remember(api, "projet-été")
    response = _search(api, "projet-étés")
    assert response[HEADER].startswith(r"scope_near_miss: scope_id 'projet-\xe9t\xe9s' ")


def _distinct_scans(queries):
    return [query["sql"] for query in queries if "DISTINCT" in query["sql"].upper()]


def test_a_typo_asked_again_reads_the_scope_ids_once_per_data_version(api):
    _remember(api, "git:github.com/acme/widgets")
    with CaptureQueriesContext(connection) as first:
        assert _search(api, "git:github.com/acme/widgest")[HEADER].startswith("scope_near_miss")
    assert _distinct_scans(first.captured_queries)
    for _ in range(3):
        with CaptureQueriesContext(connection) as again:
            warned = _search(api, "git:github.com/acme/widgest")
        assert warned[HEADER].startswith("scope_near_miss: ")
        assert _distinct_scans(again.captured_queries) == []
    # The check itself: two existence seeks and two newest-row seeks, whatever the size.
    with CaptureQueriesContext(connection) as check:
        assert scope_warnings.scope_warning("git:github.com/acme/widgest")
    assert len(check.captured_queries) == 4
    assert _distinct_scans(check.captured_queries) == []


def test_a_scope_written_by_another_process_is_seen_by_the_next_request(api):
    # Nothing on the write paths invalidates the scope ids: a row that did not go through
    # this process's API (another server, an import) moves the data version all the same.
    assert HEADER not in _search(api, "git:github.com/acme/widgest")
    ArtifactHead.objects.create(
        scope_id="git:github.com/acme/widgets",
        family="memory",
        artifact_id="m1",
        revision=1,
    )
    warned = _search(api, "git:github.com/acme/widgest")
    assert warned[HEADER].startswith("scope_near_miss: ")


def _head(scope_id, artifact_id="m1"):
    return ArtifactHead.objects.create(
        scope_id=scope_id, family="memory", artifact_id=artifact_id, revision=1
    )


def test_rows_rolled_back_under_the_scope_ids_do_not_stand_for_new_ones(api):
    # On SQLite the ids of rolled-back inserts are given again: the same newest id (and
    # scope) must not pass for the same data.
    with transaction.atomic():
        first = _head("git:github.com/acme/widgets", "m1")
        newest = _head("git:github.com/acme/gadgets", "m2")
        assert HEADER in _search(api, "git:github.com/acme/widgest")
        transaction.set_rollback(True)
    again = _head("git:github.com/acme/sprockets", "m1")
    _head("git:github.com/acme/gadgets", "m2")
    if again.pk != first.pk:
        assert again.pk > newest.pk  # an engine that never gives an id again
    assert HEADER not in _search(api, "git:github.com/acme/widgest")
    assert _search(api, "git:github.com/acme/sprocket")[HEADER].startswith("scope_near_miss: ")


@pytest.mark.parametrize(
    ("first", "second", "apart"),
    [
        ("repo", "repo", False),
        ("repo", "rep", True),
        ("repo", "repos", True),
        ("repo", "rapo", True),
        ("repo", "rpeo", True),
        ("repo", "Repo", True),
        ("repo", "REPO", True),
        ("repo", "ropa", False),
        ("repo", "re", False),
        ("", "a", True),
    ],
)
def test_one_edit_apart(first, second, apart):
    assert one_edit_apart(first, second) is apart
    assert one_edit_apart(second, first) is apart


@given(st.text(max_size=12), st.integers(min_value=0, max_value=12), st.characters())
def test_one_insertion_is_one_edit(text, position, character):
    inserted = text[:position] + character + text[position:]
    assert one_edit_apart(text, inserted)
