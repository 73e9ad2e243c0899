"""The kernel's read selectors (``powercontext.selectors``): captured sources, artifact
revisions and head content as the desk and the home page read them."""

import dataclasses
import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from powercontext import sources
from powercontext.artifacts import head_advance, revision_append
from powercontext.models import ArtifactHead, ArtifactRevision, SourceRecord
from powercontext.selectors import (
    StoredRevision,
    StoredSource,
    artifact_revision_get,
    artifact_revisions_list,
    heads_with_content,
    source_get,
    sources_recent_agents,
)
from powercontext.sources import CONTENT_SOURCE, source_capture

pytestmark = pytest.mark.django_db


def _write(scope_id, artifact_id, contents, family="notes"):
    """Revisions 1..n of ``family/artifact_id``, the head at the last."""
    for revision, content in enumerate(contents, start=1):
        with transaction.atomic():
            head_advance(
                scope_id=scope_id,
                family=family,
                artifact_id=artifact_id,
                expected_revision=revision - 1,
            )
            revision_append(
                scope_id=scope_id,
                family=family,
                artifact_id=artifact_id,
                revision=revision,
                content=content,
            )


def test_source_get_answers_the_captured_source_as_a_frozen_value():
    source_capture(scope_id="scope-a", source_id="p-1", content="First.", metadata={"a": 1})
    source_capture(scope_id="scope-a", source_id="p-2", content="Second.")
    found = source_get(scope_id="scope-a", name=CONTENT_SOURCE, source_id="p-2")
    record = SourceRecord.objects.get(scope_id="scope-a", source_id="p-2")
    assert found == StoredSource(
        record_id=record.pk,
        scope_id="scope-a",
        name=CONTENT_SOURCE,
        source_id="p-2",
        position=2,
        payload={"content": "Second.", "metadata": {}},
        captured_at=record.created_at,
    )
    assert found.content == "Second."
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.position = 3  # type: ignore[misc]


def test_source_get_is_none_for_another_scope_name_or_id():
    source_capture(scope_id="scope-a", source_id="p-1", content="First.")
    assert source_get(scope_id="scope-b", name=CONTENT_SOURCE, source_id="p-1") is None
    assert source_get(scope_id="scope-a", name="file", source_id="p-1") is None
    assert source_get(scope_id="scope-a", name=CONTENT_SOURCE, source_id="p-9") is None


def test_sources_recent_agents_counts_the_newest_by_scope_agent_and_session():
    for n in range(4):
        source_capture(
            scope_id=f"scope-{n % 2}",
            source_id=f"p-{n}",
            content=str(n),
            metadata={"agent": "codex" if n else "x", "session_id": f"s-{n // 2}"},
        )
    # Distinct times, as captures made apart have (the test runs within one tick).
    for n in range(4):
        SourceRecord.objects.filter(source_id=f"p-{n}").update(
            created_at=timezone.now() - timedelta(minutes=10 - n)
        )
    since = timezone.now() - timedelta(hours=1)

    def counted(**kwargs):
        groups = sources_recent_agents(name=CONTENT_SOURCE, **kwargs)
        return sorted((g.scope_id, g.agent, g.session_key[:4], g.prompts) for g in groups)

    key = {
        n: sources.capture_agent({"agent": "codex", "session_id": f"s-{n}"})["session_key"][:4]
        for n in (0, 1)
    }
    # The newest three: p-3 and p-1 (scope-1, sessions s-1 and s-0), p-2 (scope-0, s-1).
    assert counted(since=since, limit=3) == sorted(
        [
            ("scope-1", "codex", key[1], 1),
            ("scope-1", "codex", key[0], 1),
            ("scope-0", "codex", key[1], 1),
        ]
    )
    everything = counted(since=since, limit=10)
    assert sum(group[3] for group in everything) == 4
    assert ("scope-0", "other") in {group[:2] for group in everything}
    assert counted(since=since - timedelta(days=1), limit=10) == everything
    assert sources_recent_agents(name="file", since=since, limit=3) == []
    later = timezone.now() + timedelta(seconds=1)
    assert sources_recent_agents(name=CONTENT_SOURCE, since=later, limit=3) == []


def test_artifact_revision_get_answers_one_revision_or_none():
    _write("scope-a", "n-1", [{"text": "one"}, {"text": "two"}])
    second = artifact_revision_get(
        scope_id="scope-a", family="notes", artifact_id="n-1", revision=2
    )
    row = ArtifactRevision.objects.get(artifact_id="n-1", revision=2)
    assert second == StoredRevision(
        record_id=row.pk,
        scope_id="scope-a",
        family="notes",
        artifact_id="n-1",
        revision=2,
        content={"text": "two"},
        created_at=row.created_at,
    )
    for absent in (
        {"scope_id": "scope-a", "family": "notes", "artifact_id": "n-1", "revision": 3},
        {"scope_id": "scope-b", "family": "notes", "artifact_id": "n-1", "revision": 1},
        {"scope_id": "scope-a", "family": "other", "artifact_id": "n-1", "revision": 1},
        {"scope_id": "scope-a", "family": "notes", "artifact_id": "n-2", "revision": 1},
    ):
        assert artifact_revision_get(**absent) is None


def test_artifact_revisions_list_is_the_artifacts_revisions_newest_first():
    _write("scope-a", "n-1", [{"text": "one"}, {"text": "two"}, {"text": "three"}])
    _write("scope-a", "n-2", [{"text": "other"}])
    _write("scope-b", "n-1", [{"text": "elsewhere"}])
    listed = artifact_revisions_list(scope_id="scope-a", family="notes", artifact_id="n-1")
    assert [(r.revision, r.content["text"]) for r in listed] == [
        (3, "three"),
        (2, "two"),
        (1, "one"),
    ]
    assert artifact_revisions_list(scope_id="scope-a", family="notes", artifact_id="n-9") == []


def test_heads_with_content_reads_each_heads_current_revision_in_one_query(
    django_assert_num_queries,
):
    _write("scope-a", "n-1", [{"text": "one"}, {"text": "two"}])
    _write("scope-b", "n-1", [{"text": "b-one"}])
    _write("scope-a", "n-1", [{"text": "same id, other family"}], family="other")
    heads = heads_with_content(ArtifactHead.objects.filter(family="notes").order_by("scope_id"))
    with django_assert_num_queries(1):
        shown = [(h.scope_id, h.revision, json.loads(h.head_content)) for h in heads]
    assert shown == [("scope-a", 2, {"text": "two"}), ("scope-b", 1, {"text": "b-one"})]
