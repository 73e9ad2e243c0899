"""What every server entry point (``serve``, ``mcp_stdio``) does before it answers."""

import logging
from typing import TextIO

from django.core.management import call_command

from powercontext import maintenance

logger = logging.getLogger("powercontext.startup")


def prepare_database(*, verbosity: int, stdout: TextIO, stderr: TextIO) -> None:
    """Apply pending migrations, then rebuild any missing full-text index."""
    call_command(
        "migrate",
        interactive=False,
        verbosity=max(verbosity - 1, 0),
        stdout=stdout,
        stderr=stderr,
    )
    ensure_indexes()


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
