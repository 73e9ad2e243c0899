"""Readiness checks (DESIGN.md §4, "Health")."""

from typing import Any

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from powercontext.search import search_backend


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
    problem = search_backend().memory_index_status()
    return {"status": "failing", "detail": problem} if problem else {"status": "ok"}


def readiness() -> dict[str, Any]:
    """``{status: ready|not_ready, checks: {name: {status, detail?}}}``."""
    checks: dict[str, Any] = {}
    try:
        checks["database"] = _database()
    except DatabaseError:
        checks["database"] = {"status": "failing", "detail": "database unreachable"}
        return {"status": "not_ready", "checks": checks}
    for name, check in (("migrations", _migrations), ("fulltext_index", _fulltext)):
        try:
            checks[name] = check()
        except DatabaseError:
            checks[name] = {"status": "failing", "detail": "check failed"}
    ready = all(check["status"] == "ok" for check in checks.values())
    return {"status": "ready" if ready else "not_ready", "checks": checks}
