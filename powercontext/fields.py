"""Model fields shared by every app."""

from django.db import models


class IdentityField(models.CharField):
    """A CharField for identities (ids, scope ids): compared byte for byte.

    SQLite compares text with BINARY collation already. On MySQL-mode databases
    (OceanBase) the default utf8mb4 collation is case- and accent-insensitive, which
    would let ``Scope`` and ``scope`` (or two ids differing only in an accent) collide,
    so these columns get ``utf8mb4_bin`` there. Decided per connection, so one migration
    serves every backend.
    """

    def db_parameters(self, connection):
        params = super().db_parameters(connection)
        if connection.vendor == "mysql":
            params["collation"] = "utf8mb4_bin"
        return params
