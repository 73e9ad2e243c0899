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

A data directory that has no vector index yet and no rows is left alone: its first write
creates the index.
"""

import logging
import threading
import time
from dataclasses import dataclass

from django.db import connection

from powercontext.search import hybrid, vectors
from powercontext.search.indexes import SearchIndex

log = logging.getLogger(__name__)

# Progress is logged at most this often (seconds), and at the end.
LOG_EVERY = 10.0


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
        coverage = vectors.coverage(index)
        todo = len(coverage.rows) if not state.ready else len(coverage.missing + coverage.stale)
        if not coverage.rows or not todo:
            return
        name = f"{index.name} vectors"
        log.info("%s: %s; embedding in the background.", name, _why(state, coverage))
        logged = [time.monotonic()]

        def progress(done: int, total: int) -> None:
            _set(Progress(index.name, done, total))
            if time.monotonic() - logged[0] >= LOG_EVERY:
                logged[0] = time.monotonic()
                log.info("%s: %d of %d rows embedded.", name, done, total)

        _set(Progress(index.name, 0, todo))
        report = vectors.rebuild(index, progress=progress, stop=self._stop)
        log.info("%s: %s.", name, report.index)


def _why(state: vectors.VectorStatus, coverage: vectors.Coverage) -> str:
    if not state.ready:
        return state.detail
    return f"{len(coverage.missing)} row(s) without a vector, {len(coverage.stale)} stale"
