"""Memory keeps no secret: remember and revise redact before they store, and
``manage.py redact_secrets`` redacts what an earlier release stored, with citations
that still resolve (to the redacted text), chains and hashes that still verify, and no
derived row (projection, full-text index, term counts, vector) still holding it."""

import io

import pytest
from django.core.management import CommandError, call_command

from memory.models import MemoryActiveEntry, MemoryEntryVersion, MemoryTermStat
from memory.search_index import MEMORY_INDEX
from memory.services import content_hash
from powercontext.models import ArtifactRevision, RedactionRecord
from powercontext.search import vectors
from tests.api_calls import search_texts
from tests.powercontext.redaction import secret_samples as s
from tests.powercontext.redaction.secret_samples import findings, written_before_redaction

pytestmark = pytest.mark.django_db
SCOPE = "scope-a"
NOTE = f"The staging database is reached with password={s.PASSWORD} and key {s.GITHUB_TOKEN}"
REDACTED_NOTE = (
    "The staging database is reached with password=[redacted:password] "
    "and key [redacted:github-token]"
)


def get(api, citation):
    return api.ok("/v1/memory/entries/get", {"scope_id": SCOPE, "citation": citation})


def holds_secret(*texts):
    return any(secret in text for text in texts for secret in (s.PASSWORD, s.GITHUB_TOKEN))


def test_remember_stores_the_marker_and_says_so(api, remember):
    written = remember(NOTE, reason=f"from the runbook, token {s.STRIPE_KEY}")
    assert written["entry"]["text"] == REDACTED_NOTE
    assert api.redacted == "3; kinds=github-token,password,stripe-key"
    assert "redacted" not in written
    version = MemoryEntryVersion.objects.get()
    assert version.text == REDACTED_NOTE
    changes = api.ok("/v1/memory/changes", {"scope_id": SCOPE, "since_revision": 0})
    assert s.STRIPE_KEY not in str(changes)
    assert not holds_secret(*ArtifactRevision.objects.values_list("content", flat=True))
    # The same note again is the same entry: a no-op, compared after redaction.
    again = remember(NOTE)
    assert again["entry"] is None
    assert api.redacted == "2; kinds=github-token,password"


def test_revise_retire_and_reactivate_redact_too(api, remember):
    citation = remember("The staging database needs a password.")["entry"]["citation"]
    revised = api.ok(
        "/v1/memory/entries/revise",
        {"scope_id": SCOPE, "citation": citation, "kind": "note", "text": NOTE},
    )
    assert revised["entry"]["text"] == REDACTED_NOTE
    assert api.redacted == "2; kinds=github-token,password"
    retired = api.ok(
        "/v1/memory/entries/retire",
        {
            "scope_id": SCOPE,
            "citation": revised["entry"]["citation"],
            "reason": f"rotated {s.AWS_KEY_ID}",
        },
    )
    assert api.redacted == "1; kinds=aws-access-key-id"
    assert "redacted" not in retired
    assert not any(
        s.AWS_KEY_ID in content
        for content in ArtifactRevision.objects.values_list("content", flat=True)
    )


def test_the_pack_never_carries_a_secret_remembered_today(api, remember):
    remember(NOTE)
    pack = api.ok(
        "/v1/context/prepare",
        {"scope_id": SCOPE, "query": "how do I reach the staging database?", "max_bytes": 8000},
    )
    assert pack["status"] == "ready"
    assert "[redacted:password]" in pack["content"]
    assert not holds_secret(pack["content"])


@pytest.fixture
def legacy(api, remember, monkeypatch):
    """A scope written by an earlier release: the secret is in a version, in a change
    reason, in the projection and its index, in the term counts and in a vector."""
    written_before_redaction(monkeypatch)
    kept = remember("Deploys go through the blue green pipeline.")["entry"]
    leaked = remember(NOTE, reason=f"pasted with {s.STRIPE_KEY}")["entry"]
    monkeypatch.undo()
    assert MemoryEntryVersion.objects.get(pk=leaked["citation"]["entry_version_id"]).text == NOTE
    assert search_texts(api, SCOPE, s.GITHUB_TOKEN, mode="fts") == [NOTE]
    assert findings() == {}
    return kept, leaked


def test_redact_secrets_redacts_old_versions_and_reasons_and_everything_derived(
    api, legacy, embedded_texts
):
    kept, leaked = legacy
    out = io.StringIO()
    call_command("redact_secrets", "--dry-run", stdout=out)
    assert "memory entry versions: 1 row(s) would be redacted (github-token 1, password 1)" in (
        out.getvalue()
    )
    assert MemoryEntryVersion.objects.filter(text=NOTE).exists()  # a dry run changes nothing

    call_command("redact_secrets", stdout=out)
    assert "memory revisions (change reasons): 1 row(s) redacted (stripe-key 1)" in (out.getvalue())
    # The citation resolves, to the redacted text, byte for byte, and so does the other.
    assert get(api, leaked["citation"])["text"] == REDACTED_NOTE
    assert get(api, kept["citation"]) == kept
    assert findings() == {}
    # Nothing derived holds it: projection, full-text index, term counts, vector.
    assert not holds_secret(*MemoryActiveEntry.objects.values_list("searchable_text", flat=True))
    assert search_texts(api, SCOPE, s.GITHUB_TOKEN, mode="fts") == []
    assert search_texts(api, SCOPE, "staging database", mode="fts") == [REDACTED_NOTE]
    terms = set(MemoryTermStat.objects.values_list("term", flat=True))
    assert not any(s.GITHUB_TOKEN.lower() in term or s.PASSWORD.lower() in term for term in terms)
    if vectors.readable(MEMORY_INDEX):
        # Its vector was dropped and computed again, from the redacted text. (A test on
        # OceanBase has no vector table: there DDL commits, so none is made inside the
        # test's transaction.)
        assert [REDACTED_NOTE] in embedded_texts
    assert not holds_secret(*ArtifactRevision.objects.values_list("content", flat=True))
    assert set(RedactionRecord.objects.values_list("target", flat=True)) == {
        "memory.version",
        "artifact.revision",
    }
    # A second run finds nothing left.
    call_command("redact_secrets", stdout=out)
    assert out.getvalue().rstrip().endswith("0 row(s) redacted.")
    call_command("check_integrity", stdout=io.StringIO())


def test_a_redacted_version_altered_afterwards_is_caught(api, legacy):
    _, leaked = legacy
    call_command("redact_secrets", stdout=io.StringIO())
    version = MemoryEntryVersion.objects.get(pk=leaked["citation"]["entry_version_id"])
    # Altered, and its hash recomputed to match: the redaction record still disagrees.
    altered = "The staging database is reached with password=hunter2"
    MemoryEntryVersion.objects.filter(pk=version.pk).update(
        text=altered,
        content_hash=content_hash(
            kind=version.kind, text=altered, source_refs=[], artifact_refs=[]
        ),
    )
    assert any(
        "content differs from what its redaction left" in finding
        for finding in findings()["memory.versions"]
    )


def test_a_redacted_change_reason_altered_afterwards_is_caught(legacy):
    call_command("redact_secrets", stdout=io.StringIO())
    revision = ArtifactRevision.objects.get(family="memory", revision=2)
    ArtifactRevision.objects.filter(pk=revision.pk).update(
        content=revision.content.replace("[redacted:stripe-key]", "nothing")
    )
    assert "memory/memory@2: revision_hash does not match its content" in str(
        findings()["artifact.chain"]
    )


def test_a_version_that_fails_verification_is_left_alone_and_named(legacy):
    _, leaked = legacy
    version_id = leaked["citation"]["entry_version_id"]
    MemoryEntryVersion.objects.filter(pk=version_id).update(text=NOTE + " (edited in the database)")
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 stored row"):
        call_command("redact_secrets", stdout=out)
    assert f"[{SCOPE}] {version_id}: fails verification, left alone" in out.getvalue()
    assert MemoryEntryVersion.objects.get(pk=version_id).text.startswith(NOTE)


def test_redact_secrets_refuses_an_unknown_scope(legacy):
    with pytest.raises(CommandError, match="Unknown scope"):
        call_command("redact_secrets", "--scope", "nowhere", stdout=io.StringIO())
