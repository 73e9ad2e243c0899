import io

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from experience import services
from experience.tokens import reviewer_for_token

pytestmark = pytest.mark.django_db


def _run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("reviewer_token", *args, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


def test_create_prints_a_working_token():
    token, err = _run("rita", "--create")
    assert "Created user rita" in err
    assert reviewer_for_token(token).username == "rita"


def test_a_created_reviewer_has_no_password_and_may_review(django_user_model):
    _, err = _run("rita", "--create")
    assert "may not decide" not in err
    user = django_user_model.objects.get(username="rita")
    assert not user.has_usable_password()
    assert services.can_review(user)


def test_granting_the_group_to_an_existing_user_is_seen_at_once(django_user_model):
    user = django_user_model.objects.create_user("sam")
    assert not services.reviewer_token_issue(username="sam").can_review
    user.groups.add(Group.objects.get(name=services.REVIEWER_GROUP))
    assert services.reviewer_token_issue(username="sam").can_review


def test_unknown_user_without_create_fails():
    with pytest.raises(CommandError, match="--create"):
        _run("nobody")


def test_user_without_permission_gets_a_warning(django_user_model):
    django_user_model.objects.create_user("sam")
    token, err = _run("sam")
    assert "may not decide" in err
    assert reviewer_for_token(token).username == "sam"


def test_revoke():
    token, _ = _run("rita", "--create")
    _run("rita", "--revoke")
    assert reviewer_for_token(token) is None
    with pytest.raises(CommandError):
        _run("rita", "--revoke")
