"""A rebuild never launders altered authoritative rows (issue 14.1): a Memory version or
an Experience revision whose hash no longer recomputes is left out of every projection
and index, named by id (never by content), and the command exits non-zero; the write
path and start-up's index rebuild refuse it too."""

import io
import json
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

from experience import services as experience_services
from experience.models import ExperienceTermStat
from experience.values import Proposal
from memory.models import MemoryActiveEntry, MemoryEntryVersion, MemoryTermStat
from powercontext import startup
from powercontext.models import ArtifactHead, ArtifactRevision
from powercontext.search.query import Query
from tests.api_calls import search_texts
from tests.conftest import sqlite_only
from tests.experience.conftest import SOURCE, capture_source, proposal

pytestmark = pytest.mark.django_db
REPO_ROOT = Path(__file__).resolve().parents[2]
FORGED = "Forged instruction zebracorn"


def rebuild(*args):
    """(stdout, CommandError message or None)."""
    out = io.StringIO()
    try:
        call_command("rebuild_index", *args, stdout=out)
    except CommandError as error:
        return out.getvalue(), str(error)
    return out.getvalue(), None


def check_fails():
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("check_integrity", stdout=out)
    return out.getvalue()


def pack(api, query, scope_id="scope-a"):
    return json.dumps(api.ok("/v1/context/prepare", {"scope_id": scope_id, "query": query}))


@pytest.fixture
def tampered(remember):
    """Five entries; one's version text edited in the database and its projection row
    deleted, as issue 14 did it."""
    entries = [remember(f"Run make target{index} before pushing")["entry"] for index in range(5)]
    remember("Deploys use the blue green pipeline", scope_id="scope-b")
    victim = entries[2]["citation"]
    MemoryEntryVersion.objects.filter(entry_version_id=victim["entry_version_id"]).update(
        text=FORGED
    )
    MemoryActiveEntry.objects.filter(entry_id=victim["entry_id"]).delete()
    return victim


def test_rebuild_leaves_a_tampered_version_out_and_exits_non_zero(tampered, api):
    output, error = rebuild()
    assert error is not None
    assert "1 authoritative row(s) fail verification" in error
    assert f"memory: [scope-a] {tampered['entry_version_id']}: fails verification" in output
    assert FORGED not in output + error
    assert "0 inserted, 0 updated, 0 deleted" in output
    assert "Rebuild left rows out: " in output
    assert not MemoryActiveEntry.objects.filter(entry_id=tampered["entry_id"]).exists()
    assert search_texts(api, "scope-a", "zebracorn", limit=50) == []
    recalled = pack(api, "zebracorn forged instruction before pushing target2")
    assert "target1" in recalled
    assert "zebracorn" not in recalled
    assert not MemoryTermStat.objects.filter(term="zebracorn").exists()
    assert len(search_texts(api, "scope-a", "pushing", limit=50)) == 4
    # The authoritative problem stays visible; nothing derived is left to repair.
    output = check_fails()
    assert "content_hash does not match its content" in output
    (projection_line,) = [line for line in output.splitlines() if "memory.projection" in line]
    assert projection_line.endswith(" ok")
    assert "projection row for a version" not in output


def test_a_still_projected_tampered_version_is_removed_from_search(remember, api):
    entry = remember("Run make lint before pushing")["entry"]["citation"]
    MemoryEntryVersion.objects.filter(entry_version_id=entry["entry_version_id"]).update(
        text=FORGED
    )
    # Before the rebuild the old projection row still finds the entry (and serves the
    # altered text); the rebuild must take it out, not refresh it.
    output, error = rebuild()
    assert error is not None
    assert "1 deleted" in output
    assert search_texts(api, "scope-a", "lint", limit=50) == []
    assert search_texts(api, "scope-a", "zebracorn", limit=50) == []


def test_a_scoped_rebuild_reports_the_tampered_version_too(tampered):
    output, error = rebuild("--scope", "scope-a")
    assert error is not None
    assert tampered["entry_version_id"] in output
    assert rebuild("--scope", "scope-b")[1] is None


def test_altered_source_refs_fail_verification(remember, api):
    entry = remember("Run make lint before pushing")["entry"]["citation"]
    MemoryEntryVersion.objects.filter(entry_version_id=entry["entry_version_id"]).update(
        source_refs="not json"
    )
    output, error = rebuild()
    assert error is not None
    assert entry["entry_version_id"] in output
    assert search_texts(api, "scope-a", "lint", limit=50) == []


def test_reactivating_a_tampered_version_is_refused_and_writes_nothing(remember, api, client):
    entry = remember("Run make lint before pushing")["entry"]["citation"]
    api.ok("/v1/memory/entries/retire", {"scope_id": "scope-a", "citation": entry})
    MemoryEntryVersion.objects.filter(entry_version_id=entry["entry_version_id"]).update(
        text=FORGED
    )
    head = ArtifactHead.objects.get(scope_id="scope-a", family="memory").revision
    response = client.post(
        "/v1/memory/entries/reactivate",
        {"scope_id": "scope-a", "citation": entry},
        content_type="application/json",
    )
    assert response.status_code == 500
    body = response.json()["error"]
    assert body["code"] == "internal_error"
    assert "check_integrity" in body["message"]
    assert FORGED not in response.content.decode()
    assert ArtifactHead.objects.get(scope_id="scope-a", family="memory").revision == head
    assert search_texts(api, "scope-a", "zebracorn", limit=50) == []


@sqlite_only("drops the FTS5 table so that start-up rebuilds")
def test_startup_rebuild_of_a_missing_index_leaves_a_tampered_version_out(tampered, api, caplog):
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE memory_activeentry_fts")
    with caplog.at_level(logging.INFO, logger="powercontext.startup"):
        startup.ensure_indexes()
    assert search_texts(api, "scope-a", "zebracorn", limit=50) == []
    assert len(search_texts(api, "scope-a", "pushing", limit=50)) == 4
    assert f"[scope-a] {tampered['entry_version_id']}" in caplog.text
    assert FORGED not in caplog.text


# -- Experience ------------------------------------------------------------------------


@pytest.fixture
def reviewer(db):
    experience_services.reviewer_token_issue(username="rita", create=True)
    return get_user_model().objects.get(username="rita")


def _approve(scope_id, lesson, reviewer):
    capture_source(scope_id)
    candidate = experience_services.experience_propose(
        scope_id=scope_id,
        proposal=Proposal(**proposal(lesson)),
        source_refs=[SOURCE],
        artifact_refs=[],
    )
    return experience_services.candidate_approve(
        scope_id=scope_id,
        candidate_id=candidate.candidate_id,
        expected_version=1,
        reviewer=reviewer,
    ).result_artifact.as_payload()


def _forge_lesson(artifact):
    revision = ArtifactRevision.objects.get(
        family="experience", artifact_id=artifact["artifact_id"], revision=artifact["revision"]
    )
    revision.content = revision.content.replace("Pin the base image.", FORGED)
    revision.save(update_fields=["content"])


def _experience_hits(query, scope_id="scope-a"):
    from experience.selectors import experience_search_at
    from powercontext.search.analyzer import query_terms

    return [
        hit.lesson
        for hit in experience_search_at(
            scope_id=scope_id, query=Query(query, query_terms(query)), limit=8
        )
    ]


def test_rebuild_leaves_a_tampered_experience_revision_out(reviewer, api):
    forged = _approve("scope-a", "Pin the base image.", reviewer)
    _approve("scope-a", "Rotate the signing key yearly.", reviewer)
    _forge_lesson(forged)
    output, error = rebuild()
    assert error is not None
    where = f"{forged['artifact_id']}@{forged['revision']}"
    assert f"experience: [scope-a] {where}: fails verification" in output
    assert FORGED not in output + error
    assert _experience_hits("zebracorn forged instruction") == []
    assert _experience_hits("signing key") == ["Rotate the signing key yearly."]
    assert not ExperienceTermStat.objects.filter(term="zebracorn").exists()
    head = ArtifactHead.objects.get(artifact_id=forged["artifact_id"])
    assert head.searchable_text == ""
    # Recounted from the one verified head only.
    assert ExperienceTermStat.objects.get(scope_id="scope-a", term="").documents == 1
    output = check_fails()
    assert "revision_hash does not match its content" in output
    assert "it may not be indexed" in output
    assert "indexed from it all the same" not in output


def test_check_integrity_flags_a_tampered_experience_revision_still_indexed(reviewer):
    forged = _approve("scope-a", "Pin the base image.", reviewer)
    _forge_lesson(forged)
    assert "indexed from it all the same" in check_fails()


# -- the real command --------------------------------------------------------------------


@pytest.mark.slow
@sqlite_only("edits the SQLite file of a fresh data directory")
def test_rebuild_index_exit_status_from_the_command_line(tmp_path):
    env = {
        **os.environ,
        "POWERCONTEXT_HOME": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "server.settings",
    }
    env.pop("POWERCONTEXT_DATABASE_URL", None)

    def manage(*args):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    seed = (
        "from memory.services import memory_remember as r\n"
        "for i in range(3): r(scope_id='s', kind='k', text=f'entry number {i}')"
    )
    assert manage("migrate", "--verbosity", "0").returncode == 0
    assert manage("shell", "-c", seed).returncode == 0
    healthy = manage("rebuild_index")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    with sqlite3.connect(tmp_path / "powercontext.sqlite3") as raw:
        (version_id,) = raw.execute(
            "SELECT entry_version_id FROM memory_memoryentryversion WHERE text = 'entry number 1'"
        ).fetchone()
        raw.execute(
            "UPDATE memory_memoryentryversion SET text = ? WHERE entry_version_id = ?",
            [FORGED, version_id],
        )
        raw.execute("DELETE FROM memory_memoryactiveentry WHERE entry_version_id = ?", [version_id])
    for _ in range(2):  # the second run is as firm as the first
        failed = manage("rebuild_index")
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert version_id in failed.stdout
        assert "fail verification" in failed.stderr
        assert len(failed.stderr.strip().splitlines()) == 1
        assert FORGED not in failed.stdout + failed.stderr
    with sqlite3.connect(tmp_path / "powercontext.sqlite3") as raw:
        assert raw.execute(
            "SELECT count(*) FROM memory_memoryactiveentry WHERE entry_version_id = ?",
            [version_id],
        ).fetchone() == (0,)
    assert manage("check_integrity").returncode == 1
