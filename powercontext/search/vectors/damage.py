"""Damage met while searching: stored vectors an engine could not use, noted so that
``/health/ready`` says so until ``rebuild_index`` repairs them
(``vectors.availability.readiness``).

One :class:`SearchDamage` per process (:data:`DAMAGE`), handed to every engine
(``vectors.engine.VectorEngine``); a test or a tool may give an engine its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from powercontext.search.vectors.values import VectorsDamaged, vec_table

if TYPE_CHECKING:
    from powercontext.search.indexes import SearchIndex

log = logging.getLogger(__name__)

# At most this many damaged rows and scopes per index are remembered (and logged): the
# first are enough to say "damaged".
DAMAGE_KEPT = 100


class SearchDamage:
    """What searches found damaged, per index: row keys left out of the answer (with
    what is wrong) and scopes the engine could not search at all. Each is logged once,
    when first met. Thread-safe: every serving thread's searches note here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, dict[int, str]] = {}
        self._scopes: dict[str, set[str]] = {}

    def note_rows(self, index: SearchIndex, damaged: dict[int, str]) -> None:
        """Rows an engine left out of a search because their vectors are damaged (an
        engine calls this from ``nearest``): logged the first time each is met."""
        with self._lock:
            known = self._rows.setdefault(index.name, {})
            new = {key: why for key, why in damaged.items() if key not in known}
            new = dict(list(new.items())[: max(DAMAGE_KEPT - len(known), 0)])
            known.update(new)
        for key, why in new.items():
            log.warning(
                "%s: the vector of row %s is damaged (%s); it is left out of vector search "
                "until manage.py rebuild_index re-embeds it",
                vec_table(index),
                key,
                why,
            )

    def note_scope(self, index: SearchIndex, scope_id: str, error: object) -> VectorsDamaged:
        """A scope whose vectors the engine could not search (an engine calls this from
        ``nearest`` and raises what it returns): logged the first time, without naming
        the scope (logs never do)."""
        with self._lock:
            known = self._scopes.setdefault(index.name, set())
            new = scope_id not in known and len(known) < DAMAGE_KEPT
            if new:
                known.add(scope_id)
        if new:
            log.warning(
                "%s: the vectors of a scope cannot be searched (%s); that scope is searched "
                "lexically until manage.py rebuild_index re-embeds the damaged ones",
                vec_table(index),
                error,
            )
        return VectorsDamaged(f"{index.name}: damaged vectors in this scope ({error})")

    def scope_searched(self, index: SearchIndex, scope_id: str) -> None:
        """The scope's vectors were searched without an error: whatever stopped them is
        gone."""
        with self._lock:
            known = self._scopes.get(index.name)
            if known:
                known.discard(scope_id)

    def repaired(self, index: SearchIndex) -> None:
        """Every damaged vector of the index was re-embedded (``rebuild_index``): searches
        may try every scope again."""
        with self._lock:
            self._scopes.pop(index.name, None)

    def noted(self, index: SearchIndex) -> tuple[int, int]:
        """(damaged rows, scopes searched lexically) the searches noted in the index, as
        they were noted (:meth:`detail` looks at the rows again)."""
        with self._lock:
            return len(self._rows.get(index.name, {})), len(self._scopes.get(index.name, ()))

    def forget(self) -> None:
        """Forget what searches met (tests)."""
        with self._lock:
            self._rows.clear()
            self._scopes.clear()

    def detail(
        self, index: SearchIndex, recheck: Callable[[list[int]], dict[int, str]] | None
    ) -> str | None:
        """What searches met of damage in the index and is still there, for readiness:
        the row keys are looked at again by ``recheck`` (the engine's ``damaged`` of those
        keys: at most :data:`DAMAGE_KEPT`, by key, cheap; None when they cannot be), so a
        row ``rebuild_index`` repaired in another process is no longer reported; a scope
        is until a search of it succeeds."""
        with self._lock:
            rows = dict(self._rows.get(index.name, {}))
            scopes = len(self._scopes.get(index.name, ()))
        if rows and recheck is not None:
            still = recheck(sorted(rows))
            with self._lock:
                known = self._rows.get(index.name, {})
                for key in set(rows) - set(still):
                    known.pop(key, None)
            rows = still
        parts = []
        if rows:
            parts.append(f"{len(rows)} damaged vector(s) left out of search")
        if scopes:
            parts.append(f"{scopes} scope(s) searched lexically: their vectors cannot be searched")
        if not parts:
            return None
        return f"{' and '.join(parts)}, run manage.py rebuild_index"


# This process's searches.
DAMAGE = SearchDamage()
