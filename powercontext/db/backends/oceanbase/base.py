"""OceanBase (MySQL mode) database backend: Django's MySQL backend, told the truth.

OceanBase answers ``VERSION()`` with a MySQL 5.7 version string (``5.7.25-OceanBase
seekdb-v1.4.0.0``), which Django's MySQL backend refuses (it wants 8.0.11) and from which
it would infer a MySQL 5.7 feature set. OceanBase is neither: it is recognised here by
``@@version_comment`` (``OceanBase 4.3.5.3 seekdb ...``, ``OceanBase_CE 4.3.5.1 ...``),
its own version is what the minimum-version check compares, and ``features.py`` states
what it really supports, flag by flag.

``vendor`` stays ``"mysql"`` because Django's own code (lookups, functions, the schema
editor, migrations' ``RunSQL`` hints) branches on it and OceanBase speaks that dialect.
OceanBase-only SQL branches on ``connection.features.is_oceanbase``. Plain MySQL and
MariaDB are refused: PowerContext's search needs ``FULLTEXT ... WITH PARSER SPACE``.
"""

from __future__ import annotations

import re

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.mysql import base as mysql_base
from django.utils.functional import cached_property

from .creation import DatabaseCreation
from .features import DatabaseFeatures
from .schema import DatabaseSchemaEditor

# "OceanBase 4.3.5.3 seekdb (r1.4.0.0) (Built ...)", "OceanBase_CE 4.3.5.1 (r1010...)".
_VERSION_COMMENT = re.compile(r"^OceanBase(?:_CE)?\s+v?(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")

# Options that arrive as strings from a database URL's query but that mysqlclient wants
# as integers.
_INTEGER_OPTIONS = ("connect_timeout", "read_timeout", "write_timeout", "local_infile")


def parse_version_comment(comment: str) -> tuple[int, ...] | None:
    """OceanBase's own version from ``@@version_comment``; None if it is not OceanBase."""
    match = _VERSION_COMMENT.match(comment or "")
    if match is None:
        return None
    return tuple(int(part) for part in match.groups() if part is not None)


class DatabaseWrapper(mysql_base.DatabaseWrapper):
    vendor = "mysql"
    display_name = "OceanBase"

    SchemaEditorClass = DatabaseSchemaEditor
    creation_class = DatabaseCreation
    features_class = DatabaseFeatures

    def get_connection_params(self) -> dict:
        kwargs = super().get_connection_params()
        for key in _INTEGER_OPTIONS:
            value = kwargs.get(key)
            if isinstance(value, str) and value.isdigit():
                kwargs[key] = int(value)
        return kwargs

    def init_connection_state(self) -> None:
        # The parent runs the version check (which refuses MySQL/MariaDB), then sets
        # the isolation level (READ COMMITTED unless OPTIONS say otherwise).
        super().init_connection_state()
        if self.timezone_name == "UTC":
            # OceanBase sessions default to time_zone '+08:00'. Django stores UTC
            # (USE_TZ) and renders Now() as CURRENT_TIMESTAMP(6), which follows the
            # session zone: without this, db-side "now" is eight hours off. The
            # offset form works without the named-zone tables (seekdb has none).
            with self.cursor() as cursor:
                cursor.execute("SET time_zone = '+00:00'")

    @cached_property
    def mysql_server_data(self) -> dict:
        with self.temporary_connection() as cursor:
            # As Django's, plus @@version_comment: the only place OceanBase names itself.
            cursor.execute(
                """
                SELECT VERSION(),
                       @@version_comment,
                       @@sql_mode,
                       @@default_storage_engine,
                       @@sql_auto_is_null,
                       @@lower_case_table_names,
                       CONVERT_TZ('2001-01-01 01:00:00', 'UTC', 'UTC') IS NOT NULL
                """
            )
            row = cursor.fetchone()
        return {
            "version": row[0],
            "version_comment": row[1] or "",
            "sql_mode": row[2],
            "default_storage_engine": row[3],
            "sql_auto_is_null": bool(row[4]),
            "lower_case_table_names": bool(row[5]),
            "has_zoneinfo_database": bool(row[6]),
        }

    @cached_property
    def oceanbase_version(self) -> tuple[int, ...]:
        """OceanBase's kernel version, e.g. (4, 3, 5, 3). Refuses anything else."""
        data = self.mysql_server_data
        version = parse_version_comment(data["version_comment"])
        if version is None:
            raise ImproperlyConfigured(
                "The OceanBase backend (powercontext.db.backends.oceanbase) is connected "
                f"to a server that is not OceanBase: VERSION()={data['version']!r}, "
                f"@@version_comment={data['version_comment']!r}. Plain MySQL and MariaDB "
                "are not supported (no FULLTEXT ... WITH PARSER SPACE); use SQLite or "
                "OceanBase in MySQL mode."
            )
        return version

    def get_database_version(self) -> tuple[int, ...]:
        # Compared with features.minimum_database_version by the connection check.
        return self.oceanbase_version[:3]
