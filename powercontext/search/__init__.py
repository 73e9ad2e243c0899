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
    """One full-text match: higher ``score`` is better; ties are broken by ``entry_id``."""

    entry_id: str
    entry_version_id: str
    score: float


class SearchBackend(Protocol):
    def memory_search(self, *, scope_id: str, terms: list[str], limit: int) -> list[RankedHit]: ...

    def memory_index_status(self) -> str | None:
        """None when the index is usable, else a short reason."""
        ...

    def memory_rebuild(self) -> None:
        """Rebuild the Memory full-text index from the projection table."""
        ...


_BACKENDS = {
    "sqlite": "powercontext.search.sqlite.SqliteSearchBackend",
    "mysql": "powercontext.search.oceanbase.OceanBaseSearchBackend",
}


def search_backend() -> SearchBackend:
    """The backend for the default database (``POWERCONTEXT_SEARCH_BACKEND`` overrides)."""
    path = getattr(settings, "POWERCONTEXT_SEARCH_BACKEND", None) or _BACKENDS[connection.vendor]
    return import_string(path)()
