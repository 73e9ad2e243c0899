"""No hash left over a redacted secret (issue 38, item 2): an artifact revision that held a
secret when it was written (by an earlier release, or in an imported archive) is hashed
over its redacted content once ``redact_secrets`` redacts it, and every later revision of
its artifact is re-linked, so nobody holding the database, a backup or an archive can test
guesses of the redacted value against a stored hash. The chain still verifies, citations
still resolve, and the next write links to the new hashes."""

import io
import itertools

import pytest
from django.core.management import CommandError, call_command

from powercontext import redaction_log
from powercontext.artifacts import REVISIONS, content_digest
from powercontext.models import ArtifactRevision
from powercontext.stored_secrets import revision_key
from tests.powercontext.redaction import secret_samples as s
from tests.powercontext.redaction.secret_samples import findings, written_before_redaction

pytestmark = pytest.mark.django_db
SCOPE = "scope-a"
MARKER = "[redacted:password]"
# What an attacker would try: a dictionary of likely passwords, the real one among them.
GUESSES = ["hunter2", "Autumn2025!", s.PASSWORD, "correct horse battery staple"]


def revisions():
    rows = ArtifactRevision.objects.filter(scope_id=SCOPE, family="memory")
    return list(rows.order_by("revision"))


def confirmed_guesses():
    """The guesses some stored hash confirms: a redacted revision's content with the guess
    put back in place of its marker, hashed as the chain hashes it."""
    stored = set()
    for revision in revisions():
        stored |= {revision.revision_hash, revision.previous_hash}
    confirmed = set()
    for revision in revisions():
        if MARKER not in revision.content:
            continue
        for guess in GUESSES:
            original = revision.content.replace(MARKER, guess)
            # Its own hash, or the next revision's link to it.
            if REVISIONS.link(revision.previous_hash, original) in stored:
                confirmed.add(guess)
    return confirmed


@pytest.fixture
def history(remember, monkeypatch):
    """A scope's Memory history whose second revision's change reason holds a password,
    as an earlier release stored it, with revisions written after it."""
    remember("Deploys go through the blue green pipeline.")
    written_before_redaction(monkeypatch)
    remember("The staging database is on db-staging-2.", reason=f"password={s.PASSWORD}")
    monkeypatch.undo()
    remember("Releases are cut on Tuesdays.", reason="from the runbook")
    remember("The release captain rotates weekly.", reason="from the runbook")
    assert s.PASSWORD in revisions()[1].content
    assert findings() == {}


def test_redact_secrets_leaves_no_hash_that_confirms_a_guess(history):
    call_command("redact_secrets", stdout=io.StringIO())

    stored = revisions()
    assert MARKER in stored[1].content
    assert s.PASSWORD not in stored[1].content
    assert confirmed_guesses() == set()
    # The chain holds, re-linked from the redacted revision on.
    for before, after in itertools.pairwise(stored):
        assert after.previous_hash == before.revision_hash
    assert stored[1].revision_hash == REVISIONS.link(stored[1].previous_hash, stored[1].content)
    assert findings() == {}


def test_the_next_write_links_to_the_new_hashes(api, remember, history):
    call_command("redact_secrets", stdout=io.StringIO())
    head = revisions()[-1]

    remember("Hotfixes skip the release train.")

    newest = revisions()[-1]
    assert newest.revision == head.revision + 1
    assert newest.previous_hash == head.revision_hash
    assert findings() == {}
    listed = api.ok("/v1/memory/entries/list", {"scope_id": SCOPE})
    assert len(listed["entries"]) == 5


def test_a_revision_redacted_by_an_earlier_release_is_resealed(history):
    # What the earlier release left: the content redacted and recorded, the hash (and the
    # next revision's link) still over the original.
    revision = revisions()[1]
    redacted = revision.content.replace(s.PASSWORD, MARKER)
    ArtifactRevision.objects.filter(pk=revision.pk).update(content=redacted)
    redaction_log.record_append(
        scope_id=SCOPE,
        target=redaction_log.ARTIFACT_REVISION,
        target_key=revision_key("memory", revision.artifact_id, revision.revision),
        action=redaction_log.REDACT,
        reason="redact_secrets",
        kinds={"password": 1},
        digest=content_digest(redacted),
    )
    assert findings() == {}
    assert confirmed_guesses() == {s.PASSWORD}  # the oracle this test removes

    out = io.StringIO()
    call_command("redact_secrets", stdout=out)

    assert "1 revision(s) redacted by an earlier release re-sealed" in out.getvalue()
    assert confirmed_guesses() == set()
    assert findings() == {}
    # Nothing left to re-seal.
    again = io.StringIO()
    call_command("redact_secrets", stdout=again)
    assert "re-sealed" not in again.getvalue()


def test_an_altered_later_revision_stops_the_reseal_and_is_named(history):
    later = revisions()[2]
    ArtifactRevision.objects.filter(pk=later.pk).update(
        content=later.content.replace("from the runbook", "from the wiki")
    )
    before = [(r.content, r.previous_hash, r.revision_hash) for r in revisions()]
    out = io.StringIO()

    with pytest.raises(CommandError, match="fail verification"):
        call_command("redact_secrets", stdout=out)

    assert f"[{SCOPE}] memory/{later.artifact_id}@3: fails verification" in out.getvalue()
    # Nothing of the artifact was rewritten: re-sealing would launder the alteration.
    assert [(r.content, r.previous_hash, r.revision_hash) for r in revisions()] == before
