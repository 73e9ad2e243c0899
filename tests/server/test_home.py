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


def test_a_visitor_from_another_machine_sees_the_status_and_commands_but_no_counts(
    client, settings, captured
):
    settings.POWERCONTEXT_API_TOKEN = "t0ken-never-shown"
    settings.POWERCONTEXT_ALLOWED_HOSTS = ["pc.example.com"]
    page = client.get("/", HTTP_HOST="pc.example.com", REMOTE_ADDR="192.0.2.7")
    body = page.content.decode()
    assert page.status_code == 200
    assert "Status:" in body
    assert "codex mcp add powercontext --url http://pc.example.com/mcp" in body
    assert "Codex prompt" not in body
    assert "session" not in body
    assert "Shown to visitors on this machine" in body
    # The same visitor signed in as staff sees them.
    staff = get_user_model().objects.create_user("rita", password="x", is_staff=True)
    client.force_login(staff)
    body = client.get("/", HTTP_HOST="pc.example.com", REMOTE_ADDR="192.0.2.7").content.decode()
    assert "2</strong>Codex prompts" in body


def test_the_counts_never_read_a_captured_payload(client, captured):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        body = client.get("/").content.decode()
    assert "2</strong>Codex prompts" in body
    journal = [query["sql"] for query in queries if "powercontext_sourcerecord" in query["sql"]]
    assert journal, "the counts come from the journal's table"
    assert not any("payload" in sql for sql in journal), journal


def test_a_capture_records_its_agent_kind_and_a_session_digest(captured):
    from powercontext.models import SourceRecord

    rows = {
        row.source_id: (row.agent, row.session_key) for row in SourceRecord.objects.order_by("pk")
    }
    assert rows["prompt:1"][0] == rows["prompt:2"][0] == "codex"
    assert rows["prompt:1"][1] == rows["prompt:2"][1] != rows["prompt:3"][1]
    assert rows["prompt:3"][0] == "claude"
    assert len(rows["prompt:1"][1]) == 16
    assert "s-codex-1" not in rows["prompt:1"][1]
    assert sources.capture_agent({"agent": "vim"}) == {"agent": "other", "session_key": ""}
    assert sources.capture_agent(None) == {"agent": "other", "session_key": ""}


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_columns_of_captures_made_before_it():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("powercontext", "0004_source_journal_chain")]
    after = [("powercontext", "0005_source_agent_columns")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("powercontext", "SourceRecord")
    payloads = [
        '{"content":"a","metadata":{"agent":"codex","session_id":"s-1"}}',
        '{"content":"b","metadata":{"agent":"claude"}}',
        '{"content":"c","metadata":{}}',
        "not json",
    ]
    for position, payload in enumerate(payloads, start=1):
        old.objects.create(
            scope_id="s",
            source_type="content",
            source_id=f"p-{position}",
            position=position,
            payload=payload,
            payload_hash="0" * 64,
        )
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    from powercontext.models import SourceRecord

    rows = list(SourceRecord.objects.order_by("position").values_list("agent", "session_key"))
    # Later migrations too, as the session's database had them: a test after this one
    # (readiness) fails on a migration left pending.
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert [agent for agent, _ in rows] == ["codex", "claude", "other", "other"]
    assert (
        rows[0][1] == sources.capture_agent({"agent": "codex", "session_id": "s-1"})["session_key"]
    )
    assert [key for _, key in rows[1:]] == ["", "", ""]


def test_prompts_without_an_agent_are_named_and_explained_beside_the_sessions(client, captured):
    # Captured through the API (no hook): no agent, no session.
    for n in range(3):
        sources.source_capture(scope_id=SCOPE, source_id=f"api:{n}", content=PROMPT)
    body = client.get("/").content.decode()
    assert "another client" not in body
    assert "3</strong>prompts from other clients" in body
    assert "2</strong>sessions" in body
    assert "Of these 6 prompts, 3 came from agents' hooks" in body


def test_no_session_count_when_no_prompt_came_from_a_hook(client, db):
    sources.source_capture(scope_id=SCOPE, source_id="api:1", content=PROMPT)
    body = client.get("/").content.decode()
    assert "1</strong>prompt from other clients" in body
    assert "</strong>session" not in body
    assert "None of these prompts came from an agent" in body
