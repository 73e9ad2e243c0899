"""``experience_documents``: the document of each approved head's revision, by head row key,
for a pack's window (one plain statement on either engine)."""

import json

import pytest

from experience.search_index import experience_documents, proposal_document
from experience.values import EXPERIENCE_FAMILY, Proposal
from powercontext.models import ArtifactHead, ArtifactRevision
from tests.experience.conftest import proposal

pytestmark = pytest.mark.django_db


def test_each_head_gives_the_document_of_its_own_revision(propose, approve):
    for lesson in ("Run the importer on a copy first.", "Pin the schema before a migration."):
        approve(propose(proposal=proposal(lesson)))
    heads = ArtifactHead.objects.filter(family=EXPERIENCE_FAMILY)
    expected = {}
    for head in heads:
        content = ArtifactRevision.objects.get(
            scope_id=head.scope_id,
            family=head.family,
            artifact_id=head.artifact_id,
            revision=head.revision,
        ).content
        expected[head.pk] = proposal_document(Proposal.from_payload(json.loads(content)))
    assert len(expected) == 2
    # A head of another family whose revision reads as a proposal all the same.
    other = ArtifactHead.objects.create(
        scope_id="scope-a", family="other", artifact_id="copy", revision=1
    )
    ArtifactRevision.objects.create(
        scope_id="scope-a",
        family="other",
        artifact_id="copy",
        revision=1,
        content=content,
        previous_hash="0" * 64,
        revision_hash="1" * 64,
    )

    assert experience_documents([*expected, other.pk, max(expected) + 1000]) == expected
    assert experience_documents([]) == {}


def test_a_revision_that_is_not_a_proposal_is_left_out(propose, approve):
    approve(propose())
    head = ArtifactHead.objects.get(family=EXPERIENCE_FAMILY)
    ArtifactRevision.objects.filter(
        scope_id=head.scope_id, family=head.family, artifact_id=head.artifact_id
    ).update(content='{"not": "a proposal"}')
    assert experience_documents([head.pk]) == {}
