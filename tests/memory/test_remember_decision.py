"""The remember decision table ("an identical active entry makes it a no-op") is decided
from the authoritative manifest and versions: a drifted active-entry projection (the
derived, rebuildable table) cannot change the answer."""

import pytest

from memory import services
from memory.models import MemoryActiveEntry
from memory.search_index import MEMORY_INDEX
from memory.values import kind_text_hash
from powercontext.search import vectors

pytestmark = pytest.mark.django_db
SCOPE = "scope-a"


def _head(api):
    listed = api.ok("/v1/memory/entries/list", {"scope_id": SCOPE, "include_inactive": True})
    return listed["memory"]["revision"]


def test_a_missing_projection_row_does_not_make_a_duplicate(api, remember):
    first = remember("Deploys go through the staging pipeline.")
    MemoryActiveEntry.objects.filter(scope_id=SCOPE).delete()  # the projection drifts
    again = remember("Deploys go through the staging pipeline.")
    assert again == {"memory": first["memory"], "entry": None}
    assert _head(api) == 1


def test_a_stale_projection_row_does_not_swallow_a_new_entry(api, remember):
    remember("Deploys go through the staging pipeline.")
    # The projection claims the entry says something it never said.
    MemoryActiveEntry.objects.filter(scope_id=SCOPE).update(
        kind_text_hash=kind_text_hash("note", "Releases are cut on Fridays.")
    )
    added = remember("Releases are cut on Fridays.")
    assert added["entry"] is not None
    assert added["entry"]["text"] == "Releases are cut on Fridays."
    assert _head(api) == 2


def test_a_retired_entry_left_in_the_projection_does_not_block_remembering(api, remember):
    entry = remember("Deploys go through the staging pipeline.")["entry"]
    row = MemoryActiveEntry.objects.get(scope_id=SCOPE)
    snapshot = {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}
    api.ok("/v1/memory/entries/retire", {"scope_id": SCOPE, "citation": entry["citation"]})
    MemoryActiveEntry.objects.create(**snapshot)  # the retired entry is back in the projection
    again = remember("Deploys go through the staging pipeline.")
    assert again["entry"] is not None
    assert again["entry"]["citation"]["entry_id"] != entry["citation"]["entry_id"]


# -- the model is not run for a no-op --------------------------------------------------


def test_remembering_what_is_already_there_does_not_run_the_model(remember, embedded_texts):
    first = remember("Deploys go through the staging pipeline.")
    again = remember("Deploys go through the staging pipeline.")
    assert again == {"memory": first["memory"], "entry": None}
    assert embedded_texts == [["Deploys go through the staging pipeline."]]


# Committed writes: on OceanBase the vector table is created outside any transaction, so
# inside a test's transaction no vector would be written.
@pytest.mark.django_db(transaction=True)
def test_an_entry_gone_before_the_write_is_added_again_with_its_vector(
    api, remember, embedded_texts, monkeypatch
):
    """Seen before the transaction, the entry made the remember a no-op; retired before
    the write, it did not: the entry is added, with the vector it needs."""
    entry = remember("Deploys go through the staging pipeline.")["entry"]
    api.ok("/v1/memory/entries/retire", {"scope_id": SCOPE, "citation": entry["citation"]})
    real = services._active_entry_says
    answers = iter([True])  # what the look before the transaction saw
    monkeypatch.setattr(
        services, "_active_entry_says", lambda *args: next(answers, None) or real(*args)
    )

    added = remember("Deploys go through the staging pipeline.")

    assert added["entry"] is not None
    assert embedded_texts == [["Deploys go through the staging pipeline."]] * 2
    assert vectors.coverage(MEMORY_INDEX, scope_id=SCOPE).missing == []


def test_of_several_versions_saying_it_the_active_one_makes_it_a_no_op(api, remember):
    """A text said by a superseded version and by an active one: remembering it again is
    a no-op however the versions are looked at (each of them in turn)."""
    first = remember("Deploys go through the staging pipeline.")["entry"]
    api.ok(
        "/v1/memory/entries/revise",
        {
            "scope_id": SCOPE,
            "citation": first["citation"],
            "kind": "note",
            "text": "Deploys go through the canary pipeline.",
        },
    )
    # Said now by no active entry: a new entry says it again, beside the old version.
    second = remember("Deploys go through the staging pipeline.")
    assert second["entry"] is not None
    assert second["entry"]["citation"]["entry_id"] != first["citation"]["entry_id"]
    assert services._active_entry_says(SCOPE, "note", "Deploys go through the staging pipeline.")
    again = remember("Deploys go through the staging pipeline.")
    assert again == {"memory": second["memory"], "entry": None}
    # Neither says it in another kind, nor what the first entry says now in another scope.
    assert not services._active_entry_says(
        SCOPE, "gotcha", "Deploys go through the staging pipeline."
    )
    assert not services._active_entry_says(
        "scope-b", "note", "Deploys go through the canary pipeline."
    )
    assert services._active_entry_says(SCOPE, "note", "Deploys go through the canary pipeline.")
