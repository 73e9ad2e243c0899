"""The revision manifest answers "which versions were active in revision R" exactly for
every R, and a write costs O(changed entries)."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import services
from memory.exceptions import MemoryEntryInactive, MemoryNotFound
from memory.models import MemoryManifestRow
from memory.selectors import memory_entries_list, resolve_citation
from memory.values import Citation

pytestmark = pytest.mark.django_db

operations = st.lists(
    st.tuples(st.sampled_from(["add", "revise", "retire", "reactivate"]), st.integers(0, 5)),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=operations)
def test_manifest_of_every_revision_is_exact(ops):
    scope = "prop-" + uuid.uuid4().hex
    entries: list[str] = []  # entry ids in creation order
    current: dict[str, tuple[str, str]] = {}  # entry -> (version id, state) at head
    snapshots: dict[int, dict[str, tuple[str, str]]] = {}
    head = 0
    for number, (op, pick) in enumerate(ops):
        if op == "add" or not entries:
            result = services.memory_remember(scope_id=scope, kind="k", text=f"fact {number}")
        else:
            entry_id = entries[pick % len(entries)]
            version_id, state = current[entry_id]
            citation = Citation(head, entry_id, version_id)
            try:
                if op == "revise":
                    result = services.memory_entry_revise(
                        scope_id=scope, citation=citation, kind="k", text=f"fact {number}"
                    )
                elif op == "retire":
                    result = services.memory_entry_retire(scope_id=scope, citation=citation)
                else:
                    result = services.memory_entry_reactivate(scope_id=scope, citation=citation)
            except MemoryEntryInactive:
                assert state == "inactive"
                continue
        if result.entry is None:
            continue
        entry = result.entry
        entry_id = entry.citation.entry_id
        if entry_id not in current:
            entries.append(entry_id)
        current[entry_id] = (entry.citation.entry_version_id, entry.state)
        head = result.memory.revision
        assert head == len(snapshots) + 1, "revisions are contiguous"
        snapshots[head] = dict(current)

    all_versions = {(e, v) for snap in snapshots.values() for e, (v, _) in snap.items()}
    for revision, expected in snapshots.items():
        for entry_id, version_id in all_versions:
            citation = Citation(revision, entry_id, version_id)
            if expected.get(entry_id, (None,))[0] == version_id:
                row = resolve_citation(scope_id=scope, citation=citation)
                assert row.state == expected[entry_id][1]
            else:
                with pytest.raises(MemoryNotFound):
                    resolve_citation(scope_id=scope, citation=citation)
    if snapshots:
        listed = memory_entries_list(scope_id=scope, include_inactive=True)
        assert {
            e.citation.entry_id: (e.citation.entry_version_id, e.state) for e in listed.entries
        } == snapshots[head]


def _remember_queries(scope, text):
    with CaptureQueriesContext(connection) as queries:
        services.memory_remember(scope_id=scope, kind="k", text=text)
    return len(queries.captured_queries)


def test_write_cost_does_not_grow_with_memory_size():
    scope = "cost"
    services.memory_remember(scope_id=scope, kind="k", text="creates the head")
    small = _remember_queries(scope, "first fact")
    for index in range(300):
        services.memory_remember(scope_id=scope, kind="k", text=f"filler {index}")
    large = _remember_queries(scope, "last fact")
    assert large == small
    # One open manifest row per entry; a write adds one row, it never copies the set.
    assert MemoryManifestRow.objects.filter(scope_id=scope).count() == 303


def test_revise_touches_only_the_changed_entry():
    scope = "cost-revise"
    for index in range(50):
        services.memory_remember(scope_id=scope, kind="k", text=f"filler {index}")
    result = services.memory_remember(scope_id=scope, kind="k", text="target")
    before = MemoryManifestRow.objects.filter(scope_id=scope).count()
    citation = result.entry.citation
    services.memory_entry_revise(scope_id=scope, citation=citation, kind="k", text="target v2")
    assert MemoryManifestRow.objects.filter(scope_id=scope).count() == before + 1
