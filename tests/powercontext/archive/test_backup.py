"""``manage.py backup``: a consistent copy of the running SQLite database, taken while a
writer keeps writing, that restores by a file copy to a database that checks and holds
exactly a prefix of the history."""

import io
import json
import shutil
import stat
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memory.services import memory_remember
from tests.conftest import engine, sqlite_only
from tests.powercontext.archive.archive_sides import SqliteSide

SCOPE = "scope-backup"


def records(path):
    return [json.loads(line)["record"] for line in path.read_bytes().splitlines()]


def memory_revisions(path):
    return [
        record["values"]
        for record in records(path)
        if record["type"] == "row"
        and record["values"].get("family") == "memory"
        and "revision_hash" in record["values"]
    ]


@sqlite_only("copies the SQLite database file")
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_backup_taken_while_writing_restores_to_a_prefix_of_the_history(remember, tmp_path):
    for number in range(20):
        remember(f"Entry {number} before the backup: run make check \u2028 数据库", SCOPE)
    stop, writing = threading.Event(), threading.Event()

    def write():
        number = 0
        try:
            while not stop.is_set():
                memory_remember(scope_id=SCOPE, kind="note", text=f"Written during it {number}")
                number += 1
                writing.set()
        finally:
            connection.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert writing.wait(60)
        out = io.StringIO()
        call_command("backup", out=tmp_path / "copy.sqlite3", stdout=out)
    finally:
        stop.set()
        writer.join()
    assert "the copy passes PRAGMA integrity_check" in out.getvalue()
    copy = tmp_path / "copy.sqlite3"
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert not (tmp_path / "copy.sqlite3-wal").exists()

    restored = SqliteSide(tmp_path / "restored")
    shutil.copyfile(copy, restored.database)
    assert "Integrity check passed." in restored.manage("check_integrity").stdout
    restored.manage("export", "--out", str(tmp_path / "restored.jsonl"))
    call_command("export", out=tmp_path / "live.jsonl", stdout=io.StringIO())
    kept = memory_revisions(tmp_path / "restored.jsonl")
    live = memory_revisions(tmp_path / "live.jsonl")
    assert len(kept) >= 20
    assert kept == live[: len(kept)]


@pytest.mark.skipif(engine() != "oceanbase", reason="OceanBase only: its backup is an export")
@pytest.mark.django_db
def test_backup_on_oceanbase_says_to_export(tmp_path):
    with pytest.raises(CommandError, match=r"back it up with `manage.py export --out FILE`"):
        call_command("backup", out=tmp_path / "copy", stdout=io.StringIO())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.django_db
def test_backup_into_a_missing_directory_fails(tmp_path):
    with pytest.raises(CommandError, match="No such directory"):
        call_command("backup", out=tmp_path / "nowhere" / "copy", stdout=io.StringIO())


def test_the_backup_refusal_calls_oceanbase_by_its_name(tmp_path, monkeypatch):
    from powercontext import backup

    oceanbase_like = type("OceanBaseLike", (), {"vendor": "mysql", "display_name": "OceanBase"})
    monkeypatch.setattr(backup, "connection", oceanbase_like())
    with pytest.raises(backup.BackupUnsupported, match=r"^OceanBase has no database file"):
        backup.sqlite_backup(out=tmp_path / "copy")
