"""Marking entries for session start on the desk (issue 38): a reviewer marks an active
entry's current version, and only then does it open every session; staff who may only
look cannot mark; who and when are kept."""

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client

from memory.models import MemoryEntryVersion, SessionStartMark

pytestmark = pytest.mark.django_db
SCOPE = "scope-a"
CHANGELIST = "/admin/memory/memoryentryversion/"


def staff(username, group=None):
    user = get_user_model().objects.create_user(username, password="pw-0123456789", is_staff=True)
    if group:
        user.groups.add(Group.objects.get(name=group))
    client = Client()
    client.force_login(user)
    return client


def act(client, action, versions):
    return client.post(
        CHANGELIST,
        {"action": action, "_selected_action": [v.pk for v in versions], "index": 0},
        follow=True,
    )


def session_texts(api):
    pack = api.ok("/v1/context/session", {"scope_id": SCOPE})
    return pack["content"] or ""


def test_a_reviewer_marks_an_entry_for_session_start_on_the_desk(api, remember):
    written = remember("Run the tests with `make check`.", scope_id=SCOPE, kind="command")
    version = MemoryEntryVersion.objects.get(pk=written["entry"]["citation"]["entry_version_id"])
    assert "make check" not in session_texts(api)

    # The view permission alone (look, not decide): no mark action.
    onlookers = Group.objects.create(name="onlookers")
    onlookers.permissions.add(Permission.objects.get(codename="view_memoryentryversion"))
    onlooker = staff("olive", group="onlookers")
    page = onlooker.get(CHANGELIST)
    assert page.status_code == 200
    assert b"mark_for_session_start" not in page.content
    act(onlooker, "mark_for_session_start", [version])
    assert not SessionStartMark.objects.exists()

    reviewer = staff("rita", group="Experience reviewers")
    assert b"mark_for_session_start" in reviewer.get(CHANGELIST).content
    done = act(reviewer, "mark_for_session_start", [version])
    assert b"1 entry marked for session start." in done.content
    mark = SessionStartMark.objects.get()
    assert (mark.entry_version_id, mark.marked_by, mark.scope_id) == (version.pk, "rita", SCOPE)
    assert "make check" in session_texts(api)
    page = reviewer.get(f"{CHANGELIST}{quote(version.pk)}/change/")
    assert b"marked by rita" in page.content

    done = act(reviewer, "unmark_for_session_start", [version])
    assert b"1 entry taken off session start." in done.content
    assert "make check" not in session_texts(api)


def test_a_retired_entry_cannot_be_marked(api, remember):
    written = remember("Run the tests with `tox`.", scope_id=SCOPE, kind="command")
    api.ok(
        "/v1/memory/entries/retire", {"scope_id": SCOPE, "citation": written["entry"]["citation"]}
    )
    version = MemoryEntryVersion.objects.get(pk=written["entry"]["citation"]["entry_version_id"])
    reviewer = staff("rita", group="Experience reviewers")
    done = act(reviewer, "mark_for_session_start", [version])
    assert b"only an active entry" in done.content
    assert not SessionStartMark.objects.exists()
