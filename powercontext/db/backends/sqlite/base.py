"""SQLite database backend: Django's own, on sqlean's SQLite, with sqlite-vec loaded.

The vector channel needs the ``sqlite-vec`` extension, and loading an extension needs
``Connection.enable_load_extension``, which many Pythons users have lack (pyenv and
python.org builds are compiled without it). ``sqlean-py`` is a drop-in DB-API ``sqlite3``
module with its own SQLite (3.49.1, FTS5 built in) and wheels for Linux, macOS and
Windows, so every install gets the same SQLite whatever its Python was built with.

Everything else is Django's SQLite backend. Three things there name the standard
library's ``sqlite3`` module directly rather than ``DatabaseWrapper.Database``, and are
redone here on sqlean: the adapters and converters (registered per module), the cursor
wrapper (a connection only accepts cursor factories derived from its own module's
``Cursor``) and ``get_new_connection``. Version-dependent feature flags read the SQLite
that is really connected (``features.py``, ``operations.py``).

Every connection runs with ``secure_delete`` on, so that erasure (``purge_sources``,
retention, ``redact_secrets``) leaves no byte of what it erased in the file.

sqlean's own bundled extensions (among them ``fileio``, which reads and writes files)
are switched on by ``SQLEAN_ENABLE*`` environment variables; they stay off here, and
extension loading is switched off again once sqlite-vec is in, so SQL cannot load
anything.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Mapping
from itertools import tee

import sqlean
import sqlite_vec
from django.db.backends.sqlite3 import base as sqlite_base
from django.db.backends.sqlite3._functions import register as register_functions
from django.utils.asyncio import async_unsafe
from sqlean import dbapi2 as Database

from .features import DatabaseFeatures
from .operations import DatabaseOperations

# Read by sqlean at every connect; "0" wins over any per-extension switch.
sqlean.extensions.disable_all()

Database.register_converter("bool", b"1".__eq__)
Database.register_converter("date", sqlite_base.decoder(sqlite_base.parse_date))
Database.register_converter("time", sqlite_base.decoder(sqlite_base.parse_time))
Database.register_converter("datetime", sqlite_base.decoder(sqlite_base.parse_datetime))
Database.register_converter("timestamp", sqlite_base.decoder(sqlite_base.parse_datetime))
Database.register_adapter(decimal.Decimal, str)
Database.register_adapter(datetime.date, sqlite_base.adapt_date)
Database.register_adapter(datetime.datetime, sqlite_base.adapt_datetime)


def load_sqlite_vec(conn: Database.Connection) -> None:
    """Load sqlite-vec into ``conn``, then forbid further extension loading."""
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


class DatabaseWrapper(sqlite_base.DatabaseWrapper):
    display_name = "SQLite (sqlean, sqlite-vec)"
    Database = Database
    features_class = DatabaseFeatures
    ops_class = DatabaseOperations

    @async_unsafe
    def get_new_connection(self, conn_params: dict) -> Database.Connection:
        # As Django's, on sqlean's module, with sqlite-vec loaded before the init
        # commands (which may already use it).
        conn = Database.connect(**conn_params)
        register_functions(conn)
        load_sqlite_vec(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA legacy_alter_table = OFF")
        # Deleted and overwritten content is zeroed, on every connection: by default
        # SQLite leaves it in free space (freed cells, pages moved by a split), and an
        # erasure can only zero the cells it deletes itself, not the stale copies an
        # earlier write of the serving connection left behind (docs/RELIABILITY.md).
        conn.execute("PRAGMA secure_delete = ON")
        for init_command in self.init_commands:
            if init_command := init_command.strip():
                conn.execute(init_command)
        return conn

    def create_cursor(self, name: str | None = None) -> SQLiteCursorWrapper:
        return self.connection.cursor(factory=SQLiteCursorWrapper)


class SQLiteCursorWrapper(Database.Cursor):
    """Django's ``SQLiteCursorWrapper`` (format and pyformat to qmark and named styles),
    derived from sqlean's ``Cursor``; the code is Django 5.2's, unchanged."""

    def execute(self, query, params=None):  # type: ignore[no-untyped-def]
        if params is None:
            return super().execute(query)
        param_names = list(params) if isinstance(params, Mapping) else None
        query = self.convert_query(query, param_names=param_names)
        return super().execute(query, params)

    def executemany(self, query, param_list):  # type: ignore[no-untyped-def]
        peekable, param_list = tee(iter(param_list))
        if (params := next(peekable, None)) and isinstance(params, Mapping):
            param_names = list(params)
        else:
            param_names = None
        query = self.convert_query(query, param_names=param_names)
        return super().executemany(query, param_list)

    def convert_query(self, query, *, param_names=None):  # type: ignore[no-untyped-def]
        if param_names is None:
            return sqlite_base.FORMAT_QMARK_REGEX.sub("?", query).replace("%%", "%")
        else:
            return query % {name: f":{name}" for name in param_names}
