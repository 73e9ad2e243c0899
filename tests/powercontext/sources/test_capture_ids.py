"""No guess oracle (issue 38, item 2): the hook names a capture ``prompt:`` + sha256 over
the prompt as typed, secrets included. Stored or exported as sent, that id confirms a
guess of a redacted password offline; stored keyed (``powercontext.capture_ids``) it
does not, and captures stay idempotent and citable by the id as sent."""

import io
import json

import pytest
from django.core.management import call_command

from hooks.powercontext_hook import capture_source_id
from powercontext.capture_ids import KEYED_PREFIX, stored_source_id
from powercontext.models import SourceRecord
from powercontext.selectors import source_get
from tests.api_calls import capture

pytestmark = pytest.mark.django_db
SCOPE = "git:example.com/acme/guess"
SESSION = "019a-session"
TURN = "turn_id:7"
# What the hook sends beside each captured prompt.
METADATA = {"agent": "codex", "session_id": SESSION, "turn_id": "7"}
PASSWORD = "Autumn2025!"
TYPED = "connect with password={} to the staging db"


def guesses():
    # The attacker's list: the right password among wrong ones.
    return ["Hunter2024", "Password1", PASSWORD, "Winter2024!"]


def confirmed(values: str) -> list[str]:
    """The guesses whose hook-style digest appears anywhere in ``values``."""
    found = []
    for guess in guesses():
        digest = capture_source_id(SCOPE, SESSION, TURN, TYPED.format(guess))
        if digest in values or digest.split(":", 1)[1] in values:
            found.append(guess)
    return found


def test_a_guess_cannot_be_confirmed_from_what_is_stored_or_exported(api, tmp_path):
    sent = capture_source_id(SCOPE, SESSION, TURN, TYPED.format(PASSWORD))
    answer = capture(api, SCOPE, sent, TYPED.format(PASSWORD), metadata=METADATA)
    # The answer names the id as sent; the redaction took the password.
    assert answer["source"]["source_id"] == sent
    record = SourceRecord.objects.get(scope_id=SCOPE)
    assert PASSWORD not in record.payload
    assert record.source_id.startswith(KEYED_PREFIX)
    stored_values = json.dumps(list(SourceRecord.objects.values_list()), default=str)
    assert confirmed(stored_values) == []
    call_command("export", out=tmp_path / "archive.jsonl", stdout=io.StringIO())
    assert confirmed((tmp_path / "archive.jsonl").read_text()) == []
    # The attacker's method works on the id as the hook sent it: the test can fail.
    assert confirmed(sent) == [PASSWORD]


def test_a_keyed_capture_stays_idempotent_and_citable_by_the_id_sent(api):
    sent = capture_source_id(SCOPE, SESSION, TURN, TYPED.format(PASSWORD))
    first = capture(api, SCOPE, sent, TYPED.format(PASSWORD), metadata=METADATA)
    again = capture(api, SCOPE, sent, TYPED.format(PASSWORD), metadata=METADATA)
    assert first["position"] == again["position"] == 1
    assert SourceRecord.objects.filter(scope_id=SCOPE).count() == 1
    found = source_get(scope_id=SCOPE, name="content", source_id=sent)
    assert found is not None
    assert found.position == 1
    # A caller-chosen name is stored as sent.
    assert stored_source_id("notes/release-1") == "notes/release-1"
    assert stored_source_id(sent) == found.source_id
