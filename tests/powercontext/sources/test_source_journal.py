"""The source journal: captures are stored without secrets or private spans, chained per
scope, and can be purged (by command or retention) while the chain still verifies and
any other change is still caught."""

import importlib
import io
from datetime import timedelta

import pytest
from django.apps import apps as django_apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from powercontext.models import RedactionRecord, SourceRecord
from powercontext.retention import Retention, purge_expired
from powercontext.sources import payload_digest, source_capture
from tests.api_calls import capture
from tests.powercontext.redaction import secret_samples as s
from tests.powercontext.redaction.secret_samples import findings, written_before_redaction

pytestmark = pytest.mark.django_db
SCOPE = "scope-a"
_chain = importlib.import_module("powercontext.migrations.0004_source_journal_chain")


def stored(source_id, scope_id=SCOPE):
    return SourceRecord.objects.get(scope_id=scope_id, source_id=source_id)


def test_a_captured_prompt_keeps_no_secret_and_the_answer_says_how_many(api):
    answer = capture(
        api,
        SCOPE,
        "p1",
        s.FIVE_KINDS_PROMPT,
        metadata={"agent": "codex", "note": f"token {s.GITHUB_TOKEN}"},
    )
    assert answer["position"] == 1
    # Seven: the GitHub token twice (in the remote's URL, and in the metadata).
    assert api.redacted == (
        "7; kinds=aws-access-key-id,aws-secret-key,github-token,openai-api-key,password,private-key"
    )
    assert "redacted" not in answer
    payload = stored("p1").payload
    for secret in s.FIVE_KINDS_SECRETS:
        assert secret not in payload
    assert "[redacted:aws-secret-key]" in payload
    assert "[redacted:github-token]" in payload  # in the metadata too
    # The same turn again (the hook's retry): the same position, nothing new stored.
    assert (
        capture(
            api,
            SCOPE,
            "p1",
            s.FIVE_KINDS_PROMPT,
            metadata={"agent": "codex", "note": f"token {s.GITHUB_TOKEN}"},
        )["position"]
        == 1
    )
    assert SourceRecord.objects.count() == 1


def test_private_spans_are_never_captured_whatever_the_client(api):
    capture(api, SCOPE, "p1", "Fix the build.<private> my home address is 1 Elm St</private>")
    assert api.redacted == "1; kinds=private"
    assert "Elm" not in stored("p1").payload
    assert '"content":"Fix the build."' in stored("p1").payload


def test_the_journal_verifies_as_a_chain_per_scope(api):
    for number in range(3):
        capture(api, SCOPE, f"p{number}", f"prompt {number}")
        capture(api, "scope-b", f"q{number}", f"other prompt {number}")
    assert findings() == {}
    first, second = stored("p0"), stored("p1")
    assert first.previous_hash == "0" * 64
    assert second.previous_hash == first.entry_hash
    assert len(first.salt) == 64
    assert len(first.commitment) == 64


def test_a_purge_keeps_the_chain_verifying_and_leaves_no_content(api):
    for number in range(3):
        capture(api, SCOPE, f"p{number}", f"prompt number {number} about the importer")
    before = stored("p1")
    out = io.StringIO()
    call_command(
        "purge_sources", "--scope", SCOPE, "--position", "2", "--reason", "asked", stdout=out
    )
    assert "1 captured source(s) purged." in out.getvalue()
    # It says plainly what it cannot reach (issue 38).
    assert "backups (manage.py backup" in out.getvalue()
    assert "outside this command's reach" in out.getvalue()
    purged = stored("p1")
    assert (purged.payload, purged.payload_hash, purged.salt) == ("", "", "")
    # Its place in the journal is what it was.
    assert (purged.position, purged.commitment, purged.entry_hash) == (
        before.position,
        before.commitment,
        before.entry_hash,
    )
    record = RedactionRecord.objects.get()
    assert (record.action, record.reason, record.target_key) == ("purge", "asked", "content:p1#2")
    assert findings() == {}
    # A retry of the purged id answers its position; prepare reads around the gap.
    assert capture(api, SCOPE, "p1", "prompt number 1 about the importer")["position"] == 2
    prepared = api.ok(
        "/v1/context/prepare", {"scope_id": SCOPE, "query": "importer", "max_bytes": 8000}
    )
    assert prepared["status"] == "empty"
    # Purging again changes nothing and adds no record.
    call_command("purge_sources", "--scope", SCOPE, "--position", "2", stdout=io.StringIO())
    assert RedactionRecord.objects.count() == 1


@pytest.mark.parametrize(
    ("damage", "check", "message"),
    [
        (
            lambda: SourceRecord.objects.filter(source_id="p0").update(payload='{"content":"x"}'),
            "source.journal",
            "payload does not match its commitment",
        ),
        (
            lambda: SourceRecord.objects.filter(source_id="p1").update(
                payload='{"content":"back"}', payload_hash=payload_digest('{"content":"back"}')
            ),
            "source.journal",
            "purged, yet it holds a payload",
        ),
        (
            lambda: RedactionRecord.objects.all().delete(),
            "source.journal",
            "payload was erased without a redaction record",
        ),
        (
            lambda: RedactionRecord.objects.update(reason="retention"),
            "redaction.log",
            "record_hash does not match its fields",
        ),
        (
            lambda: SourceRecord.objects.filter(source_id="p2").delete(),
            "source.journal",
            "expected position 3 here (gap)",
        ),
        (
            lambda: SourceRecord.objects.filter(source_id="p2").update(source_id="forged"),
            "source.journal",
            "entry_hash does not match the entry",
        ),
        (
            # Erasing an entry without the command: the salt goes, no record says why.
            lambda: SourceRecord.objects.filter(source_id="p0").update(
                payload="", payload_hash="", salt=""
            ),
            "source.journal",
            "payload was erased without a redaction record",
        ),
    ],
)
def test_tampering_after_a_purge_is_still_caught(api, damage, check, message):
    for number in range(4):
        capture(api, SCOPE, f"p{number}", f"prompt {number}")
    call_command("purge_sources", "--scope", SCOPE, "--position", "2", stdout=io.StringIO())
    assert findings() == {}
    damage()
    found = findings()
    assert any(message in finding for finding in found.get(check, [])), found
    with pytest.raises(CommandError, match="Integrity check failed"):
        call_command("check_integrity", stdout=io.StringIO())


def test_purge_older_than_and_dry_run(api):
    for number in range(3):
        capture(api, SCOPE, f"p{number}", f"prompt {number}")
    old = timezone.now() - timedelta(days=10)
    SourceRecord.objects.filter(source_id__in=["p0", "p1"]).update(created_at=old)
    out = io.StringIO()
    call_command("purge_sources", "--older-than", "7", "--dry-run", stdout=out)
    assert "2 captured source(s) would be purged." in out.getvalue()
    assert not SourceRecord.objects.filter(payload="").exists()
    call_command("purge_sources", "--older-than", "7", stdout=out)
    assert set(SourceRecord.objects.filter(payload="").values_list("source_id", flat=True)) == {
        "p0",
        "p1",
    }
    assert findings() == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Say what to purge"),
        (("--position", "1"), "--position needs --scope"),
        (("--scope", SCOPE, "--position", "1", "--older-than", "3"), "Say what to purge"),
        (("--older-than", "-1"), "must not be negative"),
        (("--scope", "nowhere", "--older-than", "1"), "Unknown scope"),
    ],
)
def test_purge_sources_refuses_unclear_requests(api, args, message):
    capture(api, SCOPE, "p0", "prompt")
    with pytest.raises(CommandError, match=message):
        call_command("purge_sources", *args, stdout=io.StringIO())


def test_retention_purges_what_is_past_it_and_nothing_else(api):
    for number in range(3):
        capture(api, SCOPE, f"p{number}", f"prompt {number}")
    SourceRecord.objects.filter(source_id="p0").update(
        created_at=timezone.now() - timedelta(days=31)
    )
    assert purge_expired(30).entries == 1
    assert stored("p0").payload == ""
    assert stored("p1").payload != ""
    assert RedactionRecord.objects.get().reason == "retention: 30 days"
    assert findings() == {}


@pytest.mark.django_db(transaction=True)
def test_serve_s_retention_task_runs_a_pass_and_stops(api):
    capture(api, SCOPE, "p0", "prompt")
    SourceRecord.objects.update(created_at=timezone.now() - timedelta(days=3))
    task = Retention(days=2, every=3600)
    task.start()
    try:
        deadline = timezone.now() + timedelta(seconds=20)
        while stored("p0").payload and timezone.now() < deadline:
            connection.close()
    finally:
        task.stop()
    assert stored("p0").payload == ""
    assert not task._thread.is_alive()


def test_retention_zero_starts_no_task():
    task = Retention(days=0)
    task.start()
    assert not task._thread.is_alive()
    task.stop()


def test_the_migration_chains_a_journal_written_before_it(api, monkeypatch):
    written_before_redaction(monkeypatch)
    capture(api, SCOPE, "p0", f"old prompt with {s.GITHUB_TOKEN}")
    capture(api, SCOPE, "p1", "old prompt two")
    capture(api, "scope-b", "q0", "old prompt in b")
    # As an earlier release left them: no salt, commitment or links.
    SourceRecord.objects.update(salt="", commitment="", previous_hash="", entry_hash="")
    assert "source.journal" in findings()

    class Editor:
        connection = connection

    _chain.chain_existing(django_apps, Editor())
    assert findings() == {}
    assert s.GITHUB_TOKEN in stored("p0").payload  # the migration redacts nothing...
    monkeypatch.undo()
    out = io.StringIO()
    call_command("redact_secrets", stdout=out)  # ...redact_secrets does
    assert "captured sources: 1 row(s) redacted (github-token 1)" in out.getvalue()
    assert s.GITHUB_TOKEN not in stored("p0").payload
    assert stored("p0").salt == ""
    assert findings() == {}


def test_capture_redacts_through_the_service_too():
    captured = source_capture(scope_id=SCOPE, source_id="p0", content=f"key {s.STRIPE_KEY}")
    assert captured.redacted == {"stripe-key": 1}
    assert s.STRIPE_KEY not in stored("p0").payload
