"""What every server entry point (``serve``, ``mcp_stdio``) does before it answers, and
what the other commands do on a database that is not migrated yet."""

import logging
from io import TextIOBase
from typing import TextIO

from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from powercontext import maintenance

logger = logging.getLogger("powercontext.startup")


def prepare_database(
    *, verbosity: int, stdout: TextIO | TextIOBase, stderr: TextIO | TextIOBase
) -> None:
    """Apply pending migrations, then rebuild any missing full-text index."""
    call_command(
        "migrate",
        interactive=False,
        verbosity=max(verbosity - 1, 0),
        stdout=stdout,
        stderr=stderr,
    )
    ensure_indexes()


def unapplied_migrations() -> int:
    """How many migrations the database still lacks (all of them on a fresh data
    directory: no table exists yet)."""
    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


def migrate_if_needed(*, stderr: TextIO) -> None:
    """Apply pending migrations first, as ``serve`` does, for the commands that are
    natural to run before the first ``serve`` (``createsuperuser``, ``reviewer_token``),
    so they work on a fresh data directory instead of failing on a missing table."""
    pending = unapplied_migrations()
    if pending:
        call_command("migrate", interactive=False, verbosity=0)
        stderr.write(f"Applied {pending} pending migration(s) to {_database()} first.\n")


def require_migrated(nothing_to: str) -> None:
    """Raise CommandError (one line, exit status 1) when the database is not migrated:
    for the commands that read what is there (``check_integrity``, ``rebuild_index``)
    and have nothing to do on an empty data directory. ``nothing_to`` says what the
    command would do ("check", "rebuild")."""
    executor = MigrationExecutor(connection)
    pending = len(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    if not pending:
        return
    if not executor.loader.applied_migrations:
        raise CommandError(
            f"Nothing to {nothing_to}: the database at {_database()} was never migrated. "
            "Run `manage.py serve` (it migrates first) or `manage.py migrate`."
        )
    raise CommandError(
        f"The database at {_database()} lacks {pending} migration(s): "
        "run `manage.py migrate` (or `manage.py serve`) first."
    )


def _database() -> str:
    # The SQLite file, or the database name: never a URL (it could hold a password).
    return str(connection.settings_dict["NAME"])


def ensure_indexes() -> None:
    """Rebuild the derived state of every family whose full-text index is missing (a
    dropped table or trigger, a database restored without it), so the server never
    starts serving searches from a missing index. A present index is left alone: start-up
    stays fast, and ``manage.py check_integrity`` / ``rebuild_index`` handle drift."""
    for family, problem in maintenance.missing_indexes().items():
        logger.warning("Full-text index of %s is not usable (%s); rebuilding.", family, problem)
        (report,) = maintenance.rebuild(family_name=family)
        logger.info(
            "Rebuilt %s: %d entries in %.2fs, %d projection row(s) repaired.",
            family,
            report.entries,
            report.seconds,
            report.changed,
        )
        if report.unverified:
            # The rebuild left them out of the index; say which (ids only).
            logger.error(
                "%s: %d row(s) fail verification and were left out of the index: %s. "
                "Run manage.py check_integrity.",
                family,
                len(report.unverified),
                ", ".join(f"[{scope}] {subject}" for scope, subject in report.unverified[:20]),
            )
