"""The jobs ``manage.py serve`` runs beside the requests, started and stopped together.

- the memory releaser (``server.memory_release``): gives freed memory back after large
  responses; the arena limit is set before any thread allocates (docs/RELIABILITY.md,
  "Memory at rest");
- the embedding model's load, so the first prompt rarely waits for it (under a second:
  the file is built ahead, only checked and loaded here; a request that comes first waits
  for this load rather than starting another);
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
