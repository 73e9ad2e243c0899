"""The ``experience`` family of ``powercontext.maintenance``: its integrity check honours
``--scope`` and reads one snapshot; its rebuild honours the scope for what is per scope."""

import threading

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

import experience.rebuild
from experience import services
from experience.models import ExperienceTermStat
from experience.rebuild import experience_check, experience_rebuild
from experience.values import Proposal
from powercontext.maintenance import FAMILIES
from powercontext.models import ArtifactHead
from tests.experience.conftest import SOURCE, capture_source, integrity_problems, proposal

pytestmark = pytest.mark.django_db


def _approve(scope_id, lesson, reviewer):
    capture_source(scope_id)
    candidate = services.experience_propose(
        scope_id=scope_id,
        proposal=Proposal(**proposal(lesson)),
        source_refs=[SOURCE],
        artifact_refs=[],
    )
    return services.candidate_approve(
        scope_id=scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=1,
        reviewer=reviewer,
    )


def _corrupt_head(scope_id):
    ArtifactHead.objects.filter(family="experience", scope_id=scope_id).update(
        searchable_text="stale"
    )


def test_the_family_is_registered_with_experience_functions():
    (family,) = [family for family in FAMILIES if family.name == "experience"]
    assert family.load("rebuild") is experience_rebuild
    assert family.load("check") is experience_check


def test_a_scoped_check_reports_only_its_scope(reviewer):
    _approve("scope-a", "Pin the base image.", reviewer)
    _approve("scope-b", "Rotate the signing key yearly.", reviewer)
    _corrupt_head("scope-b")

    assert integrity_problems("scope-a") == []
    problems = integrity_problems()
    assert len(problems) == 1
    assert "[scope-b]" in problems[0]
    assert "stale searchable_text" in problems[0]
    assert integrity_problems("scope-b") == problems


def test_check_integrity_command_honours_scope(reviewer):
    _approve("scope-a", "Pin the base image.", reviewer)
    _approve("scope-b", "Rotate the signing key yearly.", reviewer)
    _corrupt_head("scope-b")

    call_command("check_integrity", "--scope", "scope-a", verbosity=0)
    with pytest.raises(CommandError):
        call_command("check_integrity", verbosity=0)


def test_a_scoped_rebuild_repairs_only_its_scope(reviewer):
    _approve("scope-a", "Pin the base image.", reviewer)
    _approve("scope-b", "Rotate the signing key yearly.", reviewer)
    _corrupt_head("scope-a")
    _corrupt_head("scope-b")
    ExperienceTermStat.objects.filter(scope_id="scope-b").delete()

    report = experience_rebuild(scope_id="scope-a")

    assert (report.scopes, report.entries) == (1, 1)
    assert integrity_problems("scope-a") == []
    untouched = integrity_problems()
    assert len(untouched) == 2  # scope-b's stale head and its missing term statistics
    assert all("[scope-b]" in finding for finding in untouched)
    experience_rebuild()
    assert integrity_problems() == []


@pytest.mark.django_db(transaction=True)
def test_an_approval_committing_during_the_check_is_not_a_finding(monkeypatch):
    # A flushed database has no reviewer group: a superuser may review all the same.
    reviewer = get_user_model().objects.create_superuser("root", password=None)
    _approve("scope-a", "Pin the base image.", reviewer)
    check_heads = experience.rebuild._check_heads

    def heads_then_an_approval(*args, **kwargs):
        texts = check_heads(*args, **kwargs)

        # Another connection approves (and commits) after the heads were read.
        def approve():
            try:
                _approve("scope-a", "Rotate the signing key yearly.", reviewer)
            finally:
                connection.close()

        thread = threading.Thread(target=approve)
        thread.start()
        thread.join(timeout=60)
        return texts

    monkeypatch.setattr(experience.rebuild, "_check_heads", heads_then_an_approval)
    assert integrity_problems() == []
    monkeypatch.undo()
    assert ArtifactHead.objects.filter(family="experience").count() == 2
    assert integrity_problems() == []
