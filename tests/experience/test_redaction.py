"""Experience keeps no secret: proposals, revisions, rejections and approvals redact
before they store; ``manage.py redact_secrets`` redacts candidates and approved
Experience an earlier release stored, with the chain still verifying; the desk shows
reviewers the marker, never the secret."""

import io

import pytest
from django.contrib.admin.utils import quote
from django.core.management import call_command

from experience.models import Candidate, CandidateVersion
from powercontext.models import ArtifactHead, ArtifactRevision, RedactionRecord, SourceRecord
from powercontext.sources import source_capture
from tests.powercontext.redaction import secret_samples as s
from tests.powercontext.redaction.secret_samples import findings, written_before_redaction

from .conftest import SCOPE, proposal

pytestmark = pytest.mark.django_db
ACTION = f"We rotated the key {s.AWS_KEY_ID} and set aws_secret_access_key = {s.AWS_SECRET}."
REDACTED_ACTION = (
    "We rotated the key [redacted:aws-access-key-id] and set "
    "aws_secret_access_key = [redacted:aws-secret-key]."
)


def leaked_proposal():
    return proposal(action=ACTION)


def holds_secret(*texts):
    return any(secret in (text or "") for text in texts for secret in (s.AWS_KEY_ID, s.AWS_SECRET))


def stored_texts():
    texts = []
    for version in CandidateVersion.objects.all():
        texts += [
            version.situation,
            version.action,
            version.outcome,
            version.lesson,
            version.reason,
        ]
    texts += list(Candidate.objects.values_list("decision_reason", flat=True))
    texts += list(ArtifactRevision.objects.values_list("content", flat=True))
    texts += list(ArtifactHead.objects.values_list("searchable_text", flat=True))
    return texts


def test_propose_revise_and_reject_store_markers_and_say_so(api, propose, reviewer_api):
    candidate = propose(proposal=leaked_proposal(), reason=f"seen in {s.GITHUB_TOKEN}")
    assert candidate["proposal"]["action"] == REDACTED_ACTION
    assert api.redacted == "3; kinds=aws-access-key-id,aws-secret-key,github-token"
    assert "redacted" not in candidate
    revised = reviewer_api.ok(
        "/v1/artifact-candidates/revise",
        {
            "scope_id": SCOPE,
            "candidate_id": candidate["candidate_id"],
            "expected_version": 1,
            "proposal": proposal(lesson=f"Never paste {s.STRIPE_KEY}"),
        },
    )
    assert revised["proposal"]["lesson"] == "Never paste [redacted:stripe-key]"
    assert reviewer_api.redacted == "1; kinds=stripe-key"
    rejected = reviewer_api.ok(
        "/v1/artifact-candidates/reject",
        {
            "scope_id": SCOPE,
            "candidate_id": candidate["candidate_id"],
            "expected_version": 2,
            "reason": f"It leaks {s.AWS_KEY_ID}",
        },
    )
    assert rejected["decision_reason"] == "It leaks [redacted:aws-access-key-id]"
    assert not holds_secret(*stored_texts())
    assert s.STRIPE_KEY not in str(stored_texts())


def test_an_approved_lesson_carries_no_secret_into_search_or_the_pack(
    api, reviewer_api, propose, approve
):
    approved = approve(propose(proposal=leaked_proposal()))
    assert reviewer_api.redacted == "0"  # redacted when proposed
    got = api.ok("/v1/experience/get", {"scope_id": SCOPE, "artifact": approved["result_artifact"]})
    assert got["content"]["action"] == REDACTED_ACTION
    pack = api.ok(
        "/v1/context/prepare",
        {
            "scope_id": SCOPE,
            "query": "the nightly import broke on a schema change",
            "max_bytes": 8000,
        },
    )
    assert pack["status"] == "ready"
    assert not holds_secret(pack["content"])


def test_approving_a_version_stored_before_redaction_redacts_it_first(
    api, reviewer_api, propose, approve, monkeypatch
):
    written_before_redaction(monkeypatch)
    candidate = propose(proposal=leaked_proposal())
    monkeypatch.undo()
    assert holds_secret(*stored_texts())
    approved = approve(candidate)
    assert approved["proposal"]["action"] == REDACTED_ACTION
    assert reviewer_api.redacted.startswith("2; kinds=")
    assert not holds_secret(*stored_texts())
    assert RedactionRecord.objects.get().target == "candidate.version"
    assert findings() == {}


@pytest.fixture
def legacy(propose, approve, reject, monkeypatch):
    """Candidates and an approved Experience as an earlier release stored them."""
    written_before_redaction(monkeypatch)
    approved = approve(propose(proposal=leaked_proposal()))
    rejected = reject(propose(lesson="Another lesson."), reason=f"dup of {s.AWS_KEY_ID}")
    monkeypatch.undo()
    assert holds_secret(*stored_texts())
    assert findings() == {}
    return approved, rejected


def test_redact_secrets_redacts_candidates_and_experience_and_the_chain_verifies(api, legacy):
    approved, _rejected = legacy
    out = io.StringIO()
    call_command("redact_secrets", stdout=out)
    text = out.getvalue()
    assert "candidate versions: 1 row(s) redacted (aws-access-key-id 1, aws-secret-key 1)" in text
    assert "candidate rejection reasons: 1 row(s) redacted (aws-access-key-id 1)" in text
    assert "experience revisions: 1 row(s) redacted (aws-access-key-id 1, aws-secret-key 1)" in text
    assert not holds_secret(*stored_texts())
    assert findings() == {}
    # The citation resolves, to the redacted lesson.
    got = api.ok("/v1/experience/get", {"scope_id": SCOPE, "artifact": approved["result_artifact"]})
    assert got["content"]["action"] == REDACTED_ACTION
    pack = api.ok(
        "/v1/context/prepare",
        {"scope_id": SCOPE, "query": "we rotated the key after a schema change", "max_bytes": 8000},
    )
    assert pack["status"] == "ready"
    assert "[redacted:aws-secret-key]" in pack["content"]
    assert not holds_secret(pack["content"])
    call_command("check_integrity", stdout=io.StringIO())


def test_a_redacted_revision_altered_afterwards_is_caught(legacy):
    _approved, _ = legacy
    call_command("redact_secrets", stdout=io.StringIO())
    revision = ArtifactRevision.objects.get(family="experience")
    ArtifactRevision.objects.filter(pk=revision.pk).update(
        content=revision.content.replace("We rotated", "We kept")
    )
    found = findings()
    assert "revision_hash does not match its content" in str(found["artifact.chain"])
    assert "it may not be indexed" in str(found["experience"])


def test_a_redacted_candidate_altered_afterwards_is_caught(legacy):
    call_command("redact_secrets", stdout=io.StringIO())
    CandidateVersion.objects.filter(action=REDACTED_ACTION).update(action="edited")
    Candidate.objects.exclude(decision_reason=None).update(decision_reason="edited")
    found = str(findings()["experience"])
    assert "candidate version differs from what its redaction left" in found
    assert "rejection reason differs from what its redaction left" in found


@pytest.fixture
def desk(client, reviewer):
    """A reviewer at the desk: staff with the review permission, not a superuser."""
    reviewer.is_staff = True
    reviewer.save()
    assert not reviewer.is_superuser
    client.force_login(reviewer)
    return client


def test_the_desk_shows_reviewers_the_marker_never_the_secret(desk, api, propose):
    source = {"name": "content", "source_id": "prompt-with-keys"}
    source_capture(scope_id=SCOPE, source_id=source["source_id"], content=s.FIVE_KINDS_PROMPT)
    candidate = propose(proposal=leaked_proposal(), source_refs=[source])
    record = SourceRecord.objects.get(source_id=source["source_id"])
    pages = [
        f"/admin/experience/candidate/{quote(candidate['candidate_id'])}/change/",
        f"/admin/powercontext/sourcerecord/{record.pk}/change/",
        "/admin/experience/candidate/",
    ]
    for url in pages:
        response = desk.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        for secret in (*s.FIVE_KINDS_SECRETS, s.AWS_SECRET):
            assert secret not in page, url
    detail = desk.get(pages[0]).content.decode()
    assert "[redacted:aws-access-key-id]" in detail
    assert "[redacted:private-key]" in desk.get(pages[1]).content.decode()


def test_the_desk_shows_a_purged_source_as_purged(desk, api, propose):
    candidate = propose()
    call_command("purge_sources", "--scope", SCOPE, "--position", "1", stdout=io.StringIO())
    detail = desk.get(f"/admin/experience/candidate/{quote(candidate['candidate_id'])}/change/")
    assert detail.status_code == 200
    record = SourceRecord.objects.get(scope_id=SCOPE, position=1)
    page = desk.get(f"/admin/powercontext/sourcerecord/{record.pk}/change/")
    assert page.status_code == 200
    assert "Purged" in page.content.decode()
