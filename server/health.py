"""Readiness checks (DESIGN.md §4, "Health")."""

from typing import Any

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from powercontext import storage
from powercontext.maintenance import missing_indexes

_STORAGE_DETAILS = {
    storage.NO_SPACE: "no space left for the database; writes answer 507 insufficient_storage",
    storage.READ_ONLY: "the database is read-only; writes answer 507 insufficient_storage",
}


def _database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return {"status": "ok"}


def _migrations() -> dict[str, Any]:
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        return {"status": "failing", "detail": f"{len(pending)} migration(s) pending"}
    return {"status": "ok"}


def _fulltext() -> dict[str, Any]:
    # Every family's index: a prepare searches them all, so one missing fails them all.
    problems = missing_indexes()
    if not problems:
        return {"status": "ok"}
    detail = "; ".join(f"{family}: {problem}" for family, problem in problems.items())
    return {"status": "failing", "detail": detail}


def _vectors() -> dict[str, Any]:
    # Never failing: without vectors search answers lexically. The detail says why not.
    from powercontext.search import catch_up, vectors

    check = vectors.readiness()
    running = catch_up.current()
    if running is not None:
        check["detail"] += (
            f"; {running.index}: embedding in the background, "
            f"{running.done:,} of {running.total:,} rows"
        )
    return check


def _storage() -> dict[str, Any]:
    # Ready means able to take writes: recall alone would still work, but a client that
    # captures and remembers would lose every write to a server reported ready.
    reason = storage.check()
    if reason is None:
        return {"status": "ok"}
    return {"status": "failing", "detail": _STORAGE_DETAILS[reason]}


def readiness() -> dict[str, Any]:
    """``{status: ready|degraded|not_ready, checks: {name: {status, detail?}}}``:
    ``degraded`` when only ``vector_index`` fails (search answers lexically)."""
    checks: dict[str, Any] = {}
    try:
        checks["database"] = _database()
    except DatabaseError:
        checks["database"] = {"status": "failing", "detail": "database unreachable"}
        return {"status": "not_ready", "checks": checks}
    for name, check in (
        ("migrations", _migrations),
        ("fulltext_index", _fulltext),
        ("storage", _storage),
        ("vector_index", _vectors),
    ):
        try:
            checks[name] = check()
        except DatabaseError:
            checks[name] = {"status": "failing", "detail": "check failed"}
    failing = {name for name, check in checks.items() if check["status"] != "ok"}
    if not failing:
        return {"status": "ready", "checks": checks}
    # The semantic channel alone failing (its model cannot be loaded): requests are
    # still served, lexically, so "degraded" (200), never "ready" with nothing said.
    if failing == {"vector_index"}:
        return {"status": "degraded", "checks": checks}
    return {"status": "not_ready", "checks": checks}
