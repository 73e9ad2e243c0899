"""Test database creation on OceanBase."""

from __future__ import annotations

from django.db.backends.mysql.creation import DatabaseCreation as MySQLDatabaseCreation

DEFAULT_CHARSET = "utf8mb4"
# Binary collation: text compares and indexes by code point, so "Foo" and "foo" (or
# "é" and "e") are different memories. The server default, utf8mb4_general_ci, would
# fold them together. Like MySQL's, OceanBase's utf8mb4_bin is PAD SPACE: trailing
# spaces are ignored in comparisons and unique keys.
DEFAULT_COLLATION = "utf8mb4_bin"


class DatabaseCreation(MySQLDatabaseCreation):
    def sql_table_creation_suffix(self) -> str:
        """``test_<NAME>`` is created utf8mb4/utf8mb4_bin unless TEST says otherwise."""
        test_settings = self.connection.settings_dict["TEST"]
        charset = test_settings.get("CHARSET") or DEFAULT_CHARSET
        collation = test_settings.get("COLLATION") or DEFAULT_COLLATION
        return f"CHARACTER SET {charset} COLLATE {collation}"
