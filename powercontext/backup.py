"""A backup of the running SQLite database, by SQLite's online backup API.

One step of ``sqlite3_backup`` copies every page inside one read transaction: under WAL
the copy is the database as of one instant while writers go on, and it is everything
(history, indexes, vectors), so a restore is a file copy with nothing to rebuild. The
copy is written to a private temporary file beside the destination, checked with
``PRAGMA integrity_check``, switched to a rollback journal (one self-contained file) and
renamed into place. OceanBase has no such file: its backup is ``manage.py export``
(docs/oceanbase.md).
"""

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from django.db import connection


class BackupUnsupported(Exception):
    """This database is not SQLite."""


class BackupFailed(Exception):
    """The copy could not be made or does not check; nothing is left at the destination."""


@dataclass(frozen=True)
class BackupReport:
    path: Path
    source: str
    bytes: int
    pages: int
    seconds: float


def sqlite_backup(*, out: Path) -> BackupReport:
    """Copy the running SQLite database to ``out`` (replaced if it exists, mode 0600).

    Raises BackupUnsupported on another engine and BackupFailed when the copy does not
    pass ``PRAGMA integrity_check``.
    """
    if connection.vendor != "sqlite":
        raise BackupUnsupported(
            # display_name: OceanBase's vendor is "mysql" (Django's MySQL code runs on it).
            f"{connection.display_name} has no database file to copy: back it up with "
            "`manage.py export --out FILE` (docs/oceanbase.md)."
        )
    from powercontext.db.backends.sqlite.base import Database, load_sqlite_vec

    started = time.monotonic()
    connection.ensure_connection()
    source = connection.connection
    temporary = out.with_name(f".{out.name}.{os.getpid()}.partial")
    os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    try:
        target = Database.connect(str(temporary))
        try:
            # vec0 tables are virtual: their module must be there for the check to read them.
            load_sqlite_vec(target)
            # pages=-1: one step, one read transaction, so the copy is one instant (a
            # copy in several steps restarts whenever another connection writes).
            source.backup(target, pages=-1)
            problems = [row[0] for row in target.execute("PRAGMA integrity_check")]
            if problems != ["ok"]:
                raise BackupFailed(f"the copy fails PRAGMA integrity_check: {problems[:5]}")
            # A single self-contained file: no -wal beside it to lose in a copy.
            target.execute("PRAGMA journal_mode=DELETE")
            pages = target.execute("PRAGMA page_count").fetchone()[0]
        finally:
            target.close()
        with open(temporary, "rb+") as file:
            os.fsync(file.fileno())
        os.replace(temporary, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return BackupReport(
        path=out,
        source=str(connection.settings_dict["NAME"]),
        bytes=out.stat().st_size,
        pages=pages,
        seconds=time.monotonic() - started,
    )
