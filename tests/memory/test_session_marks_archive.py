"""Session-start marks travel in archives (issue 38): ``export`` carries them (format
version 3), ``import`` writes them back with who marked and when, the archive's checks
cover them, and a version 2 archive (written before marks travelled) still imports."""

import re

import pytest
from django.core.management import CommandError

from memory.models import MemoryEntryVersion, SessionStartMark
from memory.services import session_mark
from powercontext.archive.format import ArchiveRefused
from powercontext.archive.importer import archive_verify
from tests.powercontext.archive.test_archive import records, reseal, run, wipe

pytestmark = pytest.mark.django_db(transaction=True)
STREAM = "memory.session_start_mark"
SCOPES = ("scope-a", "scope-b")


def session_texts(api, scope_id):
    return api.ok("/v1/context/session", {"scope_id": scope_id})["content"] or ""


@pytest.fixture
def marked(remember):
    """Two entries per scope, the first of each marked by a reviewer."""
    for scope_id in SCOPES:
        first = remember(f"Run the tests of {scope_id} with `make check`.", scope_id, "command")
        remember(f"Deploys of {scope_id} need a green main.", scope_id, "fact")
        version = MemoryEntryVersion.objects.get(pk=first["entry"]["citation"]["entry_version_id"])
        assert session_mark(entry_version=version, marked_by=f"rita-{scope_id}")


def marks():
    return sorted(
        SessionStartMark.objects.values_list(
            "scope_id", "entry_version_id", "marked_by", "marked_at"
        )
    )


def mark_rows(path):
    """The values of the archive's mark rows."""
    found, stream = [], None
    for record in records(path):
        if record["type"] == "stream":
            stream = record["stream"]
        elif record["type"] == "row" and stream == STREAM:
            found.append(record["values"])
    return found


def test_marks_are_exported_and_imported_with_who_and_when(api, marked, tmp_path):
    before, packs = marks(), {scope: session_texts(api, scope) for scope in SCOPES}
    assert len(before) == 2
    assert all("make check" in pack for pack in packs.values())
    path = tmp_path / "archive.jsonl"
    run("export", out=path)
    header = records(path)[0]
    assert header["version"] == 3
    assert STREAM in [stream["name"] for stream in header["streams"]]
    assert "memory.SessionStartMark" not in [item["model"] for item in header["left_out"]]
    assert {row["marked_by"] for row in mark_rows(path)} == {"rita-scope-a", "rita-scope-b"}
    wipe()
    assert marks() == []
    assert "Import complete: integrity check passed." in run("import", path)
    assert marks() == before
    assert {scope: session_texts(api, scope) for scope in SCOPES} == packs


def as_version_2(edited):
    """What a release before marks travelled wrote: version 2, no mark stream, the marks
    among the models left out."""
    header = edited[0]
    header["version"] = 2
    header["streams"] = [stream for stream in header["streams"] if stream["name"] != STREAM]
    header["left_out"].append(
        {
            "model": "memory.SessionStartMark",
            "why": "a choice of this server's reviewers, named by its users: marked again "
            "after import",
        }
    )
    kept, skipping = [], False
    for record in edited:
        if record["type"] == "stream":
            skipping = record["stream"] == STREAM
        if not skipping:
            kept.append(record)
        if record["type"] == "stream_end":
            skipping = False
    return kept


def test_a_version_2_archive_still_imports_without_marks(api, marked, tmp_path):
    path, old = tmp_path / "archive.jsonl", tmp_path / "version-2.jsonl"
    run("export", out=path)
    reseal(path, old, as_version_2)
    assert STREAM not in old.read_text()
    wipe()
    assert "Import complete: integrity check passed." in run("import", old)
    assert marks() == []
    # Everything but the marks came back: the packs are empty until a reviewer marks.
    assert MemoryEntryVersion.objects.count() == 4
    assert all(session_texts(api, scope) == "" for scope in SCOPES)


def test_a_version_2_archive_holding_a_mark_section_is_refused(marked, tmp_path):
    path, forged = tmp_path / "archive.jsonl", tmp_path / "forged.jsonl"
    run("export", out=path)

    def version_2_with_marks(edited):
        edited[0]["version"] = 2
        return edited

    reseal(path, forged, version_2_with_marks)
    with pytest.raises(ArchiveRefused, match=r"the archive's streams .* written by another"):
        archive_verify(forged)


def _edit_mark(path, target, change):
    def edit(edited):
        stream = None
        for record in edited:
            if record["type"] == "stream":
                stream = record["stream"]
            elif record["type"] == "row" and stream == STREAM:
                change(record["values"], edited)
                break
        return edited

    reseal(path, target, edit)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda values, _: values.update(marked_by=""), "names nobody who marked it"),
        (
            lambda values, _: values.update(scope_id="scope-b"),
            "scope_id is not the scope of its section",
        ),
    ],
    ids=["nobody", "other-scope"],
)
def test_a_forged_mark_is_refused_by_the_archives_checks(marked, tmp_path, change, message):
    path, forged = tmp_path / "archive.jsonl", tmp_path / "forged.jsonl"
    run("export", out=path)
    _edit_mark(path, forged, change)
    with pytest.raises(ArchiveRefused, match=re.escape(message)):
        archive_verify(forged)


def test_a_mark_naming_another_scopes_version_fails_the_scopes_check(marked, tmp_path):
    """One pass cannot tell (it does not hold a scope's versions): the scope is written,
    fails Memory's integrity check and is rolled back."""
    path, forged = tmp_path / "archive.jsonl", tmp_path / "forged.jsonl"
    run("export", out=path)
    # The first mark row is scope-a's: it names scope-b's marked version instead.
    first, theirs = mark_rows(path)
    assert (first["scope_id"], theirs["scope_id"]) == SCOPES

    def misfile(values, _):
        values["entry_version_id"] = theirs["entry_version_id"]

    _edit_mark(path, forged, misfile)
    archive_verify(forged)  # verifies: the version is only known once written
    wipe()
    with pytest.raises(CommandError) as refused:
        run("import", forged)
    # SQLite checks foreign keys at commit, so Memory's check finds the mark; OceanBase
    # checks them at the insert, which refuses the version scope-b has not written yet.
    # Either way the scope is named and rolled back.
    assert str(refused.value).startswith("Import failed: scope 'scope-a'")
    assert "fails its integrity check once written (memory.session_marks" in str(
        refused.value
    ) or "foreign key constraint fails" in str(refused.value)
    assert not SessionStartMark.objects.exists()


def test_check_integrity_finds_a_mark_of_another_scopes_version(marked):
    mark = SessionStartMark.objects.get(scope_id="scope-a")
    SessionStartMark.objects.filter(pk=mark.pk).update(scope_id="scope-b")
    with pytest.raises(CommandError):
        run("check_integrity")
