"""Full-text search engines (one module per engine, chosen by the database vendor).

An engine answers "which rows of this declared index, in this scope, match these
analyzer terms, and how well", builds the index's DDL, and can write, rebuild and check
it, the same way for every index a family declares (``powercontext.search.indexes``).
What it indexes is a derived projection kept in the same transaction as the head it
describes; the engines never hold content of their own.
"""

from collections.abc import Iterable
from typing import ClassVar, Protocol

from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

from powercontext.search.indexes import IndexHit, IndexRow, SearchIndex


class SearchEngine(Protocol):
    # False when ``integrity`` cannot look inside the index (it then answers None).
    checks_integrity: ClassVar[bool]

    @staticmethod
    def ddl(index: SearchIndex) -> tuple[list[str], list[str]]:
        """(forward, reverse) statements that create and drop the index's objects, the
        ones the family's migration runs and a rebuild recreates a missing index with.
        Pure: no connection needed."""
        ...

    def match(
        self, index: SearchIndex, *, scope_id: str, terms: list[str], limit: int
    ) -> list[IndexHit]:
        """The scope's rows matching any of ``terms``, best first (the engine's relevance;
        ties by cited id), with their searchable text. Term selection and the final
        scoring happen around it, engine-neutrally."""
        ...

    def write(self, index: SearchIndex, rows: Iterable[IndexRow]) -> None:
        """Make a write-kept index describe these rows (in the caller's transaction, the
        one that changed them). Nothing to do for an index the engine keeps itself."""
        ...

    def status(self, index: SearchIndex) -> str | None:
        """None when the index's objects all exist, else a short reason."""
        ...

    def rebuild(self, index: SearchIndex, scope_id: str | None = None) -> None:
        """Make the index describe the table's rows again: of one scope (None: every
        scope, and always every scope when the index had to be recreated). A missing
        object is recreated with ``ddl``. A row with an empty text is left out."""
        ...

    def integrity(self, index: SearchIndex) -> str | None:
        """None when the index agrees with the rows it is built from (or when the engine
        cannot tell, see ``checks_integrity``), else the reason."""
        ...


# The lexical engine of each database (the vector channel has its own small protocol,
# ``powercontext.search.vectors.VectorEngine``).
_ENGINES: dict[str, str] = {
    "sqlite": "powercontext.search.sqlite.SqliteSearchEngine",
    "oceanbase": "powercontext.search.oceanbase.OceanBaseSearchEngine",
}
_VENDORS = {"sqlite": "sqlite", "mysql": "oceanbase"}


def database_engine(engine: str | None = None) -> SearchEngine:
    """The lexical engine of ``engine`` ("sqlite", "oceanbase"; None: the default
    database's)."""
    implementation: SearchEngine = import_string(_ENGINES[engine or _VENDORS[connection.vendor]])()
    return implementation


def search_engine() -> SearchEngine:
    """The lexical channel on the default database (``POWERCONTEXT_SEARCH_ENGINE``, a
    dotted path, overrides)."""
    path = getattr(settings, "POWERCONTEXT_SEARCH_ENGINE", None)
    if path:
        engine: SearchEngine = import_string(path)()
        return engine
    return database_engine()


def index_ddl(engine: str, index: SearchIndex) -> tuple[list[str], list[str]]:
    """(forward, reverse) DDL of ``index``'s lexical objects on ``engine`` ("sqlite" or
    "oceanbase"), for ``powercontext.migration_operations.RunSQLForEngine``."""
    engine_class: type[SearchEngine] = import_string(_ENGINES[engine])
    return engine_class.ddl(index)
