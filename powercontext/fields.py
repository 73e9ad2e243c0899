"""Model fields shared by every app."""

from django.db import models


class IdentityField(models.CharField):
    """A CharField for identities (ids, scope ids): compared byte for byte.

    SQLite compares text with BINARY collation already. On MySQL-mode databases
    (OceanBase) every utf8mb4 collation there is either case-insensitive or PAD SPACE
    (``utf8mb4_bin`` treats ``"s"`` and ``"s "`` as equal, in lookups and in unique keys),
    which would let two scopes share memory. There the column is VARBINARY (4 bytes per
    character, UTF-8 encoded), where every byte counts, and values are decoded on the
    way back. Decided per connection, so one migration serves every backend.
    """

    def db_type(self, connection):
        if connection.vendor == "mysql":
            return f"varbinary({self.max_length * 4})"
        return super().db_type(connection)

    def from_db_value(self, value, expression, connection):
        return identity_text(value)


def identity_text(value: bytes | str) -> str:
    """An identity column's value as read back, as text: raw SQL on an IdentityField
    column gets bytes on OceanBase (VARBINARY) and text on SQLite."""
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else value
