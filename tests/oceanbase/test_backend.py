"""The OceanBase backend against a real OceanBase (embedded seekdb in CI).

Collected on every run, skipped unless the default database is OceanBase. DDL on
OceanBase commits implicitly, so tests that create tables use ``transaction=True``
(TransactionTestCase semantics) and drop what they create.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import (
    DataError,
    IntegrityError,
    OperationalError,
    connection,
    connections,
    models,
    transaction,
)
from django.db.models.functions import Now
from django.test.utils import isolate_apps
from django.utils import timezone

from powercontext.snapshot import read_snapshot

# The backend imports mysqlclient, which a SQLite-only install does not have.
pytest.importorskip("MySQLdb", reason="mysqlclient is not installed")

from powercontext.db.backends.oceanbase import errors
from powercontext.db.backends.oceanbase.base import (
    DatabaseWrapper,
)

pytestmark = [
    pytest.mark.oceanbase,
    pytest.mark.skipif(
        not getattr(connection.features, "is_oceanbase", False),
        reason="the default database is not OceanBase",
    ),
]


# --- helpers -----------------------------------------------------------------------


def _execute(sql: str, params: tuple | list | None = None, *, using=None):
    conn = using or connection
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        if cursor.description is None:
            return cursor.rowcount
        return cursor.fetchall()


PROBE = "pc_backend_probe"


@pytest.fixture
def revision_table() -> Iterator[str]:
    """A throwaway ``(id, revision, body)`` table with a FULLTEXT index, dropped after."""
    _execute("DROP TABLE IF EXISTS pc_backend_probe")
    _execute(
        "CREATE TABLE pc_backend_probe (id integer PRIMARY KEY,"
        " scope_id varchar(256) NOT NULL, revision integer NOT NULL, body longtext NOT NULL)"
    )
    with connection.schema_editor() as editor:
        editor.execute(editor.fulltext_index_sql(PROBE, "pc_backend_probe_ft", ["body"]))
    _execute(
        "INSERT INTO pc_backend_probe (id, scope_id, revision, body) VALUES (1, 's', 1, 'start')"
    )
    yield PROBE
    _execute("DROP TABLE IF EXISTS pc_backend_probe")


def _second_connection():
    """A new connection to the same database, outside Django's per-thread handler."""
    return connections.create_connection("default")


@contextmanager
def _transaction_on(conn) -> Iterator[None]:
    """``atomic()`` for a connection that has no alias of its own."""
    conn.ensure_connection()
    conn.set_autocommit(False)
    try:
        yield
    except BaseException:
        conn.rollback()
        raise
    else:
        conn.commit()
    finally:
        conn.set_autocommit(True)


# --- identity ----------------------------------------------------------------------


def test_backend_keeps_the_mysql_vendor_and_flags_oceanbase():
    assert connection.vendor == "mysql"
    assert connection.display_name == "OceanBase"
    assert connection.features.is_oceanbase is True
    assert connection.get_database_version() >= (4, 3, 5)


def test_plain_mysql_is_refused():
    wrapper = DatabaseWrapper(connection.settings_dict, alias="probe")
    # What MySQL 8.0 answers; the connection itself is never opened.
    wrapper.__dict__["mysql_server_data"] = {
        "version": "8.0.36",
        "version_comment": "MySQL Community Server - GPL",
    }
    with pytest.raises(ImproperlyConfigured, match="not OceanBase"):
        wrapper.get_database_version()


@pytest.mark.django_db
def test_test_database_is_utf8mb4_with_a_binary_collation():
    rows = _execute("SELECT @@character_set_database, @@collation_database")
    assert rows[0] == ("utf8mb4", "utf8mb4_bin")


@pytest.mark.django_db
def test_session_is_read_committed_in_utc():
    rows = _execute("SELECT @@transaction_isolation, @@time_zone")
    assert rows[0] == ("READ-COMMITTED", "+00:00")


@pytest.mark.django_db
def test_database_now_agrees_with_django_now():
    user = User.objects.create(username="clock")
    User.objects.filter(pk=user.pk).update(last_login=Now())
    user.refresh_from_db()
    assert abs(user.last_login - timezone.now()) < timedelta(minutes=1)


# --- Django's test cases -----------------------------------------------------------


@pytest.mark.django_db
class TestTestCaseRollsBack:
    """Definition order: the second test sees nothing of the first one's rows."""

    def test_first_creates_a_row(self):
        User.objects.create(username="rolled-back")
        assert User.objects.filter(username="rolled-back").exists()

    def test_second_does_not_see_it(self):
        assert not User.objects.filter(username="rolled-back").exists()


@pytest.mark.django_db(transaction=True)
class TestTransactionTestCaseFlushes:
    def test_first_commits_a_row(self):
        User.objects.create(username="flushed")
        assert not connection.in_atomic_block

    def test_second_does_not_see_it(self):
        assert not User.objects.filter(username="flushed").exists()


@pytest.mark.django_db
def test_savepoint_rollback_keeps_the_outer_work():
    User.objects.create(username="outer")
    savepoint = transaction.savepoint()
    User.objects.create(username="inner")
    transaction.savepoint_rollback(savepoint)
    assert set(User.objects.values_list("username", flat=True)) == {"outer"}


@pytest.mark.django_db
def test_duplicate_key_is_an_integrity_error_with_code_1062():
    User.objects.create(username="twice")
    with pytest.raises(IntegrityError) as raised, transaction.atomic():
        User.objects.create(username="twice")
    assert raised.value.args[0] == errors.DUPLICATE_KEY


# --- schema features, on a throwaway model ----------------------------------------


@pytest.mark.django_db(transaction=True)
@isolate_apps("tests")
def test_features_hold_on_a_throwaway_model():
    class Probe(models.Model):
        amount = models.PositiveIntegerField()
        data = models.JSONField(default=dict)
        label = models.CharField(max_length=50)

        class Meta:
            app_label = "tests"
            db_table = "pc_backend_feature_probe"
            constraints = [
                models.CheckConstraint(
                    condition=~models.Q(label="bad"), name="pc_probe_label_not_bad"
                ),
            ]
            indexes = [
                models.Index(models.functions.Lower("label"), name="pc_probe_lower_label"),
            ]

        def __str__(self) -> str:
            return self.label

    with connection.schema_editor() as editor:
        editor.create_model(Probe)
    try:
        Probe.objects.create(amount=1, data={"k": [1, 2], "n": None}, label="Ok")
        Probe.objects.create(amount=2, data={"k": [3]}, label="other")
        with pytest.raises(IntegrityError):
            Probe.objects.create(amount=1, label="bad")
        with pytest.raises(DataError):  # integer UNSIGNED refuses it before the CHECK
            Probe.objects.create(amount=-1, label="negative")

        assert list(Probe.objects.filter(data__k__contains=[1]).values_list("label", flat=True))
        assert Probe.objects.filter(data__n__isnull=False).count() == 1
        assert Probe.objects.filter(data__has_key="k").count() == 2

        first = Probe.objects.filter(amount__lte=2).values("amount")
        second = Probe.objects.filter(amount=2).values("amount")
        assert list(first.intersection(second)) == [{"amount": 2}]
        assert list(first.difference(second)) == [{"amount": 1}]

        with transaction.atomic():
            locked = list(Probe.objects.select_for_update(skip_locked=True).order_by("pk"))
            assert len(locked) == 2
            list(Probe.objects.select_for_update(nowait=True).filter(pk=locked[0].pk))

        constraints = connection.introspection.get_constraints(
            connection.cursor(), Probe._meta.db_table
        )
        assert constraints["pc_probe_label_not_bad"]["check"] is True
        assert "pc_probe_lower_label" in constraints

        with connection.schema_editor() as editor:
            field = models.TextField(default="x")
            field.set_attributes_from_name("note")
            editor.add_field(Probe, field)  # no DEFAULT on TEXT: backfilled instead
        assert _execute("SELECT DISTINCT note FROM pc_backend_feature_probe") == (("x",),)
    finally:
        with connection.schema_editor() as editor:
            editor.delete_model(Probe)


# --- concurrency ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_compare_and_swap_lets_exactly_one_writer_win(revision_table):
    cas = "UPDATE pc_backend_probe SET revision = 2, body = %s WHERE id = 1 AND revision = 1"
    other = _second_connection()
    result: dict[str, object] = {}

    def second_writer():
        try:
            with _transaction_on(other), other.cursor() as cursor:
                started = time.monotonic()
                cursor.execute(cas, ["second"])
                result["rows"] = cursor.rowcount
                result["waited"] = time.monotonic() - started
        finally:
            other.close()

    with transaction.atomic():
        assert _execute(cas, ["first"]) == 1
        thread = threading.Thread(target=second_writer)
        other.inc_thread_sharing()
        thread.start()
        time.sleep(0.5)
        assert thread.is_alive(), "the second writer should wait for the first"
    thread.join(30)
    other.dec_thread_sharing()
    assert result["rows"] == 0
    assert result["waited"] >= 0.4
    assert _execute("SELECT revision, body FROM pc_backend_probe WHERE id = 1") == ((2, "first"),)


@pytest.mark.django_db(transaction=True)
def test_nowait_on_a_locked_row_raises_lock_wait_timeout(revision_table):
    other = _second_connection()
    try:
        with transaction.atomic():
            _execute("SELECT id FROM pc_backend_probe WHERE id = 1 FOR UPDATE")
            with pytest.raises(OperationalError) as raised, _transaction_on(other):
                _execute(
                    "SELECT id FROM pc_backend_probe WHERE id = 1 FOR UPDATE NOWAIT", using=other
                )
        assert raised.value.args[0] == errors.LOCK_WAIT_TIMEOUT
    finally:
        other.close()


@pytest.mark.django_db(transaction=True)
def test_read_snapshot_does_not_see_a_later_commit(revision_table):
    other = _second_connection()
    try:
        with read_snapshot():
            before = _execute("SELECT body FROM pc_backend_probe WHERE id = 1")
            _execute("UPDATE pc_backend_probe SET body = 'changed' WHERE id = 1", using=other)
            after = _execute("SELECT body FROM pc_backend_probe WHERE id = 1")
            count = _execute("SELECT count(*) FROM pc_backend_probe")
        assert before == after == (("start",),)
        assert count == ((1,),)
        # Outside the snapshot, READ COMMITTED sees the commit.
        assert _execute("SELECT body FROM pc_backend_probe WHERE id = 1") == (("changed",),)
    finally:
        other.close()


# --- full-text --------------------------------------------------------------------


def _match(table: str, query: str, *, using=None):
    assert table == PROBE
    return _execute(
        "SELECT id, MATCH(body) AGAINST(%s IN NATURAL LANGUAGE MODE) AS score FROM pc_backend_probe"
        " WHERE scope_id = %s AND MATCH(body) AGAINST(%s IN NATURAL LANGUAGE MODE)"
        " ORDER BY score DESC, id",
        [query, "s", query],
        using=using,
    )


@pytest.mark.django_db(transaction=True)
def test_fulltext_sees_own_uncommitted_rows_and_others_after_commit(revision_table):
    other = _second_connection()
    try:
        with transaction.atomic():
            _execute(
                "INSERT INTO pc_backend_probe (id, scope_id, revision, body)"
                " VALUES (2, 's', 1, %s)",
                ["zebra crossing"],
            )
            assert [row[0] for row in _match(revision_table, "zebra")] == [2]
            assert _match(revision_table, "zebra", using=other) == ()
        assert [row[0] for row in _match(revision_table, "zebra", using=other)] == [2]
    finally:
        other.close()


@pytest.mark.django_db(transaction=True)
def test_fulltext_keeps_short_tokens_and_scores_by_relevance(revision_table):
    rows = [(2, "db ui 数 数据"), (3, "oceanbase oceanbase seekdb"), (4, "oceanbase cluster")]
    for pk, body in rows:
        _execute(
            "INSERT INTO pc_backend_probe (id, scope_id, revision, body) VALUES (%s, 's', 1, %s)",
            [pk, body],
        )
    for token in ("db", "ui", "数", "数据"):
        assert [row[0] for row in _match(revision_table, token)] == [2], token
    hits = _match(revision_table, "oceanbase")
    assert [row[0] for row in hits] == [3, 4]
    assert hits[0][1] > hits[1][1] > 0
    # Built-in English stopwords are not indexed, whatever the parser properties say.
    _execute("UPDATE pc_backend_probe SET body = 'the of' WHERE id = 1")
    assert _match(revision_table, "the") == ()


@pytest.mark.django_db(transaction=True)
def test_fulltext_index_can_be_added_to_a_filled_table_and_dropped(revision_table):
    with connection.schema_editor() as editor:
        editor.execute(editor.delete_fulltext_index_sql(revision_table, "pc_backend_probe_ft"))
    with pytest.raises(OperationalError) as raised:
        _match(revision_table, "start")
    assert raised.value.args[0] == errors.FULLTEXT_INDEX_MISSING
    with connection.schema_editor() as editor:
        editor.execute(editor.fulltext_index_sql(revision_table, "pc_probe_ft2", ["body"]))
    assert [row[0] for row in _match(revision_table, "start")] == [1]
