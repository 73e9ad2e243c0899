"""No guess oracle in what cites a capture (issue 38, item 2). The hook names a capture
``prompt:`` + sha256 over the prompt as typed, secrets included; the capture is stored
keyed (``powercontext.capture_ids``), and so is every citation of it: an Experience
proposal citing the id as sent, and what an earlier release stored as sent (the journal
entry, the redaction log's records naming it, candidate versions and approved
revisions), which ``redact_secrets`` keys and re-links. The chains still verify, the id
as sent still finds its capture, and the next capture and purge link to the new hashes."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from experience import services as experience_services
from hooks.powercontext_hook import capture_source_id
from powercontext import sources
from powercontext.capture_ids import KEYED_PREFIX
from powercontext.models import ArtifactRevision, RedactionRecord, SourceRecord
from powercontext.selectors import source_get
from tests.api_calls import capture
from tests.experience.conftest import proposal
from tests.powercontext.archive.test_archive import wipe
from tests.powercontext.redaction.secret_samples import findings
from tests.powercontext.sources.test_capture_ids import (
    METADATA,
    PASSWORD,
    SCOPE,
    SESSION,
    TURN,
    TYPED,
    confirmed,
)

pytestmark = pytest.mark.django_db
SENT = capture_source_id(SCOPE, SESSION, TURN, TYPED.format(PASSWORD))


def everything_stored() -> str:
    from experience.models import CandidateVersion

    tables = [SourceRecord, RedactionRecord, CandidateVersion, ArtifactRevision]
    return json.dumps([list(table.objects.values_list()) for table in tables], default=str)


def cite(api, reviewer_api, source_id):
    """Propose a lesson citing the capture ``source_id`` and approve it."""
    candidate = api.ok(
        "/v1/experience/propose",
        {
            "scope_id": SCOPE,
            "proposal": proposal(),
            "source_refs": [{"name": "content", "source_id": source_id}],
        },
        status=201,
    )
    reviewer_api.ok(
        "/v1/artifact-candidates/approve",
        {
            "scope_id": SCOPE,
            "candidate_id": candidate["candidate_id"],
            "expected_version": candidate["version"],
        },
    )
    return candidate


def test_a_proposal_citing_the_id_as_sent_stores_it_keyed(api, reviewer_api, tmp_path):
    capture(api, SCOPE, SENT, TYPED.format(PASSWORD), metadata=METADATA)
    candidate = cite(api, reviewer_api, SENT)

    cited = candidate["source_refs"][0]["source_id"]
    assert cited.startswith(KEYED_PREFIX)
    assert source_get(scope_id=SCOPE, name="content", source_id=cited) is not None
    assert confirmed(everything_stored()) == []
    call_command("export", out=tmp_path / "archive.jsonl", stdout=io.StringIO())
    assert confirmed((tmp_path / "archive.jsonl").read_text()) == []
    # The attacker's method works on the id as sent: the test can fail.
    assert confirmed(SENT) == [PASSWORD]


def test_a_reviewer_citing_the_id_as_sent_stores_it_keyed(api, reviewer_api):
    capture(api, SCOPE, SENT, TYPED.format(PASSWORD), metadata=METADATA)
    capture(api, SCOPE, "notes/first", "a note")
    candidate = api.ok(
        "/v1/experience/propose",
        {
            "scope_id": SCOPE,
            "proposal": proposal(),
            "source_refs": [{"name": "content", "source_id": "notes/first"}],
        },
        status=201,
    )
    revised = reviewer_api.ok(
        "/v1/artifact-candidates/revise",
        {
            "scope_id": SCOPE,
            "candidate_id": candidate["candidate_id"],
            "expected_version": 1,
            "proposal": proposal("Check the staging credentials first."),
            "source_refs": [{"name": "content", "source_id": SENT}],
        },
    )

    assert revised["source_refs"][0]["source_id"].startswith(KEYED_PREFIX)
    assert confirmed(everything_stored()) == []


@pytest.fixture
def earlier_release(api, reviewer_api, monkeypatch):
    """A scope as an earlier release left it: a capture stored under the id as sent,
    purged (its record names that id), later captures, and an approved lesson citing it."""
    monkeypatch.setattr(sources, "stored_source_id", lambda source_id: source_id)
    monkeypatch.setattr(experience_services, "stored_source_id", lambda source_id: source_id)
    monkeypatch.setattr(
        experience_services, "keyed_refs", lambda refs: (list(refs), 0), raising=False
    )
    capture(api, SCOPE, "notes/first", "a note captured before")
    capture(api, SCOPE, SENT, TYPED.format(PASSWORD), metadata=METADATA)
    capture(api, SCOPE, "notes/after", "a note captured after")
    cite(api, reviewer_api, SENT)
    call_command("purge_sources", scope=SCOPE, position=[2], stdout=io.StringIO())
    monkeypatch.undo()
    assert confirmed(everything_stored()) == [PASSWORD]
    assert findings() == {}


def test_redact_secrets_keys_what_an_earlier_release_stored(api, earlier_release):
    out = io.StringIO()
    call_command("redact_secrets", stdout=out)

    assert confirmed(everything_stored()) == []
    assert findings() == {}
    assert "capture ids stored as the hook sent them: 1 row(s)" in out.getvalue()
    journal = list(SourceRecord.objects.filter(scope_id=SCOPE).order_by("position"))
    assert journal[1].source_id.startswith(KEYED_PREFIX)
    # The id as sent still finds its (purged) capture; the others kept theirs.
    assert source_get(scope_id=SCOPE, name="content", source_id=SENT).position == 2
    assert [journal[0].source_id, journal[2].source_id] == ["notes/first", "notes/after"]
    # The next capture and purge link to the new hashes; a second run finds nothing.
    capture(api, SCOPE, "notes/next", "a note captured next")
    call_command("purge_sources", scope=SCOPE, position=[3], stdout=io.StringIO())
    assert findings() == {}
    again = io.StringIO()
    call_command("redact_secrets", stdout=again)
    assert "capture ids stored as the hook sent them: 0 row(s)" in again.getvalue()
    assert findings() == {}


def test_an_id_captured_again_since_keeps_both_entries_apart(api, earlier_release):
    # The same turn sent again after the upgrade: stored under the keyed id, beside the
    # entry an earlier release stored under the id as sent.
    capture(api, SCOPE, SENT, TYPED.format(PASSWORD), metadata=METADATA)
    keyed = SourceRecord.objects.get(scope_id=SCOPE, position=4).source_id

    call_command("redact_secrets", stdout=io.StringIO())

    older = SourceRecord.objects.get(scope_id=SCOPE, position=2).source_id
    assert older == f"{keyed}@2"
    assert confirmed(everything_stored()) == []
    assert findings() == {}
    assert source_get(scope_id=SCOPE, name="content", source_id=SENT).position == 4


def test_an_altered_journal_entry_stops_the_keying_and_nothing_is_rewritten(earlier_release):
    SourceRecord.objects.filter(scope_id=SCOPE, position=3).update(commitment="0" * 64)
    before = everything_stored()

    with pytest.raises(CommandError, match="fail verification"):
        call_command("redact_secrets", stdout=io.StringIO())

    journal = SourceRecord.objects.filter(scope_id=SCOPE).order_by("position")
    assert journal[1].source_id == SENT
    after = json.loads(everything_stored())
    # The journal as it was, and the log's records too (the revision citing the entry,
    # keyed on its own, appended one).
    assert after[0] == json.loads(before)[0]
    assert after[1][: len(json.loads(before)[1])] == json.loads(before)[1]


def test_an_import_keys_what_an_earlier_release_exported(earlier_release, tmp_path):
    archive = tmp_path / "earlier.jsonl"
    call_command("export", out=archive, stdout=io.StringIO())
    assert confirmed(archive.read_text()) == [PASSWORD]
    wipe()
    RedactionRecord.objects.all().delete()

    call_command("import", str(archive), stdout=io.StringIO())

    assert confirmed(everything_stored()) == []
    assert findings() == {}
    assert source_get(scope_id=SCOPE, name="content", source_id=SENT).position == 2
