"""Fixtures for the Experience tests: reviewers with personal tokens, and proposals."""

import pytest
from django.contrib.auth import get_user_model

from experience import services
from experience.rebuild import experience_check
from powercontext.models import SourceRecord
from powercontext.sources import source_capture
from tests.conftest import ApiClient

SCOPE = "scope-a"


def proposal(lesson="Run the migration tests after changing persistence.", **overrides):
    return {
        "situation": overrides.pop("situation", "A schema change broke the nightly import."),
        "action": overrides.pop("action", "We added a migration test for the importer."),
        "outcome": overrides.pop("outcome", "The next schema change was caught in CI."),
        "lesson": lesson,
    }


SOURCE = {"name": "content", "source_id": "prompt-1"}


def capture_source(scope_id=SCOPE, source=SOURCE):
    """Capture ``source`` in ``scope_id`` unless it already was: a proposal may cite
    only a source that was captured."""
    if SourceRecord.objects.filter(
        scope_id=scope_id, source_type=source["name"], source_id=source["source_id"]
    ).exists():
        return
    source_capture(
        scope_id=scope_id,
        source_id=source["source_id"],
        content="The prompt that taught the lesson.",
    )


def integrity_problems(scope_id=None):
    """The Experience integrity findings, as ``check_integrity`` prints them."""
    return [
        str(finding)
        for result in experience_check(scope_id=scope_id)
        for finding in result.findings
    ]


@pytest.fixture
def reviewer(db):
    issued = services.reviewer_token_issue(username="rita", create=True)
    user = get_user_model().objects.get(username="rita")
    user.token = issued.token
    return user


@pytest.fixture
def reviewer_api(client, reviewer):
    return ApiClient(client, token=reviewer.token)


@pytest.fixture
def propose(api):
    def _propose(lesson="Run the migration tests after changing persistence.", **extra):
        capture_source(extra.get("scope_id", SCOPE))
        body = {
            "scope_id": extra.pop("scope_id", SCOPE),
            "proposal": extra.pop("proposal", None) or proposal(lesson),
            "source_refs": extra.pop("source_refs", [SOURCE]),
            **extra,
        }
        return api.ok("/v1/experience/propose", body, status=201)

    return _propose


@pytest.fixture
def approve(reviewer_api):
    def _approve(candidate, scope_id=SCOPE):
        return reviewer_api.ok(
            "/v1/artifact-candidates/approve",
            {
                "scope_id": scope_id,
                "candidate_id": candidate["candidate_id"],
                "expected_version": candidate["version"],
            },
        )

    return _approve


@pytest.fixture
def reject(reviewer_api):
    def _reject(candidate, reason="Not a lesson, just a log line.", scope_id=SCOPE):
        return reviewer_api.ok(
            "/v1/artifact-candidates/reject",
            {
                "scope_id": scope_id,
                "candidate_id": candidate["candidate_id"],
                "expected_version": candidate["version"],
                "reason": reason,
            },
        )

    return _reject


@pytest.fixture
def reviewer_group(transactional_db):
    """The reviewer group and its permissions, as their data migration makes them, for a
    transactional test: the flush after an earlier transactional test took them away.
    Made with the live app registry (the migration's own function, given it, would mark
    the apps as having no models and so stop their permissions being made again)."""
    from importlib import import_module

    from django.apps import apps
    from django.contrib.auth.management import create_permissions
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.management import create_contenttypes

    migration = import_module("experience.migrations.0003_reviewer_group")
    for label in sorted({app for app, _ in migration.PERMISSIONS}):
        config = apps.get_app_config(label)
        create_contenttypes(config, verbosity=0)
        create_permissions(config, verbosity=0)
    group, _ = Group.objects.get_or_create(name=migration.GROUP)
    for app_label, codename in migration.PERMISSIONS:
        group.permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
