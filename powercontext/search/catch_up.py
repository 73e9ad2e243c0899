"""Filling the vector channel in while ``serve`` answers.

Rows can be left without a usable vector: by an upgrade whose vector table has another
layout or whose model differs (the channel then answers lexically and says "run manage.py
rebuild_index"), or by writes made while the channel was off or its model missing. Left
to the operator, a user who never reads the release notes would search lexically for
ever. So ``serve`` starts a :class:`CatchUp` beside the server: once the model is loaded
it runs the vector rebuild of every declared index (``vectors.rebuild``: each batch
embedded outside any transaction and written in a short one that stores only what is
still current, so requests meanwhile wait at most one batch's write and never read a
wrong vector) and stops between batches when the server stops; a later start goes on
where it stopped. An index whose vectors are all there costs one read of its rows.

The catch-up gives way to the requests: the model's time for a batch competes with a
prompt's for the same cores, so it embeds small batches (:data:`BATCH`) and starts each
one only once no request has been answered for :data:`QUIET_SECONDS` (the server wraps
each request in :func:`serving`), or after :data:`MOST_PAUSE_SECONDS` under unbroken
traffic, so it always goes on. Measured on a loaded 2-core machine, a 4,000-entry scope
written with the channel off: prepares while it caught up in batches of 128 took 0.5 s
(the first), 1.2 s (p50), 4.0 s (max).

A data directory that has no vector index yet and no rows is left alone: its first write
creates the index.
"""

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import connection

from powercontext.search import hybrid, vectors
from powercontext.search.indexes import SearchIndex

log = logging.getLogger(__name__)

# Progress is logged at most this often (seconds), and at the end.
LOG_EVERY = 10.0


# Rows embedded per batch: what a request that arrives meanwhile competes with.
BATCH = 16
# A batch starts once no request has been answered for this long...
QUIET_SECONDS = 0.05
# ...or after this long whatever the traffic.
MOST_PAUSE_SECONDS = 2.0

_serving = threading.Condition()
_in_flight = 0
_last_ended = 0.0


@contextmanager
def serving() -> Iterator[None]:
    """Around each request the server answers: the catch-up starts no batch meanwhile."""
    global _in_flight, _last_ended
    with _serving:
        _in_flight += 1
    try:
        yield
    finally:
        with _serving:
            _in_flight -= 1
            _last_ended = time.monotonic()
            _serving.notify_all()


def wait_for_quiet(
    stop: threading.Event | None = None,
    *,
    quiet: float = QUIET_SECONDS,
    most: float = MOST_PAUSE_SECONDS,
) -> None:
    """Return once no request has been in flight for ``quiet`` seconds, after ``most``
    seconds at the latest, or as soon as ``stop`` is set."""
    deadline = time.monotonic() + most
    with _serving:
        while True:
            now = time.monotonic()
            if now >= deadline or (stop is not None and stop.is_set()):
                return
            if _in_flight == 0 and now - _last_ended >= quiet:
                return
            until = quiet - (now - _last_ended) if _in_flight == 0 else deadline - now
            # Woken when a request ends; a tenth of a second at most, to see ``stop``.
            _serving.wait(min(until, deadline - now, 0.1))


@dataclass(frozen=True)
class Progress:
    index: str
    done: int
    total: int


_lock = threading.Lock()
_current: Progress | None = None


def current() -> Progress | None:
    """What the running catch-up is embedding now (``/health/ready`` says it), if any."""
    with _lock:
        return _current


def _set(progress: Progress | None) -> None:
    global _current
    with _lock:
        _current = progress


class CatchUp:
    """The background vector rebuild of a serving process: :meth:`start`, then
    :meth:`stop` (which waits for the batch in hand) before the process exits."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vector-catch-up", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        # Joined, not abandoned: ONNX Runtime aborts the process if a daemon thread is
        # still running the model when Python exits.
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            if not hybrid.can_embed():  # waits for the model's load
                return
            for index in vectors.vector_indexes():
                if self._stop.is_set():
                    return
                self._catch_up(index)
        except Exception:  # a background task: say so and leave the server serving
            log.exception("Embedding in the background failed; run manage.py rebuild_index.")
        finally:
            _set(None)
            connection.close()

    def _catch_up(self, index: SearchIndex) -> None:
        state = vectors.status(index)
        if state.state in (vectors.State.OFF, vectors.State.UNAVAILABLE):
            return
        found = vectors.pending(index)
        todo = found.rows if not state.ready else found.missing + found.stale
        if not found.rows or not todo:
            return
        name = f"{index.name} vectors"
        log.info("%s: %s; embedding in the background.", name, _why(state, found))
        logged = [time.monotonic()]

        def progress(done: int, total: int) -> None:
            _set(Progress(index.name, done, total))
            if time.monotonic() - logged[0] >= LOG_EVERY:
                logged[0] = time.monotonic()
                log.info("%s: %d of %d rows embedded.", name, done, total)
            wait_for_quiet(self._stop)  # before the next batch

        _set(Progress(index.name, 0, todo))
        wait_for_quiet(self._stop)
        report = vectors.rebuild(index, batch_size=BATCH, progress=progress, stop=self._stop)
        log.info("%s: %s.", name, report.index)


def _why(state: vectors.VectorStatus, found: vectors.Pending) -> str:
    if not state.ready:
        return state.detail
    return f"{found.missing} row(s) without a vector, {found.stale} stale"
