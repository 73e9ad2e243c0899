"""One consistent read across several queries (DESIGN.md §5, "Consistency").

Prepare and search read the Memory head and then search the projection; both must see
the same committed state, or a hit could cite a revision other than the one searched.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction


@contextmanager
def read_snapshot() -> Iterator[None]:
    """Run the block in one read transaction with a stable snapshot."""
    if connection.in_atomic_block:
        # Already inside a transaction (a write path, or a test): it is the snapshot.
        yield
        return
    if connection.vendor == "sqlite":
        # Django opens SQLite transactions as IMMEDIATE (settings: writers queue on the
        # write lock). A reader must not take that lock, so open a DEFERRED transaction by
        # hand: under WAL its first read pins a snapshot that later commits don't change.
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("BEGIN DEFERRED")
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("ROLLBACK")
        return
    # OceanBase: sessions stay READ COMMITTED (the writers' compare-and-swap relies on a
    # lost race matching 0 rows rather than failing), and only this read transaction is
    # REPEATABLE READ, which on OceanBase is a real snapshot taken at its first read.
    # ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` under READ COMMITTED is not one.
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Applies to the transaction that starts with the next statement.
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield
