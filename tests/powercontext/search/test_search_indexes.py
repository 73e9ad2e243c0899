# ruff: noqa: E501 - the statements are kept exactly as the migrations wrote them
"""The one index interface: each declared index's DDL is, byte for byte, what the
migrations ran before the declarations existed (an existing database must never see
other statements), and the declarations name the tables their models use."""

from importlib import import_module

import pytest

from experience.search_index import EXPERIENCE_INDEX
from memory.models import MemoryActiveEntry
from memory.search_index import MEMORY_INDEX
from powercontext.models import ArtifactHead
from powercontext.search import index_ddl
from powercontext.search.indexes import declared_indexes

# Copied from memory/migrations/0002_fulltext_sqlite.py, memory/migrations/
# 0004_fulltext_oceanbase.py, experience/migrations/0002_fulltext_sqlite.py and
# experience/migrations/0004_fulltext_oceanbase.py as they were written by hand.

MEMORY_SQLITE_FORWARD = [
    """
    CREATE VIRTUAL TABLE memory_activeentry_fts USING fts5(
        scope_token, searchable_text,
        content='memory_memoryactiveentry', content_rowid='id',
        tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '_'"
    )
    """,
    """
    CREATE TRIGGER memory_activeentry_fts_insert AFTER INSERT ON memory_memoryactiveentry BEGIN
        INSERT INTO memory_activeentry_fts(rowid, scope_token, searchable_text)
        VALUES (new.id, new.scope_token, new.searchable_text);
    END
    """,
    """
    CREATE TRIGGER memory_activeentry_fts_delete AFTER DELETE ON memory_memoryactiveentry BEGIN
        INSERT INTO memory_activeentry_fts(memory_activeentry_fts, rowid, scope_token, searchable_text)
        VALUES ('delete', old.id, old.scope_token, old.searchable_text);
    END
    """,
    """
    CREATE TRIGGER memory_activeentry_fts_update AFTER UPDATE ON memory_memoryactiveentry BEGIN
        INSERT INTO memory_activeentry_fts(memory_activeentry_fts, rowid, scope_token, searchable_text)
        VALUES ('delete', old.id, old.scope_token, old.searchable_text);
        INSERT INTO memory_activeentry_fts(rowid, scope_token, searchable_text)
        VALUES (new.id, new.scope_token, new.searchable_text);
    END
    """,
    "INSERT INTO memory_activeentry_fts(memory_activeentry_fts) VALUES ('rebuild')",
]

MEMORY_SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS memory_activeentry_fts_update",
    "DROP TRIGGER IF EXISTS memory_activeentry_fts_delete",
    "DROP TRIGGER IF EXISTS memory_activeentry_fts_insert",
    "DROP TABLE IF EXISTS memory_activeentry_fts",
]

MEMORY_OCEANBASE_FORWARD = [
    "CREATE FULLTEXT INDEX `memory_activeentry_ft` ON `memory_memoryactiveentry` "
    "(`searchable_text`) WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)",
]
MEMORY_OCEANBASE_REVERSE = ["DROP INDEX `memory_activeentry_ft` ON `memory_memoryactiveentry`"]

EXPERIENCE_SQLITE_FORWARD = [
    """
    CREATE VIRTUAL TABLE experience_head_fts USING fts5(
        scope_token, searchable_text, artifact_id UNINDEXED, revision UNINDEXED,
        tokenize="unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '_'"
    )
    """,
]

EXPERIENCE_SQLITE_REVERSE = [
    "DROP TABLE IF EXISTS experience_head_fts",
]

EXPERIENCE_OCEANBASE_FORWARD = [
    "CREATE FULLTEXT INDEX `artifact_head_searchable_ft` ON `powercontext_artifacthead` "
    "(`searchable_text`) WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)",
]
EXPERIENCE_OCEANBASE_REVERSE = [
    "DROP INDEX `artifact_head_searchable_ft` ON `powercontext_artifacthead`"
]

LITERAL_DDL = {
    ("memory_activeentry", "sqlite"): (MEMORY_SQLITE_FORWARD, MEMORY_SQLITE_REVERSE),
    ("memory_activeentry", "oceanbase"): (MEMORY_OCEANBASE_FORWARD, MEMORY_OCEANBASE_REVERSE),
    ("experience_head", "sqlite"): (EXPERIENCE_SQLITE_FORWARD, EXPERIENCE_SQLITE_REVERSE),
    ("experience_head", "oceanbase"): (
        EXPERIENCE_OCEANBASE_FORWARD,
        EXPERIENCE_OCEANBASE_REVERSE,
    ),
}


@pytest.mark.parametrize(("name", "engine"), sorted(LITERAL_DDL))
def test_the_engines_build_the_statements_the_migrations_always_ran(name, engine):
    (index,) = [index for index in declared_indexes() if index.name == name]
    assert index_ddl(engine, index) == LITERAL_DDL[name, engine]


@pytest.mark.parametrize(
    ("path", "index", "engine"),
    [
        ("memory.migrations.0002_fulltext_sqlite", MEMORY_INDEX, "sqlite"),
        ("memory.migrations.0004_fulltext_oceanbase", MEMORY_INDEX, "oceanbase"),
        ("experience.migrations.0002_fulltext_sqlite", EXPERIENCE_INDEX, "sqlite"),
        ("experience.migrations.0004_fulltext_oceanbase", EXPERIENCE_INDEX, "oceanbase"),
    ],
)
def test_each_migration_runs_the_engine_ddl_on_its_engine_only(path, index, engine):
    (operation,) = import_module(path).Migration.operations
    assert operation.engine == engine
    assert (list(operation.sql), list(operation.reverse_sql)) == index_ddl(engine, index)


def test_every_declared_index_is_known_here_and_names_its_models_table():
    assert {index.name for index in declared_indexes()} == {name for name, _ in LITERAL_DDL}
    assert MEMORY_INDEX.table == MemoryActiveEntry._meta.db_table
    assert EXPERIENCE_INDEX.table == ArtifactHead._meta.db_table
