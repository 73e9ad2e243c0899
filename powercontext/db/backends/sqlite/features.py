"""Django's SQLite feature flags, for the SQLite sqlean brings.

Django's ``features.py`` compares the standard library's ``sqlite3.sqlite_version_info``
(SQLite 3.40 in some Pythons), not the library this backend connects with; the flags
that depend on the version are derived here from sqlean's.
"""

from __future__ import annotations

from django.db.backends.sqlite3.features import DatabaseFeatures as SQLiteDatabaseFeatures
from django.utils.functional import cached_property
from sqlean import dbapi2 as Database


class DatabaseFeatures(SQLiteDatabaseFeatures):
    can_alter_table_drop_column = Database.sqlite_version_info >= (3, 35, 5)

    @cached_property
    def can_return_columns_from_insert(self) -> bool:
        return Database.sqlite_version_info >= (3, 35)
