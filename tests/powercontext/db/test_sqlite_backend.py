"""The default SQLite engine: Django's backend on sqlean's SQLite, with sqlite-vec loaded."""

import os
import re
import struct
import subprocess
import sys
from importlib import import_module

import dj_database_url
import pytest
import sqlean
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.search import analyzer
from server import config

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="the SQLite engine only (the suite runs on OceanBase)"
)

MEMORY_TOKENIZER = re.search(
    r"tokenize=(\"[^\"]*\")",
    import_module("memory.migrations.0002_fulltext_sqlite").FORWARD[0],
).group(1)


def _vector(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def test_the_default_database_and_sqlite_urls_use_the_engine(tmp_path, monkeypatch):
    monkeypatch.delenv("POWERCONTEXT_DATABASE_URL", raising=False)
    assert config.database_config(tmp_path)["ENGINE"] == config.SQLITE_ENGINE
    monkeypatch.setenv("POWERCONTEXT_DATABASE_URL", f"sqlite:///{tmp_path}/other.sqlite3")
    parsed = config.database_config(tmp_path)
    assert parsed["ENGINE"] == config.SQLITE_ENGINE
    assert parsed["NAME"] == f"{tmp_path}/other.sqlite3"
    assert parsed["OPTIONS"]["transaction_mode"] == "IMMEDIATE"  # the SQLite options apply
    assert dj_database_url.parse("sqlite://")["NAME"] == ":memory:"
    assert connection.settings_dict["ENGINE"] == config.SQLITE_ENGINE


@pytest.mark.django_db
def test_a_connection_has_sqlite_vec_and_sqleans_sqlite():
    assert connection.Database is sqlean.dbapi2
    with connection.cursor() as cursor:
        cursor.execute("SELECT vec_version(), sqlite_version()")
        vec_version, sqlite_version = cursor.fetchone()
    assert vec_version.startswith("v0.1.")
    assert sqlite_version == sqlean.sqlite_version
    assert connection.features.can_return_columns_from_insert


@pytest.mark.django_db
def test_a_cosine_vec0_table_answers_nearest_first_within_a_partition():
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE VIRTUAL TABLE temp.probe USING vec0("
            "scope_id integer partition key, embedding float[3] distance_metric=cosine)"
        )
        rows = [
            (1, 1, _vector(1.0, 0.0, 0.0)),
            (2, 1, _vector(0.7, 0.7, 0.0)),
            (3, 1, _vector(0.0, 0.0, 1.0)),
            (4, 2, _vector(1.0, 0.01, 0.0)),  # nearest of all, but another scope
        ]
        cursor.executemany(
            "INSERT INTO temp.probe(rowid, scope_id, embedding) VALUES (%s, %s, %s)", rows
        )
        cursor.execute(
            "SELECT rowid, distance FROM temp.probe "
            "WHERE embedding MATCH %s AND k = %s AND scope_id = %s ORDER BY distance",
            [_vector(2.0, 0.1, 0.0), 3, 1],
        )
        found = cursor.fetchall()
    assert [rowid for rowid, _ in found] == [1, 2, 3]
    # Cosine distance: scale-free, 1 for orthogonal vectors.
    assert found[0][1] == pytest.approx(1 - 2.0 / (2.0**2 + 0.1**2) ** 0.5, abs=1e-6)
    assert found[2][1] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.django_db
def test_sql_cannot_load_an_extension():
    with connection.cursor() as cursor, pytest.raises(Exception, match="not authorized"):
        cursor.execute("SELECT load_extension('/nonexistent/library')")


def test_sqleans_bundled_extensions_stay_off_whatever_the_environment():
    # fileio (reads and writes files from SQL) is one of them; SQLEAN_ENABLE=1 would
    # switch all of them on for connections of the plain sqlean module.
    code = (
        "import django; django.setup()\n"
        "from django.db import connection\n"
        "cursor = connection.cursor()\n"
        "cursor.execute('SELECT vec_version()')\n"
        "try:\n"
        "    cursor.execute(\"SELECT fileio_read('/dev/null')\")\n"
        "except Exception as exc:\n"
        "    print('refused:', exc)\n"
        "else:\n"
        "    print('enabled')\n"
    )
    environment = {
        **os.environ,
        "SQLEAN_ENABLE": "1",
        "DJANGO_SETTINGS_MODULE": "server.settings",
        "POWERCONTEXT_DATABASE_URL": "sqlite://",
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.startswith("refused: no such function: fileio_read"), result


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=300),
        min_size=1,
        max_size=5,
    )
)
def test_fts5_on_the_engine_splits_searchable_text_exactly_at_the_analyzers_spaces(values):
    # As tests/powercontext/search/test_analyzer.py checks for the standard library's SQLite:
    # sqlean's newer SQLite must tokenise the Memory index's text the same way.
    db = sqlean.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize={MEMORY_TOKENIZER})")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    for value in values:
        db.execute("INSERT INTO t(body) VALUES (?)", [analyzer.searchable_text(value)])
    indexed = {term for (term,) in db.execute("SELECT term FROM v")}
    expected = {token for value in values for token in analyzer.tokens(value)}
    assert indexed == expected
