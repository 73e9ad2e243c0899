"""``manage.py export`` and ``manage.py import`` on the suite's engine: a round trip that
changes no byte a client reads, the dry run, the refusals (a scope that holds data, an
archive altered anywhere, cut short, or forged with recomputed digests), one
transaction per scope, and an export that refuses an altered history."""

import bisect
import io
import json
import random
import re
import stat
import threading
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, Permission
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client

from experience import services
from memory.models import MemoryEntryVersion, MemoryManifestRow
from memory.services import memory_remember
from powercontext.archive import format as archive_format
from powercontext.archive.format import ArchiveRefused, Writer
from powercontext.archive.importer import archive_verify
from powercontext.archive.streams import left_out, streams
from powercontext.models import ArtifactRevision, SourceRecord
from tests.conftest import ApiClient
from tests.powercontext.archive.archive_history import (
    HOSTILE_SCOPE,
    PLAIN_SCOPE,
    hostile_history,
    probe,
)

SCOPES = sorted([HOSTILE_SCOPE, PLAIN_SCOPE])


def run(command, *args, **options):
    out = io.StringIO()
    call_command(command, *args, stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


def records(path):
    return [json.loads(line)["record"] for line in Path(path).read_bytes().splitlines()]


def reseal(source, target, change):
    """Write ``source``'s records to ``target`` after ``change(records)`` edits them,
    with every digest, count and sha256 recomputed: a forgery only the chains and the
    per-record checks can catch."""
    edited = change(records(source))
    with Path(target).open("wb") as file:
        writer = Writer(file)
        stream_digest, rows, scope_rows, stated = None, 0, 0, []
        for record in edited:
            kind = record["type"]
            if kind == "stream":
                import hashlib

                stream_digest, rows = hashlib.sha256(), 0
            elif kind == "row":
                rows += 1
                scope_rows += 1
                stream_digest.update(archive_format.body_of(record) + b"\n")
            elif kind == "stream_end":
                record = {**record, "rows": rows, "sha256": stream_digest.hexdigest()}
                stated.append([record["scope_id"], record["stream"], rows, record["sha256"]])
            elif kind == "scope_end":
                record = {**record, "rows": scope_rows}
                scope_rows = 0
            elif kind == "manifest":
                record = {
                    **record,
                    "records": writer.lines,
                    "sha256": writer.whole.hexdigest(),
                    "streams": stated,
                }
            writer.write(record)


def wipe():
    """Delete every row of the families' tables, as in a fresh database; users, groups
    and tokens stay (the vector tables keep rows the import's vector rebuild drops as
    orphans)."""
    for label in (
        "experience.ExperienceTermStat",
        "experience.CandidateVersion",
        "experience.Candidate",
        "memory.MemoryTermStat",
        "memory.MemoryActiveEntry",
        "memory.MemoryManifestRow",
        "memory.MemoryEntryVersion",
        "powercontext.SourceRecord",
        "powercontext.ArtifactHead",
        "powercontext.ArtifactRevision",
    ):
        apps.get_model(label).objects.all().delete()


@pytest.fixture
def reviewer_api(client):
    # A transactional test's teardown empties every table, the group its migration
    # made included.
    group, _ = Group.objects.get_or_create(name=services.REVIEWER_GROUP)
    group.permissions.add(Permission.objects.get(codename="review_candidate"))
    issued = services.reviewer_token_issue(username="rita", create=True)
    return ApiClient(client, token=issued.token)


@pytest.fixture
def history(api, reviewer_api):
    hostile_history(api, reviewer_api)


@pytest.fixture
def archive(history, tmp_path):
    path = tmp_path / "archive.jsonl"
    run("export", out=path)
    return path


@pytest.fixture(scope="module")
def sealed(django_db_setup, django_db_blocker, tmp_path_factory):
    """The hostile history's archive, made once for the tests that only read it (in a
    transaction rolled back afterwards). Those tests are marked ``django_db`` all the
    same: pytest-django sets the test database up only for a session that has one."""
    path = tmp_path_factory.mktemp("sealed") / "archive.jsonl"
    with django_db_blocker.unblock(), transaction.atomic():
        group, _ = Group.objects.get_or_create(name=services.REVIEWER_GROUP)
        group.permissions.add(Permission.objects.get(codename="review_candidate"))
        issued = services.reviewer_token_issue(username="rita", create=True)
        hostile_history(ApiClient(Client()), ApiClient(Client(), token=issued.token))
        run("export", out=path)
        transaction.set_rollback(True)
    return path


def line_starts(data):
    return [0] + [index + 1 for index, byte in enumerate(data) if byte == 0x0A]


def line_of(starts, offset):
    """The 1-based number of the line holding ``offset``."""
    return bisect.bisect_right(starts, offset)


# -- the round trip ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_round_trip_changes_no_byte_a_client_reads(api, history, tmp_path):
    before = probe(api, SCOPES)
    first = tmp_path / "first.jsonl"
    output = run("export", out=first)
    assert "2 scope(s)" in output
    assert "Archive written" in output
    wipe()
    output = run("import", first)
    assert "Import complete: integrity check passed." in output
    assert probe(api, SCOPES) == before
    second = tmp_path / "second.jsonl"
    run("export", out=second)
    # Byte for byte the same records (the header says when it was written).
    assert records(first)[1:-1] == records(second)[1:-1]
    assert {**records(first)[0], "created_at": ""} == {**records(second)[0], "created_at": ""}


@pytest.mark.django_db(transaction=True)
def test_a_dry_run_says_what_it_would_write_and_writes_nothing(archive):
    wipe()
    output = run("import", archive, dry_run=True)
    assert "Would import 2 scope(s):" in output
    assert "memory.entry_version 7" in output  # five hostile texts, a runbook, a revision
    assert "nothing was written" in output
    assert not ArtifactRevision.objects.exists()
    assert not SourceRecord.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_import_refuses_a_scope_that_holds_data_and_writes_nothing(archive):
    revisions = ArtifactRevision.objects.count()
    with pytest.raises(CommandError, match=r"empty scopes only\. Nothing was written"):
        run("import", archive)
    assert ArtifactRevision.objects.count() == revisions


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("state", "refusal"),
    [
        # The projection's one-to-one key on the version refuses it while rebuilding.
        ("active", "could not be written (IntegrityError"),
        # Nothing refuses it but Memory's integrity check, before the commit.
        ("inactive", "fails its integrity check once written (memory.manifest"),
    ],
)
def test_each_scope_is_one_transaction(archive, tmp_path, state, refusal):
    """An open, active manifest row of the second scope names the version of another
    entry, one that is ``state`` at the head: the archive verifies (one pass cannot tell without
    holding the scope's versions), the scope breaks once written and is rolled back,
    and the first scope stays."""
    second = SCOPES[1]
    rows = [
        row["values"]
        for row in records(archive)
        if row["type"] == "row"
        and row["values"].get("scope_id") == second
        and "valid_from" in row["values"]
    ]
    victim = next(row for row in rows if row["valid_to"] is None and row["state"] == "active")
    other = next(
        row["entry_version_id"]
        for row in rows
        if row["valid_to"] is None
        and row["state"] == state
        and row["entry_id"] != victim["entry_id"]
    )

    def misfile(edited):
        for record in edited:
            if record.get("values") == victim:
                record["values"] = {**victim, "entry_version_id": other}
        return edited

    forged = tmp_path / "forged.jsonl"
    reseal(archive, forged, misfile)
    wipe()
    with pytest.raises(CommandError) as refused:
        run("import", forged)
    message = str(refused.value)
    assert f"scope {second!r} {refusal}" in message
    assert "rolled back. Scopes imported before it:" in message
    assert ArtifactRevision.objects.filter(scope_id=SCOPES[0]).exists()
    assert not ArtifactRevision.objects.filter(scope_id=second).exists()
    assert not MemoryManifestRow.objects.filter(scope_id=second).exists()


@pytest.mark.django_db(transaction=True)
def test_an_archive_changed_between_the_two_passes_is_not_written(archive, tmp_path, monkeypatch):
    """The writing pass compares its chain with the verifying pass's at each scope's
    end: a file swapped for another valid archive in between is not imported."""
    from powercontext.archive import importer

    forged = tmp_path / "forged.jsonl"

    def retext(edited):
        for record in edited:
            if record.get("values", {}).get("position") == 2:
                record["values"]["created_at"] = "2001-01-01T00:00:00.000000Z"
        return edited

    reseal(archive, forged, retext)
    verify = importer.archive_verify

    def verify_then_swap(path, **options):
        verified = verify(path, **options)
        Path(path).write_bytes(forged.read_bytes())
        return verified

    monkeypatch.setattr(importer, "archive_verify", verify_then_swap)
    wipe()
    with pytest.raises(CommandError, match="changed since it was verified"):
        run("import", archive)
    assert not SourceRecord.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_export_while_a_writer_writes_is_one_snapshot(remember, tmp_path):
    """The revisions, heads, versions and manifest rows of an export are read in one
    snapshot: read one after another without it, a write committing in between leaves a
    head past its chain or a version past its revisions, which the export refuses."""
    for number in range(30):
        remember(f"Entry {number}: run make check first", "scope-busy")
    stop, writing = threading.Event(), threading.Event()

    def write():
        number = 0
        try:
            while not stop.is_set():
                memory_remember(scope_id="scope-busy", kind="note", text=f"during {number}")
                number += 1
                writing.set()
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert writing.wait(60)
        for attempt in range(3):
            run("export", out=tmp_path / f"busy-{attempt}.jsonl", chunk_size=1)
    finally:
        stop.set()
        writer.join()
    for attempt in range(3):
        summary = archive_verify(tmp_path / f"busy-{attempt}.jsonl").summary
        assert summary.rows["scope-busy"]["memory.entry_version"] >= 30


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_one_byte_change_anywhere_is_refused_naming_its_line(sealed, tmp_path):
    data = sealed.read_bytes()
    rng = random.Random(29)
    target = tmp_path / "changed.jsonl"
    # Every byte of the first row's line (its end of line included), the header's first
    # and last 60, the manifest's last 60 and 100 more of it, and 200 offsets anywhere.
    ends = [index for index, byte in enumerate(data) if byte == 0x0A]
    starts = line_starts(data)
    row = next(number for number, line in enumerate(records(sealed)) if line["type"] == "row")
    offsets = [
        *range(0, 60),
        *range(ends[0] - 60, ends[0] + 1),
        *range(ends[row - 1] + 1, ends[row] + 1),
        *rng.sample(range(ends[-2] + 1, len(data) - 60), 100),
        *range(len(data) - 60, len(data)),
        *rng.sample(range(len(data)), 200),
    ]
    for offset in offsets:
        changed = bytearray(data)
        changed[offset] = (changed[offset] + rng.randrange(1, 256)) % 256
        target.write_bytes(bytes(changed))
        with pytest.raises(ArchiveRefused) as refused:
            archive_verify(target)
        assert refused.value.line == line_of(starts, offset), (offset, str(refused.value))


@pytest.mark.django_db
def test_a_cut_archive_is_refused(sealed, tmp_path):
    data = sealed.read_bytes()
    target = tmp_path / "cut.jsonl"
    ends = [index + 1 for index, byte in enumerate(data) if byte == 0x0A]
    rng = random.Random(30)
    for cut in [0, *ends[:-1], *rng.sample(range(1, len(data)), 100)]:
        target.write_bytes(data[:cut])
        with pytest.raises(ArchiveRefused, match="truncated"):
            archive_verify(target)


@pytest.mark.django_db
def test_the_command_names_the_bad_line(sealed, tmp_path):
    data = bytearray(sealed.read_bytes())
    offset = data.index(b"before\\u0000after")
    data[offset] = ord("B")
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(bytes(data))
    with pytest.raises(CommandError) as refused:
        run("import", changed)
    line = line_of(line_starts(bytes(data)), offset)
    assert str(refused.value).startswith(
        f"Archive refused, nothing written: line {line}: digest does not match"
    )


def forgeries():
    """(what is changed, the message that must name it), with every digest recomputed."""

    def first(kind, edited):
        return next(r for r in edited if r["type"] == "row" and kind in r["values"])

    def text(edited):
        first("content_hash", edited)["values"]["text"] += "!"
        return edited

    def content(edited):
        row = first("revision_hash", edited)
        row["values"]["content"] = row["values"]["content"].replace("add", "ADD")
        return edited

    def gap(edited):
        edited.remove(first("payload_hash", edited))
        return edited

    def head(edited):
        row = next(r for r in edited if r["type"] == "row" and "updated_at" in r["values"])
        row["values"]["revision"] += 1
        return edited

    def version(edited):
        rows = [r for r in edited if r["type"] == "row" and "content_hash" in r["values"]]
        revised = next(r for r in rows if r["values"]["version"] == 2)
        revised["values"]["previous_version_id"] = None
        return edited

    def order(edited):
        rows = [
            i for i, r in enumerate(edited) if r["type"] == "row" and "valid_from" in r["values"]
        ]
        edited[rows[0]], edited[rows[1]] = edited[rows[1]], edited[rows[0]]
        return edited

    return [
        (text, "content_hash does not match its content"),
        (content, "revision_hash does not match its content"),
        (gap, "position 2 where 1 belongs (a gap)"),
        (head, "head names revision"),
        (version, "does not follow"),
        (order, "out of order"),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "message"), forgeries(), ids=lambda item: getattr(item, "__name__", "")
)
def test_a_forgery_with_recomputed_digests_is_refused_by_the_chains(
    sealed, tmp_path, change, message
):
    forged = tmp_path / "forged.jsonl"
    reseal(sealed, forged, change)
    with pytest.raises(ArchiveRefused, match=re.escape(message)) as refused:
        archive_verify(forged)
    assert refused.value.line is not None


@pytest.mark.django_db
def test_an_archive_of_another_format_version_is_refused(sealed, tmp_path):
    forged = tmp_path / "forged.jsonl"

    def version(edited):
        edited[0]["version"] = 4
        return edited

    reseal(sealed, forged, version)
    with pytest.raises(
        ArchiveRefused, match="format version 4; this server reads versions 2 and 3"
    ):
        archive_verify(forged)


@pytest.mark.django_db
def test_an_archive_of_other_columns_is_refused_naming_the_stream(sealed, tmp_path):
    """What a release that adds a column without raising the format version would
    write: refused at line 1, naming the stream."""
    forged = tmp_path / "forged.jsonl"

    def new_column(edited):
        stream = next(s for s in edited[0]["streams"] if s["name"] == "source.record")
        stream["columns"].append({"name": "content_digest", "type": "string", "null": True})
        return edited

    reseal(sealed, forged, new_column)
    with pytest.raises(ArchiveRefused) as refused:
        archive_verify(forged)
    assert refused.value.line == 1
    assert "the stream source.record differs from this server's in ['columns']" in str(
        refused.value
    )


# -- export --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_archive_is_private_and_holds_only_the_scopes_asked_for(history, tmp_path):
    path = tmp_path / "one.jsonl"
    run("export", "--scope", PLAIN_SCOPE, out=path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    header = records(path)[0]
    assert header["scopes"] == [PLAIN_SCOPE]
    assert {
        row["values"]["scope_id"]
        for row in records(path)
        if row["type"] == "row" and "scope_id" in row["values"]
    } == {PLAIN_SCOPE}


@pytest.mark.django_db
def test_export_of_an_unknown_scope_fails_and_writes_nothing(history, tmp_path):
    path = tmp_path / "none.jsonl"
    with pytest.raises(CommandError, match="No authoritative rows in scope"):
        run("export", "--scope", "scope-typo", out=path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.django_db
def test_export_refuses_a_history_altered_in_the_database(history, tmp_path):
    version = MemoryEntryVersion.objects.filter(scope_id=PLAIN_SCOPE).order_by("entry_id").first()
    table = connection.ops.quote_name(MemoryEntryVersion._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET text = %s WHERE entry_version_id = %s",  # noqa: S608
            ["altered", version.entry_version_id],
        )
    path = tmp_path / "altered.jsonl"
    with pytest.raises(CommandError, match="content_hash does not match its content"):
        run("export", out=path)
    assert list(tmp_path.iterdir()) == []


def test_every_model_is_carried_or_left_out_with_a_reason():
    carried = {stream.model.lower() for stream in streams()}
    declared = {item.model.lower() for item in left_out()}
    project = [
        model
        for app in ("powercontext", "memory", "experience", "contextpack")
        for model in apps.get_app_config(app).get_models()
        if not model._meta.proxy
    ]
    for model in project:
        assert model._meta.label_lower in carried | declared, model._meta.label
    assert not carried & declared


@pytest.mark.django_db
def test_a_purged_prompt_travels_with_its_erasure_and_a_filled_one_is_refused(tmp_path):
    from powercontext.sources import source_capture, source_purge

    scope = "archive-purged"
    source_capture(scope_id=scope, source_id="p1", content="the prompt that was purged")
    source_capture(scope_id=scope, source_id="p2", content="the prompt that stays")
    source_purge(reason="retention", scope_id=scope, positions=[1])
    path = tmp_path / "purged.jsonl"
    run("export", out=path, scope=[scope])
    archive_verify(path)
    assert "the prompt that was purged" not in path.read_text()
    assert "the prompt that stays" in path.read_text()

    def refill(edited):
        for record in edited:
            values = record.get("values") if record.get("type") == "row" else None
            if isinstance(values, dict) and values.get("position") == 1 and "salt" in values:
                values["payload"] = '{"content":"planted","metadata":{}}'
        return edited

    forged = tmp_path / "refilled.jsonl"
    reseal(path, forged, refill)
    with pytest.raises(ArchiveRefused, match="purged, yet it holds a payload"):
        archive_verify(forged)
