"""``manage.py check_integrity``: each kind of corruption, made on purpose, is caught."""

import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memory.models import (
    ManifestState,
    MemoryActiveEntry,
    MemoryEntryVersion,
    MemoryManifestRow,
    MemoryTermStat,
)
from powercontext.chain import canonical_json
from powercontext.maintenance import check
from powercontext.models import ArtifactHead, ArtifactRevision
from tests.conftest import sqlite_only

pytestmark = pytest.mark.django_db
REPO_ROOT = Path(__file__).resolve().parents[2]
SQLITE = sqlite_only("damages the FTS5 index, or defers a foreign key check to commit")


def run_check(*args, verbosity=1):
    """(output, error message or None): CommandError is the non-zero exit status."""
    out = io.StringIO()
    try:
        call_command("check_integrity", *args, verbosity=verbosity, stdout=out)
    except CommandError as error:
        return out.getvalue(), str(error)
    return out.getvalue(), None


def findings(scope_id=None):
    return {
        result.check: [str(finding) for finding in result.findings]
        for result in check(scope_id=scope_id)
    }


def failing(scope_id=None):
    return {name: items for name, items in findings(scope_id).items() if items}


@pytest.fixture
def seeded(remember, api):
    first = remember("Run make lint before pushing")["entry"]
    second = remember("The CI image is python 3.11 slim")["entry"]
    third = remember("Never edit generated migrations by hand")["entry"]
    remember("Deploys use the blue green pipeline", scope_id="scope-b")
    revised = api.ok(
        "/v1/memory/entries/revise",
        {
            "scope_id": "scope-a",
            "citation": first["citation"],
            "kind": "note",
            "text": "Run make check",
        },
    )["entry"]
    api.ok("/v1/memory/entries/retire", {"scope_id": "scope-a", "citation": second["citation"]})
    api.ok("/v1/memory/entries/reactivate", {"scope_id": "scope-a", "citation": second["citation"]})
    return {"first": first, "second": second, "third": third, "revised": revised}


def memory_revision(revision, scope_id="scope-a"):
    return ArtifactRevision.objects.filter(scope_id=scope_id, family="memory", revision=revision)


def test_a_healthy_database_passes(seeded):
    output, error = run_check()
    assert error is None
    assert "Integrity check passed." in output
    for name in (
        "artifact.chain",
        "memory.versions",
        "memory.manifest",
        "memory.changes",
        "memory.projection",
        "memory.fulltext",
    ):
        assert name in output
    assert "problem" not in output


def test_an_empty_database_passes(db):
    assert run_check()[1] is None


def test_verbosity_zero_is_silent_on_success(seeded):
    assert run_check(verbosity=0) == ("", None)


# -- the revision hash chain -----------------------------------------------------------


def test_tampered_revision_content_breaks_the_chain(seeded):
    revision = memory_revision(2).get()
    content = json.loads(revision.content)
    content["changes"][0]["reason"] = "rewritten history"
    memory_revision(2).update(content=canonical_json(content))
    output, error = run_check()
    assert "Integrity check failed" in error
    assert "artifact.chain" in output
    assert "[scope-a] memory/memory@2: revision_hash does not match its content" in output


def test_a_rehashed_revision_no_longer_chains_to_the_next(seeded):
    # Rewriting revision 2 and its own hash still breaks revision 3's link.
    memory_revision(2).update(revision_hash="f" * 64)
    problems = failing()["artifact.chain"]
    assert any("memory/memory@2: revision_hash" in item for item in problems)
    assert any("memory/memory@3: previous_hash" in item for item in problems)


def test_a_deleted_revision_is_a_gap(seeded):
    memory_revision(3).delete()
    problems = failing()
    assert any("expected revision 3 here" in item for item in problems["artifact.chain"])
    # Its manifest rows now belong to no revision.
    assert any("revision 3" in item for item in problems["memory.changes"])


def test_a_head_that_is_not_the_latest_revision(seeded):
    ArtifactHead.objects.filter(scope_id="scope-a", family="memory").update(revision=4)
    problems = failing()["artifact.chain"]
    assert problems == [
        "artifact.chain: [scope-a] memory/memory: head names revision 4, latest revision is 6"
    ]


def test_a_head_without_revisions(seeded):
    ArtifactHead.objects.create(
        scope_id="scope-c", family="memory", artifact_id="memory", revision=1
    )
    assert failing()["artifact.chain"] == [
        "artifact.chain: [scope-c] memory/memory: head names revision 1, no revisions"
    ]


# -- manifest resolves to immutable versions -------------------------------------------


@SQLITE
def test_manifest_row_naming_a_missing_version(seeded):
    row = MemoryManifestRow.objects.filter(scope_id="scope-a", valid_to__isnull=True).first()
    original = row.entry_version_id
    with connection.cursor() as cursor:
        # SQLite checks this foreign key only at commit, which the test never reaches.
        cursor.execute(
            "UPDATE memory_memorymanifestrow SET entry_version_id = %s WHERE id = %s",
            ["mem_ver_" + "0" * 32, row.id],
        )
    try:
        problems = failing()
        assert any("not a version in this scope" in item for item in problems["memory.manifest"])
    finally:
        MemoryManifestRow.objects.filter(id=row.id).update(entry_version_id=original)


def test_manifest_row_naming_another_entrys_version(seeded):
    third = seeded["third"]["citation"]
    MemoryManifestRow.objects.filter(entry_id=third["entry_id"]).update(
        entry_version_id=seeded["first"]["citation"]["entry_version_id"]
    )
    problems = failing()
    assert any(
        f"a version of {seeded['first']['citation']['entry_id']}" in item
        for item in problems["memory.manifest"]
    )
    assert any("version is in no manifest row" in item for item in problems["memory.manifest"])


def test_manifest_row_naming_a_version_of_another_scope(seeded):
    other = MemoryEntryVersion.objects.get(scope_id="scope-b")
    MemoryManifestRow.objects.filter(entry_id=seeded["third"]["citation"]["entry_id"]).update(
        entry_version_id=other.entry_version_id
    )
    assert any("not a version in this scope" in item for item in failing()["memory.manifest"])


def test_two_open_manifest_rows_overlap(seeded):
    entry_id = seeded["first"]["citation"]["entry_id"]
    MemoryManifestRow.objects.filter(entry_id=entry_id, valid_to__isnull=False).update(
        valid_to=None
    )
    problems = failing()
    assert any(
        "overlaps an earlier row that is still open" in item for item in problems["memory.manifest"]
    )
    assert any(
        "disagree with the manifest rows it closes" in item for item in problems["memory.changes"]
    )


def test_a_manifest_row_ending_late_overlaps_the_next(seeded):
    entry_id = seeded["first"]["citation"]["entry_id"]
    MemoryManifestRow.objects.filter(entry_id=entry_id, valid_to__isnull=False).update(valid_to=6)
    assert any("overlaps the entry's previous row" in item for item in failing()["memory.manifest"])


def test_a_manifest_gap(seeded):
    entry_id = seeded["second"]["citation"]["entry_id"]
    MemoryManifestRow.objects.filter(entry_id=entry_id, state=ManifestState.INACTIVE).delete()
    problems = failing()
    assert any("leaves a gap" in item for item in problems["memory.manifest"])
    assert any("revision 6" in item for item in problems["memory.changes"])


def test_a_manifest_row_beyond_the_head(seeded):
    MemoryManifestRow.objects.filter(entry_id=seeded["third"]["citation"]["entry_id"]).update(
        valid_from=9
    )
    assert any("starts outside revisions 1..6" in item for item in failing()["memory.manifest"])


# -- recorded changes agree with the manifest ------------------------------------------


def test_a_manifest_state_that_disagrees_with_the_changes(seeded):
    # The reactivation's row says inactive: the manifest no longer says what revision 6 did.
    entry_id = seeded["second"]["citation"]["entry_id"]
    MemoryManifestRow.objects.filter(entry_id=entry_id, valid_to__isnull=True).update(
        state=ManifestState.INACTIVE
    )
    problems = failing()
    assert problems["memory.changes"] == [
        "memory.changes: [scope-a] revision 6: its changes disagree with the manifest rows it opens"
    ]
    # And the projection still lists it as active.
    assert problems["memory.projection"] == [
        f"memory.projection: [scope-a] {entry_id}: projection row for an entry that is not active"
    ]


def test_a_version_created_in_the_wrong_revision(seeded):
    MemoryEntryVersion.objects.filter(
        entry_version_id=seeded["third"]["citation"]["entry_version_id"]
    ).update(created_in_revision=1)
    problems = failing()["memory.changes"]
    assert any(
        "revision 1: its changes disagree with the versions created" in item for item in problems
    )
    assert any(
        "revision 3: its changes disagree with the versions created" in item for item in problems
    )


# -- content hashes --------------------------------------------------------------------


def test_edited_version_text_fails_its_content_hash(seeded):
    version_id = seeded["third"]["citation"]["entry_version_id"]
    MemoryEntryVersion.objects.filter(entry_version_id=version_id).update(
        text="Always edit by hand"
    )
    problems = failing()
    assert problems["memory.versions"] == [
        f"memory.versions: [scope-a] {version_id}: content_hash does not match its content"
    ]
    # The projection still serves the entry: it must not (a rebuild removes the row).
    assert problems["memory.projection"] == [
        f"memory.projection: [scope-a] {seeded['third']['citation']['entry_id']}: "
        "projection row for a version that fails verification"
    ]


def test_a_broken_version_chain(seeded):
    MemoryEntryVersion.objects.filter(
        entry_version_id=seeded["revised"]["citation"]["entry_version_id"]
    ).update(previous_version_id=seeded["third"]["citation"]["entry_version_id"])
    assert any("previous version is not v1" in item for item in failing()["memory.versions"])


# -- projection equals the authoritative tables ----------------------------------------


def test_projection_missing_extra_and_stale_rows_are_caught_and_rebuild_fixes_them(seeded):
    third, second = seeded["third"]["citation"], seeded["second"]["citation"]
    MemoryActiveEntry.objects.filter(entry_id=third["entry_id"]).delete()
    MemoryActiveEntry.objects.filter(entry_id=second["entry_id"]).update(searchable_text="stale")
    retired = seeded["first"]["citation"]  # superseded version: not active
    MemoryActiveEntry.objects.create(
        scope_id="scope-b",
        entry_id=retired["entry_id"],
        entry_version_id=retired["entry_version_id"],
        kind_text_hash="x",
        scope_token="x",
        searchable_text="x",
    )
    output, error = run_check()
    assert error is not None
    assert f"[scope-a] {third['entry_id']}: active entry missing from the projection" in output
    assert f"[scope-a] {second['entry_id']}: projection row is stale (searchable_text)" in output
    assert (
        f"[scope-b] {retired['entry_id']}: projection row for an entry that is not active" in output
    )
    call_command("rebuild_index", verbosity=0)
    assert run_check()[1] is None


@SQLITE
def test_a_drifted_fulltext_index_is_caught_and_rebuild_fixes_it(seeded):
    row = MemoryActiveEntry.objects.filter(scope_id="scope-a").first()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memory_activeentry_fts(memory_activeentry_fts, rowid, scope_token, "
            "searchable_text) VALUES ('delete', %s, %s, %s)",
            [row.id, row.scope_token, row.searchable_text],
        )
    output, error = run_check()
    assert error is not None
    assert "memory.fulltext: full-text index: FTS5 integrity-check failed" in output
    call_command("rebuild_index", verbosity=0)
    assert run_check()[1] is None


@SQLITE
def test_a_missing_fulltext_table_is_caught(seeded):
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER memory_activeentry_fts_update")
    (problem,) = failing()["memory.fulltext"]
    assert problem.endswith("missing full-text object(s): memory_activeentry_fts_update")


# -- scope and output ------------------------------------------------------------------


def test_scope_limits_the_check(seeded):
    MemoryActiveEntry.objects.filter(scope_id="scope-b").delete()
    assert run_check("--scope", "scope-a")[1] is None
    output, error = run_check("--scope", "scope-b")
    assert error is not None
    assert "[scope-b]" in output


def test_many_findings_are_summarised_unless_verbose(seeded, remember):
    for index in range(25):
        remember(f"extra memory {index}", scope_id="scope-c")
    MemoryActiveEntry.objects.filter(scope_id="scope-c").delete()
    output, _ = run_check()
    assert "memory.projection" in output
    assert "25 problem(s)" in output
    assert "... and 5 more (--verbosity 2 shows all)" in output
    output, _ = run_check(verbosity=2)
    assert "more (--verbosity 2" not in output
    assert output.count("missing from the projection") == 25


# -- term statistics -------------------------------------------------------------------


def test_wrong_missing_and_extra_term_statistics_are_caught_and_rebuild_fixes_them(seeded):
    MemoryTermStat.objects.filter(scope_id="scope-a", term="make").update(documents=7)
    MemoryTermStat.objects.filter(scope_id="scope-a", term="ci").delete()
    MemoryTermStat.objects.create(scope_id="scope-b", term="phantom", documents=2)
    MemoryTermStat.objects.filter(scope_id="scope-b", term="").update(documents=5)
    problems = failing()["memory.term_stats"]
    assert sorted(problems) == sorted(
        [
            "memory.term_stats: [scope-a] term 'make': counted in 7 entries, active in 1",
            "memory.term_stats: [scope-a] term 'ci': counted in 0 entries, active in 1",
            "memory.term_stats: [scope-b] term 'phantom': counted in 2 entries, active in 0",
            "memory.term_stats: [scope-b] document count: counted in 5 entries, active in 1",
        ]
    )
    out = io.StringIO()
    call_command("rebuild_index", stdout=out)
    assert "term statistics: 4 row(s) repaired" in out.getvalue()
    assert run_check()[1] is None


@SQLITE
def test_exit_status_from_the_command_line(tmp_path):
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

    seed = "from memory.services import memory_remember as r; r(scope_id='s', kind='k', text='t')"
    assert manage("migrate", "--verbosity", "0").returncode == 0
    assert manage("shell", "-c", seed).returncode == 0
    passed = manage("check_integrity")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Integrity check passed." in passed.stdout
    with sqlite3.connect(tmp_path / "powercontext.sqlite3") as raw:
        raw.execute("UPDATE powercontext_artifactrevision SET content = '{\"changes\":[]}'")
    failed = manage("check_integrity")
    assert failed.returncode == 1
    assert "Integrity check failed: " in failed.stderr
    assert "revision_hash does not match its content" in failed.stdout
