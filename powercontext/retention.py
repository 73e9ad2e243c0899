"""Purging captured prompts older than ``POWERCONTEXT_SOURCE_RETENTION_DAYS``.

``serve`` starts a :class:`Retention` beside the server when the setting is above 0: at
start and then every hour it purges (``powercontext.sources.source_purge``) the content
of every source captured more than that many days ago, each entry in its own short
transaction, so requests meanwhile wait at most one entry's write. ``manage.py
purge_sources --older-than DAYS`` does the same once, from the command line.
"""

import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from powercontext.sources import Erased, source_purge
from powercontext.stored_secrets import erasing

log = logging.getLogger(__name__)

EVERY_SECONDS = 3600.0


def purge_expired(days: int) -> Erased:
    """Purge every source captured more than ``days`` days ago (one pass). The
    write-ahead log is truncated afterwards even while serving (a passive checkpoint
    leaves the erased pages in it): writers wait for that once an hour."""
    before = timezone.now() - timedelta(days=days)
    with erasing(indexes=False):
        return source_purge(reason=f"retention: {days} days", before=before)


class Retention:
    """The retention task of a serving process: :meth:`start`, then :meth:`stop`."""

    def __init__(self, days: int | None = None, every: float = EVERY_SECONDS) -> None:
        self.days = settings.POWERCONTEXT_SOURCE_RETENTION_DAYS if days is None else days
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="source-retention", daemon=True)

    def start(self) -> None:
        if self.days > 0:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    done = purge_expired(self.days)
                    if done.entries:
                        # Counts only: never a scope, an id or content.
                        log.info("purged %d captured source(s) past retention", done.entries)
                except Exception:
                    log.exception("purging captured sources past retention failed")
                self._stop.wait(self.every)
        finally:
            connection.close()
