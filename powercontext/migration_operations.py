"""Migration operations for engine-specific DDL (full-text indexes)."""

from django.db.migrations.operations import RunSQL


def engine_of(connection) -> str:
    """ "sqlite", "oceanbase", or the vendor name for anything else."""
    if getattr(connection.features, "is_oceanbase", False):
        return "oceanbase"
    return connection.vendor


class RunSQLForEngine(RunSQL):
    """RunSQL that applies only on one engine ("sqlite" or "oceanbase").

    Index DDL differs per engine (FTS5 virtual tables and triggers; FULLTEXT ... WITH
    PARSER SPACE), while the models and the rest of the migration graph are shared.
    """

    def __init__(self, engine: str, sql, reverse_sql=None, **kwargs):
        self.engine = engine
        super().__init__(sql, reverse_sql, **kwargs)

    def deconstruct(self):
        name, args, kwargs = super().deconstruct()
        return name, [self.engine, *args], kwargs

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if engine_of(schema_editor.connection) == self.engine:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if engine_of(schema_editor.connection) == self.engine:
            super().database_backwards(app_label, schema_editor, from_state, to_state)

    def describe(self):
        return f"Raw SQL for {self.engine}"
