"""Storage that refuses writes is a documented 507, not a 500 (issue 14.8).

The real-process case (a full tmpfs) is ``tests/reliability/test_disk_full.py``. Here the
engine's own errors are produced in the test database: SQLite's ``max_page_count`` makes
the next write that needs a page fail with SQLITE_FULL ("database or disk is full"),
exactly as a full disk does, and ``query_only`` makes it fail with SQLITE_READONLY
("attempt to write a readonly database"); on OceanBase a read-only session transaction
makes it fail with the server's own read-only error.
"""

import errno
import os
import sqlite3

import pytest
from django.db import OperationalError, connection

from powercontext import storage
from powercontext.api.errors import error_body_for
from server.health import readiness
from tests.conftest import engine, error_code, sqlite_only

SCOPE = "scope-a"
TEXT = "A note long enough to need pages of its own. " * 150


class FakeMySQLError(Exception):
    """Shaped like MySQLdb's errors: (error number, message)."""


FakeMySQLError.__module__ = "MySQLdb._exceptions"


def wrapped(driver_error: Exception) -> OperationalError:
    """The driver's error as Django raises it (``__cause__`` holds the original)."""
    try:
        raise OperationalError(*driver_error.args) from driver_error
    except OperationalError as error:
        return error


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (wrapped(sqlite3.OperationalError("database or disk is full")), "no_space"),
        (wrapped(sqlite3.OperationalError("attempt to write a readonly database")), "read_only"),
        (OSError(errno.ENOSPC, "No space left on device"), "no_space"),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), "no_space"),
        (OSError(errno.EROFS, "Read-only file system"), "read_only"),
        (wrapped(FakeMySQLError(1021, "Disk full")), "no_space"),
        (wrapped(FakeMySQLError(4184, "Server out of disk space")), "no_space"),
        (wrapped(FakeMySQLError(1290, "running with the --read-only option")), "read_only"),
        (wrapped(sqlite3.OperationalError("no such table: memory_x")), None),
        (wrapped(sqlite3.OperationalError("database is locked")), None),
        (wrapped(FakeMySQLError(1205, "Lock wait timeout exceeded")), None),
        (OSError(errno.EACCES, "Permission denied"), None),
        (ValueError("database or disk is full"), None),
    ],
)
def test_failure_reason(error, reason):
    assert storage.failure_reason(error) == reason


def test_a_storage_error_anywhere_in_the_chain_is_found():
    outer = RuntimeError("raised while handling the failed write")
    outer.__context__ = wrapped(sqlite3.OperationalError("database or disk is full"))
    assert storage.failure_reason(outer) == "no_space"


def test_the_one_mapping_gives_507_with_the_reason(monkeypatch):
    monkeypatch.setattr(storage, "failures", storage._Failures())
    status, body = error_body_for(wrapped(sqlite3.OperationalError("database or disk is full")))
    assert status == 507
    assert body["error"]["code"] == "insufficient_storage"
    assert body["error"]["details"] == {"reason": "no_space"}
    assert storage.failures.current()[0] == "no_space"


@pytest.fixture
def fresh_failures(monkeypatch):
    monkeypatch.setattr(storage, "failures", storage._Failures())


def entries(api):
    return api.ok("/v1/memory/entries/list", {"scope_id": SCOPE})["entries"]


def remember(api, text):
    return api.post("/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": text})


@sqlite_only("PRAGMA max_page_count is SQLite's")
@pytest.mark.django_db(transaction=True)
def test_database_full_is_507_and_nothing_is_written(api, fresh_failures):
    assert remember(api, "kept " + TEXT).status_code == 200
    with connection.cursor() as cursor:
        # Pages earlier tests freed (a 10,000-entry import leaves megabytes) would take
        # hundreds of writes before the cap bites: a blob takes them first, in this
        # test's transaction, so it goes with it.
        cursor.execute("PRAGMA freelist_count")
        (free,) = cursor.fetchone()
        cursor.execute("PRAGMA page_size")
        (page_size,) = cursor.fetchone()
        if free > 16:
            cursor.execute("CREATE TABLE storage_test_filler (filler BLOB)")
            cursor.execute(
                "INSERT INTO storage_test_filler VALUES (zeroblob(%s))", [(free - 16) * page_size]
            )
        cursor.execute("PRAGMA page_count")
        (pages,) = cursor.fetchone()
        cursor.execute(f"PRAGMA max_page_count = {pages}")
    try:
        # Pages the file already has free (left by earlier tests) still take writes.
        statuses = []
        for index in range(200):
            response = remember(api, f"note {index} " + TEXT)
            statuses.append(response.status_code)
            if response.status_code != 200:
                break
        before = entries(api)
        refused = [remember(api, f"refused {index} " + TEXT) for index in range(5)]
        assert statuses[-1] == 507
        assert [response.status_code for response in refused] == [507] * 5
        assert {error_code(response) for response in refused} == {"insufficient_storage"}
        assert refused[0].json()["error"]["details"] == {"reason": "no_space"}
        assert entries(api) == before
        assert len(before) == statuses.count(200) + 1
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA max_page_count = 4294967294")
    assert remember(api, "after " + TEXT).status_code == 200
    assert len(entries(api)) == len(before) + 1


# Each engine's own way to make this connection refuse writes as a read-only database.
READ_ONLY = {
    "sqlite": ("PRAGMA query_only = ON", "PRAGMA query_only = OFF"),
    "oceanbase": ("SET SESSION TRANSACTION READ ONLY", "SET SESSION TRANSACTION READ WRITE"),
}


@pytest.mark.django_db(transaction=True)
def test_read_only_database_is_507_read_only(api, fresh_failures):
    on, off = READ_ONLY[engine()]
    with connection.cursor() as cursor:
        cursor.execute(on)
    try:
        response = remember(api, "a note")
        assert response.status_code == 507, response.content
        assert response.json()["error"] == {
            "code": "insufficient_storage",
            "message": "The server's database is read-only; nothing was written. Retry later.",
            "details": {"reason": "read_only"},
        }
    finally:
        with connection.cursor() as cursor:
            cursor.execute(off)
    assert entries(api) == []
    assert remember(api, "a note").status_code == 200


class FakeStatvfs:
    def __init__(self, free_bytes, read_only=False):
        self.f_frsize = 4096
        self.f_bavail = free_bytes // 4096
        self.f_flag = os.ST_RDONLY if read_only else 0


@sqlite_only("the file-system checks look at the SQLite file's directory")
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("stats", "detail"),
    [
        (FakeStatvfs(free_bytes=512 * 1024), "no space left for the database"),
        (FakeStatvfs(free_bytes=10**9, read_only=True), "the database is read-only"),
    ],
)
def test_readiness_sees_a_full_or_read_only_file_system(
    client, monkeypatch, fresh_failures, stats, detail
):
    monkeypatch.setattr(storage.os, "statvfs", lambda path: stats)
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert response.json()["status"] == "not_ready"
    assert response.json()["checks"]["storage"]["status"] == "failing"
    assert response.json()["checks"]["storage"]["detail"].startswith(detail)


@sqlite_only("the probe writes beside the SQLite file")
@pytest.mark.django_db
def test_a_recorded_failure_holds_until_the_probe_passes(client, monkeypatch, fresh_failures):
    real_probe = storage._sqlite_probe_passes
    storage.failures.record("no_space")
    monkeypatch.setattr(storage, "_sqlite_probe_passes", lambda path: False)
    for _ in range(2):
        response = client.get("/health/ready")
        assert response.status_code == 503
        assert response.json()["checks"]["storage"]["status"] == "failing"

    monkeypatch.setattr(storage, "_sqlite_probe_passes", real_probe)
    # The real probe: the test database's directory has space, so the failure is over.
    response = client.get("/health/ready")
    assert response.status_code == 200
    assert response.json()["checks"]["storage"] == {"status": "ok"}
    assert storage.failures.current()[0] is None


def test_the_real_probe_fails_on_a_directory_it_cannot_write(tmp_path):
    missing = tmp_path / "gone" / "db.sqlite3"
    assert storage._sqlite_probe_passes(missing) is False
    present = tmp_path / "db.sqlite3"
    present.write_bytes(b"")
    assert storage._sqlite_probe_passes(present) is True
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".storage-probe")]


@pytest.mark.django_db
def test_without_a_database_file_a_failure_is_held_for_a_while(monkeypatch, fresh_failures):
    monkeypatch.setattr(storage, "_sqlite_path", lambda: None)
    storage.failures.record("read_only")
    assert storage.check() == "read_only"
    monkeypatch.setattr(storage, "SERVER_FAILURE_HOLD_SECONDS", 0.0)
    assert storage.check() is None
    assert readiness()["checks"]["storage"] == {"status": "ok"}


def test_metrics_count_the_507_under_its_own_code():
    from powercontext.api.errors import error_codes
    from powercontext.exceptions import InsufficientStorage

    assert InsufficientStorage.code in error_codes()
