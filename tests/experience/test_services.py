"""The review services: atomic approval under injected failures, audit, permissions."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from experience import services
from experience.exceptions import CandidateConflict, CandidateTerminal
from experience.models import Candidate, CandidateStatus, CandidateVersion, ExperienceTermStat
from experience.values import Proposal
from powercontext.exceptions import InvalidRequest, PermissionDenied
from powercontext.models import ArtifactHead, ArtifactRevision
from tests.conftest import engine
from tests.experience.conftest import (
    SCOPE,
    SOURCE,
    capture_source,
    integrity_problems,
    proposal,
)

pytestmark = pytest.mark.django_db


def _propose(lesson="Run the migration tests after changing persistence.", **extra):
    capture_source()
    return services.experience_propose(
        scope_id=SCOPE,
        proposal=Proposal(**proposal(lesson)),
        source_refs=[SOURCE],
        artifact_refs=[],
        **extra,
    )


def _fts_rows():
    if engine() != "sqlite":
        return 0  # OceanBase indexes the head rows themselves: no rows of its own.
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM experience_head_fts")
        return cursor.fetchone()[0]


def _nothing_written(candidate_id):
    assert Candidate.objects.get(candidate_id=candidate_id).status == CandidateStatus.PENDING
    assert not ArtifactHead.objects.filter(family="experience").exists()
    assert not ArtifactRevision.objects.filter(family="experience").exists()
    assert not ExperienceTermStat.objects.exists()
    assert _fts_rows() == 0
    assert integrity_problems() == []


class Boom(Exception):
    pass


@pytest.mark.parametrize(
    "step",
    [
        "experience.services.head_advance",
        "experience.services.revision_append",
        "experience.services.term_stats_adjust",
        {
            "sqlite": "powercontext.search.sqlite.SqliteSearchEngine.write",
            "oceanbase": "powercontext.search.oceanbase.OceanBaseSearchEngine.write",
        }[engine()],
        "experience.services._move_candidate",
    ],
)
def test_a_failure_in_the_middle_of_approval_writes_nothing(monkeypatch, reviewer, step):
    candidate = _propose()

    def fail(*args, **kwargs):
        raise Boom()

    monkeypatch.setattr(step, fail)
    with pytest.raises(Boom):
        services.candidate_approve(
            scope_id=SCOPE,
            candidate_id=candidate.candidate_id,
            expected_version=1,
            reviewer=reviewer,
        )
    _nothing_written(candidate.candidate_id)
    monkeypatch.undo()
    # And the candidate can still be approved afterwards.
    approved = services.candidate_approve(
        scope_id=SCOPE,
        candidate_id=candidate.candidate_id,
        expected_version=1,
        reviewer=reviewer,
    )
    assert approved.result_artifact.revision == 1
    assert integrity_problems() == []


def test_a_failure_after_approval_returns_500_and_writes_nothing(monkeypatch, reviewer_api):
    candidate = _propose()

    def fail(*args, **kwargs):
        raise Boom()

    monkeypatch.setattr("experience.services._move_candidate", fail)
    response = reviewer_api.post(
        "/v1/artifact-candidates/approve",
        {"scope_id": SCOPE, "candidate_id": candidate.candidate_id, "expected_version": 1},
    )
    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
    _nothing_written(candidate.candidate_id)


def test_second_approval_is_terminal_and_one_revision_exists(reviewer):
    candidate = _propose()
    args = {"scope_id": SCOPE, "candidate_id": candidate.candidate_id, "expected_version": 1}
    services.candidate_approve(**args, reviewer=reviewer)
    with pytest.raises(CandidateTerminal):
        services.candidate_approve(**args, reviewer=reviewer)
    with pytest.raises(CandidateTerminal):
        services.candidate_reject(**args, reason="late", reviewer=reviewer)
    assert ArtifactRevision.objects.filter(family="experience").count() == 1


def test_revise_keeps_history_immutable(reviewer):
    candidate = _propose("First wording.")
    services.candidate_revise(
        scope_id=SCOPE,
        candidate_id=candidate.candidate_id,
        expected_version=1,
        proposal=Proposal(**proposal("Second wording.")),
        reviewer=reviewer,
    )
    versions = CandidateVersion.objects.filter(candidate_id=candidate.candidate_id)
    assert [(v.version, v.lesson, v.created_by) for v in versions] == [
        (1, "First wording.", "agent"),
        (2, "Second wording.", "reviewer:rita"),
    ]
    with pytest.raises(CandidateConflict):
        services.candidate_approve(
            scope_id=SCOPE,
            candidate_id=candidate.candidate_id,
            expected_version=1,
            reviewer=reviewer,
        )


def test_deciding_needs_the_review_permission(reviewer):
    candidate = _propose()
    staff = get_user_model().objects.create_user("looker", is_staff=True)
    for user in (None, staff):
        with pytest.raises(PermissionDenied):
            services.candidate_approve(
                scope_id=SCOPE,
                candidate_id=candidate.candidate_id,
                expected_version=1,
                reviewer=user,
            )
    reviewer.is_active = False
    reviewer.save()
    with pytest.raises(PermissionDenied):
        services.candidate_reject(
            scope_id=SCOPE,
            candidate_id=candidate.candidate_id,
            expected_version=1,
            reason="no",
            reviewer=get_user_model().objects.get(pk=reviewer.pk),
        )


def test_services_validate_what_the_admin_sends(reviewer):
    with pytest.raises(InvalidRequest):
        services.experience_propose(
            scope_id=SCOPE,
            proposal=Proposal(**proposal("   ")),
            source_refs=[SOURCE],
            artifact_refs=[],
        )
    candidate = _propose()
    with pytest.raises(InvalidRequest):
        services.candidate_reject(
            scope_id=SCOPE,
            candidate_id=candidate.candidate_id,
            expected_version=1,
            reason=" ",
            reviewer=reviewer,
        )


def test_reviewer_token_is_stored_only_as_a_hash():
    from experience.models import ReviewerToken
    from experience.tokens import reviewer_for_token

    issued = services.reviewer_token_issue(username="ada", create=True)
    assert issued.token.startswith("pcr_")
    assert issued.can_review
    stored = ReviewerToken.objects.get(user__username="ada")
    assert issued.token not in stored.token_hash
    assert reviewer_for_token(issued.token).username == "ada"
    again = services.reviewer_token_issue(username="ada")
    assert reviewer_for_token(issued.token) is None
    assert reviewer_for_token(again.token).username == "ada"
    assert services.reviewer_token_revoke(username="ada")
    assert reviewer_for_token(again.token) is None
