"""Keying what an earlier release stored as the hook sent it while prompts keep being
captured (``powercontext.legacy_capture_ids``): the re-link rewrites the scope's journal
hashes, and a capture racing it must link to the new ones, never to a hash being
rewritten. Each side runs in its own thread and connection, as the server and
``redact_secrets`` would."""

import hashlib
import threading

import pytest
from django.db import connections

from powercontext import sources
from powercontext.capture_ids import KEYED_PREFIX
from powercontext.legacy_capture_ids import sources_key
from powercontext.models import SourceRecord
from powercontext.sources import source_capture
from tests.powercontext.redaction.secret_samples import findings

SCOPE = "git:example.com/acme/keying"
LEGACY = 60
CAPTURES = 30


def legacy_id(number: int) -> str:
    return "prompt:" + hashlib.sha256(f"prompt {number}".encode()).hexdigest()


def in_thread(work, errors, barrier):
    def run():
        try:
            barrier.wait(timeout=30)
            work()
        except Exception as error:  # reported by the test
            errors.append(error)
        finally:
            connections.close_all()

    return threading.Thread(target=run)


@pytest.mark.django_db(transaction=True)
def test_captures_racing_the_keying_link_to_the_new_hashes(monkeypatch):
    with monkeypatch.context() as earlier:
        earlier.setattr(sources, "stored_source_id", lambda source_id: source_id)
        for number in range(LEGACY):
            source_capture(scope_id=SCOPE, source_id=legacy_id(number), content=f"prompt {number}")
    reports, errors = [], []
    barrier = threading.Barrier(2)

    def capture_more():
        for number in range(CAPTURES):
            source_capture(scope_id=SCOPE, source_id=f"notes/{number}", content=f"note {number}")

    threads = [
        in_thread(lambda: reports.append(sources_key()), errors, barrier),
        in_thread(capture_more, errors, barrier),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert errors == []
    assert reports[0].rows == LEGACY
    assert reports[0].unverified == []
    journal = list(SourceRecord.objects.filter(scope_id=SCOPE).order_by("position"))
    assert [record.position for record in journal] == list(range(1, LEGACY + CAPTURES + 1))
    assert not any(record.source_id.startswith("prompt:") for record in journal)
    assert sum(record.source_id.startswith(KEYED_PREFIX) for record in journal) == LEGACY
    assert findings() == {}
