"""Schema editor: Django's MySQL one, plus FULLTEXT index DDL for OceanBase."""

from __future__ import annotations

from django.db.backends.mysql.schema import DatabaseSchemaEditor as MySQLDatabaseSchemaEditor

# The analyzer already did the tokenising, so the index splits on spaces only. The
# default min_token_size is 3, which would silently drop 1- and 2-character tokens (CJK
# unigrams and bigrams, "db", "ui"); 1 keeps every token. OceanBase's built-in English
# stopwords ("the", "of", "a", "in", ...) are dropped whatever the properties say.
FULLTEXT_PARSER = "WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)"


class DatabaseSchemaEditor(MySQLDatabaseSchemaEditor):
    sql_create_fulltext_index = (
        "CREATE FULLTEXT INDEX %(name)s ON %(table)s (%(columns)s) %(parser)s"
    )
    sql_delete_fulltext_index = "DROP INDEX %(name)s ON %(table)s"

    @property
    def _supports_limited_data_type_defaults(self) -> bool:
        # MySQL >= 8.0.13 accepts DEFAULT ('x') on TEXT/BLOB/JSON; OceanBase refuses
        # any default there (1067, 1101). Saying so makes Django leave those defaults
        # out of the DDL and backfill added columns with an UPDATE, as for MySQL 5.7.
        return False

    def fulltext_index_sql(self, table: str, name: str, columns: list[str]) -> str:
        """``CREATE FULLTEXT INDEX`` for OceanBase with the space parser (see above)."""
        return self.sql_create_fulltext_index % {
            "name": self.quote_name(name),
            "table": self.quote_name(table),
            "columns": ", ".join(self.quote_name(column) for column in columns),
            "parser": FULLTEXT_PARSER,
        }

    def delete_fulltext_index_sql(self, table: str, name: str) -> str:
        return self.sql_delete_fulltext_index % {
            "name": self.quote_name(name),
            "table": self.quote_name(table),
        }
