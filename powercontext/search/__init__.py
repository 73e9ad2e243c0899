"""Full-text search backends (one module per engine, chosen by the database vendor).

A backend answers "which active Memory entries / approved Experience heads of this scope
match these analyzer terms, and how well", and can rebuild and check its index. What it
indexes is a derived projection maintained in the same transaction as the head it
describes; the backends never hold content of their own.
"""

from dataclasses import dataclass
from typing import Protocol

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string


@dataclass(frozen=True)
class RankedHit:
    """One full-text match: higher ``score`` is better; ties are broken by ``entry_id``.
    ``searchable_text`` is the analyzed text the index holds for it (what
    ``powercontext.search.ranking`` scores)."""

    entry_id: str
    entry_version_id: str
    score: float
    searchable_text: str = ""


@dataclass(frozen=True)
class RankedArtifact:
    """One full-text match on an artifact head: ``revision`` is the head's revision as read
    in the caller's snapshot, ``indexed_revision`` the revision the index row describes
    (they differ only when the index is stale). Higher ``score`` is better; ties are broken
    by ``artifact_id``."""

    artifact_id: str
    revision: int
    indexed_revision: int
    score: float
    searchable_text: str = ""


class SearchBackend(Protocol):
    def memory_match(self, *, scope_id: str, terms: list[str], limit: int) -> list[RankedHit]:
        """The scope's active entries matching any of ``terms``, best first (the engine's
        relevance; ties by entry id), with their searchable text. Term selection and the
        final scoring happen around it, backend-neutrally."""
        ...

    def memory_index_status(self) -> str | None:
        """None when the index is usable, else a short reason."""
        ...

    def memory_rebuild(self) -> None:
        """Rebuild the Memory full-text index from the projection table."""
        ...

    def experience_match(
        self, *, scope_id: str, terms: list[str], limit: int
    ) -> list[RankedArtifact]:
        """The scope's approved Experience heads matching any of ``terms``, best first
        (ties by artifact id), with their searchable text. Term selection and the final
        scoring happen around it, backend-neutrally."""
        ...

    def experience_index(
        self, *, head_id: int, scope_id: str, artifact_id: str, revision: int, searchable_text: str
    ) -> None:
        """Make the index describe this Experience head (same transaction as the head)."""
        ...

    def experience_index_status(self) -> str | None:
        """None when the Experience index is usable, else a short reason."""
        ...

    def experience_rebuild(self, scope_id: str | None = None) -> None:
        """Rebuild the Experience index from the ``experience`` heads' searchable_text,
        of one scope (None: every scope, and always every scope when the index had to be
        recreated). A head with an empty searchable_text is left out."""
        ...


_BACKENDS = {
    "sqlite": "powercontext.search.sqlite.SqliteSearchBackend",
    "mysql": "powercontext.search.oceanbase.OceanBaseSearchBackend",
}


def search_backend() -> SearchBackend:
    """The backend for the default database (``POWERCONTEXT_SEARCH_BACKEND`` overrides)."""
    path = getattr(settings, "POWERCONTEXT_SEARCH_BACKEND", None) or _BACKENDS[connection.vendor]
    backend: SearchBackend = import_string(path)()
    return backend
