"""Storage that cannot take a write: no space left, or a read-only database.

Such a failure is the operator's to fix, not a bug, so it is recognised here wherever the
engine reports it (SQLite, OceanBase, the operating system), answered with the documented
507 ``insufficient_storage`` (``powercontext.api.errors``) and reported by readiness
(``server.health``) until the storage takes writes again. A failed write is rolled
back whole by its transaction, so what was acknowledged before stays as it was.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Final, Literal

import sqlean
from django.db import connection

Reason = Literal["no_space", "read_only"]

# The default engine runs on sqlean's sqlite3 module, whose exceptions are its own; the
# standard library's are still those of any other SQLite connection.
_SQLITE_ERRORS: Final = (sqlite3.Error, sqlean.Error)

NO_SPACE: Final = "no_space"
READ_ONLY: Final = "read_only"

# SQLite primary result codes (the low byte of an extended code).
_SQLITE_FULL: Final = 13
_SQLITE_READONLY: Final = 8
_SQLITE_MESSAGES: Final = {
    "database or disk is full": NO_SPACE,
    "attempt to write a readonly database": READ_ONLY,
}
# MySQL-protocol error numbers (exc.args[0]) that OceanBase or MySQL answer for the same
# conditions: 1021 ER_DISK_FULL, 1114 ER_RECORD_FILE_FULL ("the table is full"), 4184
# OB_SERVER_OUTOF_DISK_SPACE; 1290 the server runs read-only, 1036 a read-only table, 1792
# a write in a read-only transaction.
_SERVER_ERRORS: Final = {
    1021: NO_SPACE,
    1114: NO_SPACE,
    4184: NO_SPACE,
    1290: READ_ONLY,
    1036: READ_ONLY,
    1792: READ_ONLY,
}
_OS_ERRORS: Final = {errno.ENOSPC: NO_SPACE, errno.EDQUOT: NO_SPACE, errno.EROFS: READ_ONLY}

# Below this much free space SQLite's next write (WAL frames, a checkpoint) is likely to
# fail, so readiness already says so before a write has to.
SQLITE_MIN_FREE_BYTES: Final = 1024 * 1024
# What the probe writes and syncs next to the database file.
_PROBE_BYTES: Final = 64 * 1024
# Without a file to probe (OceanBase), a recorded failure is believed for this long; a
# later failing write records it again.
SERVER_FAILURE_HOLD_SECONDS: Final = 10.0


def failure_reason(exc: BaseException) -> Reason | None:
    """``no_space`` or ``read_only`` when ``exc`` (or an exception it was raised from)
    says the storage refused a write, else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        reason = _own_reason(current)
        if reason is not None:
            return reason
        current = current.__cause__ or current.__context__
    return None


def _own_reason(exc: BaseException) -> Reason | None:
    if isinstance(exc, _SQLITE_ERRORS):
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int):
            if code & 0xFF == _SQLITE_FULL:
                return NO_SPACE
            if code & 0xFF == _SQLITE_READONLY:
                return READ_ONLY
        return _SQLITE_MESSAGES.get(str(exc))
    if isinstance(exc, OSError):
        return _OS_ERRORS.get(exc.errno)  # type: ignore[return-value]
    # A MySQLdb error: (error number, message). Django's own wrapper carries the same
    # args, so this is checked on whichever exception of the chain holds them.
    args = getattr(exc, "args", ())
    if type(exc).__module__.startswith(("MySQLdb", "django.db")) and args:
        if isinstance(args[0], int):
            return _SERVER_ERRORS.get(args[0])  # type: ignore[return-value]
    return None


class _Failures:
    """The last storage failure this process saw, until readiness finds it over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: Reason | None = None
        self._at = 0.0

    def record(self, reason: Reason) -> None:
        with self._lock:
            self._reason, self._at = reason, time.monotonic()

    def clear(self) -> None:
        with self._lock:
            self._reason = None

    def current(self) -> tuple[Reason | None, float]:
        with self._lock:
            return self._reason, self._at


failures = _Failures()


def check() -> Reason | None:
    """Why the database cannot take writes now, or None. Cheap unless a failure was
    recorded: then the storage is probed, and a passing probe clears the failure."""
    path = _sqlite_path()
    if path is not None:
        observed = _sqlite_filesystem(path)
        if observed is not None:
            return observed
    recorded, at = failures.current()
    if recorded is None:
        return None
    if path is not None:
        if not _sqlite_probe_passes(path):
            return recorded
    elif time.monotonic() - at < SERVER_FAILURE_HOLD_SECONDS:
        return recorded
    failures.clear()
    return None


def _sqlite_path() -> Path | None:
    if connection.vendor != "sqlite":
        return None
    name = str(connection.settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    return Path(name)


def _sqlite_filesystem(path: Path) -> Reason | None:
    """What the file system holding the database says, without writing anything."""
    try:
        stats = os.statvfs(path.parent)
    except (OSError, AttributeError):  # no statvfs on Windows
        return None
    if stats.f_flag & os.ST_RDONLY:
        return READ_ONLY
    if stats.f_bavail * stats.f_frsize < SQLITE_MIN_FREE_BYTES:
        return NO_SPACE
    return None


def _sqlite_probe_passes(path: Path) -> bool:
    """Write, sync and remove a small file beside the database, and open the database
    file for writing: what SQLite's next write needs."""
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".storage-probe-") as probe:
            probe.write(b"\0" * _PROBE_BYTES)
            probe.flush()
            os.fsync(probe.fileno())
        if path.exists():
            with path.open("r+b"):
                pass
    except OSError:
        return False
    return True
