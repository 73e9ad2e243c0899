"""The home page at ``/``: status, recent agents (counts only for anonymous visitors),
links, and connect commands with this server's URL."""

import pytest
from django.contrib.auth import get_user_model

from powercontext import sources

pytestmark = pytest.mark.django_db

SCOPE = "git:example.com/acme/secret-widgets"
PROMPT = "Please rotate the staging database password hunter2 tonight"


def capture(source_id, agent, session, scope=SCOPE, prompt=PROMPT):
    sources.source_capture(
        scope_id=scope,
        source_id=source_id,
        content=prompt,
        metadata={"agent": agent, "event": "UserPromptSubmit", "session_id": session},
    )


@pytest.fixture
def captured(db):
    capture("prompt:1", "codex", "s-codex-1")
    capture("prompt:2", "codex", "s-codex-1")
    capture("prompt:3", "claude", "s-claude-1", scope="local:0123abcd")


def test_anonymous_visitor_sees_counts_but_no_scope_or_prompt(client, captured):
    page = client.get("/")
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    body = page.content.decode()
    assert "ready" in body
    assert "2</strong>Codex prompts" in body
    assert "1</strong>Claude Code prompt<" in body
    assert "2</strong>sessions" in body
    assert "2</strong>projects" in body
    for secret in (SCOPE, "local:0123abcd", "hunter2", "rotate the staging", "s-codex-1"):
        assert secret not in body


def test_staff_sees_the_scopes_with_counts_but_never_the_prompt(client, captured):
    staff = get_user_model().objects.create_user("rita", password="x", is_staff=True)
    client.force_login(staff)
    body = client.get("/").content.decode()
    assert SCOPE in body
    assert "local:0123abcd" in body
    assert "hunter2" not in body


def test_old_captures_are_not_counted(client, captured):
    from datetime import timedelta

    from django.utils import timezone

    from powercontext.models import SourceRecord

    SourceRecord.objects.update(created_at=timezone.now() - timedelta(hours=2))
    body = client.get("/").content.decode()
    assert "No agent has sent a prompt in the last hour." in body


def test_links_and_connect_commands_carry_this_servers_url(client, settings):
    settings.POWERCONTEXT_API_TOKEN = "t0ken-never-shown"
    # With a token, a name other than loopback is served once the operator lists it.
    settings.POWERCONTEXT_ALLOWED_HOSTS = ["pc.example.com"]
    page = client.get("/", HTTP_HOST="pc.example.com:8443", secure=True)
    body = page.content.decode()
    for href in ('href="/admin/"', 'href="/api/docs/"', 'href="/metrics"'):
        assert href in body
    assert "claude mcp add --transport http powercontext https://pc.example.com:8443/mcp" in body
    assert (
        "codex mcp add powercontext --url https://pc.example.com:8443/mcp"
        " --bearer-token-env-var POWERCONTEXT_API_TOKEN" in body
    )
    assert "export POWERCONTEXT_URL=https://pc.example.com:8443" in body
    assert "claude plugin install powercontext@powercontext" in body
    assert "t0ken-never-shown" not in body
    # A remote visitor gets a placeholder, not this machine's checkout path.
    assert str(settings.BASE_DIR) not in body


def test_a_local_visitor_gets_this_checkouts_path(client, settings):
    body = client.get("/", HTTP_HOST="127.0.0.1:8000").content.decode()
    assert f"claude plugin marketplace add {settings.BASE_DIR}" in body
    assert "export POWERCONTEXT_URL" not in body  # the default URL needs nothing


def test_the_admins_view_site_link_lands_here(client):
    staff = get_user_model().objects.create_superuser("root", password="x")
    client.force_login(staff)
    assert 'href="/"' in client.get("/admin/").content.decode()
    assert client.get("/").status_code == 200
