"""Django's SQLite operations, with the one version check read from sqlean's SQLite."""

from __future__ import annotations

from django.db.backends.sqlite3.operations import DatabaseOperations as SQLiteDatabaseOperations
from sqlean import dbapi2 as Database


class DatabaseOperations(SQLiteDatabaseOperations):
    def force_group_by(self) -> list[str]:
        return ["GROUP BY TRUE"] if Database.sqlite_version_info < (3, 39) else []
