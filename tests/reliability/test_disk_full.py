"""A real server on a small tmpfs that fills up (issue 14.8).

Writes on storage that cannot take them answer the documented 507 ``insufficient_storage``
(never a 500), ``/health/ready`` reports it, and both recover by themselves once space
is back; every write acknowledged at any point is still there, and ``check_integrity``
passes. Needs ``mount -t tmpfs`` (root); where that is not allowed the test is skipped
and ``tests/powercontext/api/test_storage.py`` still covers the mapping with SQLite's own
"database or disk is full" (``PRAGMA max_page_count``). A read-only database is covered
there too (``PRAGMA query_only``): a tmpfs cannot be remounted read-only while the
server holds its database open for writing.
"""

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import sqlite_only
from tests.experience.servers import Server, manage

pytestmark = [pytest.mark.slow, sqlite_only("the data directory is a tmpfs the test mounts")]

SCOPE = "disk-full"
DISK_BYTES = 8 * 1024 * 1024
# Big enough that a few of them outgrow whatever free pages the database file and its
# WAL still hold once the file system is full.
TEXT_BYTES = 7000
MAX_ATTEMPTS = 400


def mount(point: Path, *options: str) -> bool:
    done = subprocess.run(["mount", *options, point], capture_output=True, timeout=30, check=False)
    return done.returncode == 0


@pytest.fixture
def disk(tmp_path):
    point = tmp_path / "disk"
    point.mkdir()
    if not mount(point, "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0700", "tmpfs"):
        pytest.skip("mounting a tmpfs is not permitted here (needs root)")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", point], capture_output=True, timeout=30, check=False)


@pytest.fixture
def server(disk):
    served = Server(disk / "home")
    try:
        yield served
    finally:
        served.stop()


def readiness(server: Server) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(server.url + "health/ready", timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def fill(disk: Path) -> Path:
    """A file that takes every byte the file system has left."""
    filler = disk / "filler"
    chunk = b"\xa5" * 65536
    with filler.open("wb", buffering=0) as handle:
        while True:
            try:
                handle.write(chunk)
            except OSError:
                break
    with filler.open("ab", buffering=0) as handle:  # the last partial chunk
        for _ in range(65536):
            try:
                handle.write(b"\xa5")
            except OSError:
                break
    return filler


class Writer:
    """Remembers unique texts and keeps every acknowledged answer."""

    def __init__(self, server: Server):
        self.server = server
        self.acknowledged: dict[str, str] = {}  # entry id -> text
        self.statuses: list[int] = []
        self.count = 0

    def remember(self) -> tuple[int, dict]:
        self.count += 1
        text = f"note {self.count:05d}" + " lorem ipsum dolor sit amet" * (TEXT_BYTES // 27)
        status, body = self.server.post(
            "/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": text}
        )
        self.statuses.append(status)
        if status == 200:
            self.acknowledged[body["entry"]["citation"]["entry_id"]] = text
        return status, body

    def until_refused(self) -> dict:
        for _ in range(MAX_ATTEMPTS):
            status, body = self.remember()
            if status != 200:
                return body
        raise AssertionError(f"{MAX_ATTEMPTS} writes on a full disk were all accepted")


def listed(server: Server) -> dict[str, str]:
    entries: dict[str, str] = {}
    cursor = None
    while True:
        body = {"scope_id": SCOPE, "limit": 100, **({"cursor": cursor} if cursor else {})}
        status, page = server.post("/v1/memory/entries/list", body)
        assert status == 200, page
        entries.update({entry["citation"]["entry_id"]: entry["text"] for entry in page["entries"]})
        cursor = page["next_cursor"]
        if cursor is None:
            return entries


def assert_refused(body: dict, reason: str) -> None:
    assert body["error"]["code"] == "insufficient_storage", body
    assert body["error"]["details"] == {"reason": reason}


def test_full_storage_is_507_reported_and_recovers(disk, server):
    writer = Writer(server)
    for _ in range(5):
        assert writer.remember()[0] == 200
    assert readiness(server)[0] == 200

    # Full: every write is either acknowledged or refused with 507, never a 500.
    filler = fill(disk)
    assert_refused(writer.until_refused(), "no_space")
    for _ in range(10):
        status, body = writer.remember()
        assert status == 507, body
        assert_refused(body, "no_space")
    status, report = readiness(server)
    assert status == 503
    assert report["status"] == "not_ready"
    assert report["checks"]["storage"]["status"] == "failing"
    assert "no space" in report["checks"]["storage"]["detail"]
    # Reads still work, recall included, and show every acknowledged write.
    assert listed(server) == writer.acknowledged
    status, prepared = server.post(
        "/v1/context/prepare", {"scope_id": SCOPE, "query": "lorem ipsum", "max_bytes": 4000}
    )
    assert (status, prepared["status"]) == (200, "ready"), prepared

    # Space is back: ready again without a restart, and writes are accepted.
    filler.unlink()
    status, report = readiness(server)
    assert status == 200, report
    assert report["checks"]["storage"] == {"status": "ok"}
    for _ in range(3):
        assert writer.remember()[0] == 200

    assert set(writer.statuses) <= {200, 507}
    assert listed(server) == writer.acknowledged
    server.stop()
    assert "Integrity check passed." in manage(disk / "home", "check_integrity")
