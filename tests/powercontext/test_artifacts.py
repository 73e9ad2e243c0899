"""The kernel's artifact writes (``powercontext.artifacts``): each revision chained to the
one before, and the head moved by compare-and-swap."""

import pytest
from django.db import transaction

from powercontext.artifacts import REVISIONS, HeadMoved, head_advance, revision_append
from powercontext.chain import GENESIS_HASH
from powercontext.models import ArtifactHead, ArtifactRevision

pytestmark = pytest.mark.django_db
WHERE = {"scope_id": "scope-a", "family": "notes", "artifact_id": "a"}


def test_each_revision_chains_to_the_one_before_in_its_own_artifact():
    for revision, text in enumerate(["one", "two"], start=1):
        with transaction.atomic():
            head_advance(**WHERE, expected_revision=revision - 1)
            revision_append(**WHERE, revision=revision, content={"text": text})
    # The same revision numbers elsewhere are not in this chain.
    revision_append(scope_id="scope-b", family="notes", artifact_id="a", revision=1, content={})
    first, second = ArtifactRevision.objects.filter(**WHERE).order_by("revision")
    assert first.previous_hash == GENESIS_HASH
    assert second.previous_hash == first.revision_hash
    assert second.revision_hash == REVISIONS.link(first.revision_hash, second.content)


def test_a_revision_whose_predecessor_is_missing_is_refused():
    with pytest.raises(ArtifactRevision.DoesNotExist, match="revision 1 of notes/a"):
        revision_append(**WHERE, revision=2, content={})
    assert not ArtifactRevision.objects.exists()


def test_the_head_moves_only_from_the_revision_the_writer_read():
    head_advance(**WHERE, expected_revision=0)
    head_advance(**WHERE, expected_revision=1, searchable_text="words")
    with pytest.raises(HeadMoved):
        head_advance(**WHERE, expected_revision=1)
    head = ArtifactHead.objects.get(**WHERE)
    assert (head.revision, head.searchable_text) == (2, "words")
