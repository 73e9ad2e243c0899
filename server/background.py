"""The jobs ``manage.py serve`` runs beside the requests, started and stopped together.

- the memory releaser (``server.memory_release``): gives freed memory back after large
  responses; the arena limit is set before any thread allocates (docs/RELIABILITY.md,
  "Memory at rest");
- the embedding model's load (under a second: the file is built ahead, only checked and
  loaded here). ``serve`` says it serves once the load has ended or after
  :data:`MODEL_WAIT_SECONDS` (:meth:`Background.wait_for_model`), so a prompt sent the
  moment it says so is answered at the usual speed instead of waiting for the load
  (10,000 entries catching up: the first prepare took 103-105 ms waiting for it, 35-45
  ms not); a request that comes sooner waits for this load rather than starting another;
- the vector catch-up (``powercontext.search.catch_up``): embeds the entries whose vectors
  are missing or stale, unless switched off, a small batch at a time between requests;
- retention: captured prompts past POWERCONTEXT_SOURCE_RETENTION_DAYS are purged.

Stopped in the reverse order, and the model's load is always waited for: ONNX Runtime
aborts the process if it is still loading or running the model when Python exits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from powercontext.retention import Retention
from powercontext.search import catch_up, hybrid
from powercontext.search.catch_up import CatchUp
from server import memory_release

# How long ``serve`` waits for the model's load before it says it serves anyway: checking
# and loading the shipped file takes 0.15-0.6 s; a slow disk or a starved machine does not
# hold the server back longer than this.
MODEL_WAIT_SECONDS = 1.0


class Background:
    """The releaser at construction (before the database is touched); the rest at
    :meth:`start`, once the database is migrated. A context manager: stopped on exit,
    whatever was started."""

    def __init__(self) -> None:
        memory_release.limit_arenas()
        self.releaser = memory_release.Releaser().start()
        self._loading: threading.Thread | None = None
        self._catching_up: CatchUp | None = None
        self._retention: Retention | None = None

    def start(self, *, vector_catch_up: bool) -> None:
        self._loading = threading.Thread(target=hybrid.can_embed, name="embedding-model")
        self._loading.start()
        if vector_catch_up:
            self._catching_up = CatchUp()
            self._catching_up.start()
        self._retention = Retention()
        self._retention.start()

    def wait_for_model(self) -> bool:
        """Wait until the model's load has ended (loaded, or failed: the channel is then
        off and a prompt is answered by its words at once), at most
        :data:`MODEL_WAIT_SECONDS`; whether it has."""
        if self._loading is None:
            return True
        self._loading.join(MODEL_WAIT_SECONDS)
        return not self._loading.is_alive()

    def wrap(self, application: Callable[..., Any]) -> Callable[..., Any]:
        """``application`` (WSGI) with large responses' memory given back after they are
        sent, and the catch-up holding its next batch while a request is answered."""

        def gated(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            with catch_up.serving():
                return application(environ, start_response)

        return memory_release.releasing(gated, self.releaser)

    def stop(self) -> None:
        self.releaser.stop()
        if self._catching_up is not None:
            self._catching_up.stop()
        if self._retention is not None:
            self._retention.stop()
        if self._loading is not None:
            self._loading.join()

    def __enter__(self) -> Background:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
