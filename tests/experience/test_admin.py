"""The reviewer's desk in the Django admin (DESIGN.md §8)."""

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Group, Permission

from experience.admin import _status_counts
from experience.models import Candidate, CandidateVersion
from powercontext.models import ArtifactRevision
from tests.experience.conftest import SCOPE

pytestmark = pytest.mark.django_db

QUEUE = "/admin/experience/candidate/"


@pytest.fixture
def desk(client, reviewer):
    reviewer.is_staff = True
    reviewer.set_password("pw-for-tests")
    reviewer.save()
    client.force_login(reviewer)
    return client


@pytest.fixture
def looker(client, django_user_model):
    """Staff that may look at everything the reviewers see, but decide nothing."""
    user = django_user_model.objects.create_user("lou", is_staff=True)
    group = Group.objects.get(name="Experience reviewers")
    user.user_permissions.set(group.permissions.exclude(codename="review_candidate"))
    client.force_login(user)
    return client


def _detail(candidate):
    # quote(): admin URLs escape "_" sequences; an unquoted id that happens to contain
    # one (e.g. "cand_22...") would not resolve back to itself.
    return f"{QUEUE}{quote(candidate['candidate_id'])}/change/"


def _action(candidate, action):
    return f"{QUEUE}{quote(candidate['candidate_id'])}/{action}/"


def test_queue_lists_pending_newest_first_with_counts(desk, propose, approve):
    older, newer = propose("Older lesson."), propose("Newer lesson.")
    approve(propose("Done lesson."))
    page = desk.get(QUEUE).content.decode()
    assert page.index(newer["candidate_id"]) < page.index(older["candidate_id"])
    assert "Done lesson." not in page
    assert 'id="count-pending">2<' in page
    assert 'id="count-approved">1<' in page
    approved = desk.get(QUEUE + "?status=approved").content.decode()
    assert "Done lesson." in approved
    assert "Older lesson." not in approved
    other_scope = desk.get(QUEUE + "?scope=scope-b").content.decode()
    assert older["candidate_id"] not in other_scope


def test_status_counts_take_one_query(propose, approve, django_assert_num_queries):
    propose("Older lesson.")
    propose("Other scope.", scope_id="scope-b")
    approve(propose("Done lesson."))
    with django_assert_num_queries(1):
        counts = _status_counts(Candidate.objects.filter(scope_id=SCOPE))
    assert counts == {"pending": 1, "approved": 1, "rejected": 0}


def test_detail_shows_proposal_beside_linked_evidence(desk, api, propose, remember):
    memory = remember("Importer tests live in tests/importer.")
    api.ok(
        "/v1/sources/content",
        {"scope_id": SCOPE, "source_id": "prompt-1", "content": "The importer broke again."},
        status=202,
    )
    candidate = propose(artifact_refs=[memory["memory"]])
    page = desk.get(_detail(candidate)).content.decode()
    assert "A schema change broke the nightly import." in page
    assert "The importer broke again." in page
    assert "/admin/powercontext/sourcerecord/" in page
    assert "/admin/powercontext/artifactrevision/" in page
    version_id = memory["entry"]["citation"]["entry_version_id"]
    assert f"/admin/memory/memoryentryversion/{quote(version_id)}/" in page
    assert "Importer tests live in tests/importer." in page
    assert 'id="approve-link"' in page


def test_approve_needs_a_confirmation_then_calls_the_service(desk, propose, reviewer):
    candidate = propose()
    confirm = desk.get(_action(candidate, "approve"))
    assert confirm.status_code == 200
    assert b"Yes, approve" in confirm.content
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"
    done = desk.post(_action(candidate, "approve"), {"expected_version": 1}, follow=True)
    assert b"Approved" in done.content
    decided = Candidate.objects.get(pk=candidate["candidate_id"])
    assert decided.status == "approved"
    assert decided.decided_by == reviewer
    assert ArtifactRevision.objects.filter(family="experience").count() == 1
    again = desk.post(_action(candidate, "approve"), {"expected_version": 1}, follow=True)
    assert b"already been decided" in again.content
    assert ArtifactRevision.objects.filter(family="experience").count() == 1


def test_stale_page_is_a_conflict_message(desk, propose, reviewer_api):
    candidate = propose()
    reviewer_api.ok(
        "/v1/artifact-candidates/revise",
        {
            "scope_id": SCOPE,
            "candidate_id": candidate["candidate_id"],
            "expected_version": 1,
            "proposal": {**candidate["proposal"], "lesson": "Reworded."},
        },
    )
    response = desk.post(_action(candidate, "approve"), {"expected_version": 1}, follow=True)
    assert b"newer version" in response.content
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"


def test_reject_requires_a_reason(desk, propose):
    candidate = propose()
    blank = desk.post(_action(candidate, "reject"), {"expected_version": 1, "reason": "  "})
    assert blank.status_code == 200
    assert b"This field is required" in blank.content
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"
    desk.post(_action(candidate, "reject"), {"expected_version": 1, "reason": "Anecdote."})
    rejected = Candidate.objects.get(pk=candidate["candidate_id"])
    assert (rejected.status, rejected.decision_reason) == ("rejected", "Anecdote.")


def test_revise_shows_the_new_version_before_writing_it(desk, propose):
    candidate = propose()
    form = {
        "expected_version": 1,
        "situation": "S2",
        "action": "A2",
        "outcome": "O2",
        "lesson": "L2",
        "reason": "",
    }
    preview = desk.post(_action(candidate, "revise"), form)
    assert b"Version 2 will read" in preview.content
    assert CandidateVersion.objects.filter(candidate_id=candidate["candidate_id"]).count() == 1
    desk.post(_action(candidate, "revise"), {**form, "confirmed": "True"})
    head = Candidate.objects.get(pk=candidate["candidate_id"])
    assert head.version == 2
    assert CandidateVersion.objects.get(candidate=head, version=2).lesson == "L2"


def test_staff_without_review_permission_can_look_but_not_decide(looker, propose):
    candidate = propose()
    assert looker.get(QUEUE).status_code == 200
    page = looker.get(_detail(candidate))
    assert page.status_code == 200
    assert b'id="approve-link"' not in page.content
    assert b"not decide" in page.content
    for action in ("approve", "reject", "revise"):
        assert looker.get(_action(candidate, action)).status_code == 403
        assert looker.post(_action(candidate, action), {"expected_version": 1}).status_code == 403
    assert Candidate.objects.get(pk=candidate["candidate_id"]).status == "pending"


def test_experience_and_memory_are_browsable_read_only(desk, propose, approve, remember):
    remember("A memory to browse.")
    artifact = approve(propose("Browse me."))["result_artifact"]
    experiences = desk.get("/admin/experience/experience/").content.decode()
    assert artifact["artifact_id"] in experiences
    assert "Browse me." in experiences
    for url in (
        "/admin/memory/memoryentryversion/",
        "/admin/memory/memorymanifestrow/",
        "/admin/powercontext/artifactrevision/",
        "/admin/powercontext/sourcerecord/",
    ):
        assert desk.get(url).status_code == 200, url
        assert desk.get(url + "add/").status_code == 403, url
    from experience.models import Experience

    head = Experience.objects.get(artifact_id=artifact["artifact_id"])
    detail = desk.get(f"/admin/experience/experience/{head.pk}/change/").content.decode()
    assert "approved by rita" in detail
    assert "Browse me." in detail


def test_reviewer_group_has_the_review_permission():
    group = Group.objects.get(name="Experience reviewers")
    assert group.permissions.filter(codename="review_candidate").exists()
    assert Permission.objects.filter(codename="view_experience").exists()
