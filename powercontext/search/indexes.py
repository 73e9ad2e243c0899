"""What a family indexes for search: one declaration per index, and the registry of them.

A family declares its index (``memory/search_index.py``, ``experience/search_index.py``)
and registers it when its app is ready; each engine (``powercontext.search.sqlite``,
``powercontext.search.oceanbase``) builds, searches, rebuilds and checks any declared
index the same way. The kernel never names a family's tables or columns: they come from
the declaration.
"""

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from powercontext.exceptions import PowerContextError


class Kept(StrEnum):
    """How an index follows the rows it describes."""

    # The engine follows the table's rows itself (FTS5 triggers, a FULLTEXT index on the
    # column): every change to a row reaches the index in the row's own transaction.
    BY_ENGINE = "engine"
    # The owning service calls ``engine.write(index, rows)`` in the transaction that
    # changes the rows. An engine that can follow the rows anyway (OceanBase FULLTEXT on
    # the column) ignores the writes.
    BY_WRITES = "writes"


@dataclass(frozen=True)
class SearchIndex:
    """One searchable set of rows: a table (or view) whose rows are indexed, by row key.

    ``name`` names the index's own objects on every engine (``<name>_fts`` and its
    triggers on SQLite, ``<name>_ft`` on OceanBase) unless ``object_names`` gives
    (engine, name) pairs: an index named before its declaration existed keeps its name.
    A hit cites ``cited_id`` at ``version``, both read from the table in the caller's
    snapshot; ``text_column`` holds the analyzer's space-separated tokens; rows are
    searched one scope at a time (``scope_column``) and only among rows that match
    ``filters`` (column, value). An index kept by the engine on SQLite needs the scope
    token stored on the row (``scope_token_column``): a trigger cannot hash.

    ``documents``, when given, gives the index a vector channel
    (``powercontext.search.vectors``): it reads, for some row keys and in the caller's
    snapshot, each row's original text to embed (not the analyzed, stemmed tokens), as
    {row key: text}; a row it leaves out gets no vector.

    ``term_counts`` names the model (``app_label.ModelName``) that keeps the index's
    per-scope term counts (``powercontext.search.term_counts``): a search plans with them,
    so no caller passes them.
    """

    name: str
    table: str
    cited_id: str
    version: str
    text_column: str = "searchable_text"
    scope_column: str = "scope_id"
    row_key: str = "id"
    filters: tuple[tuple[str, str], ...] = ()
    kept: Kept = Kept.BY_ENGINE
    scope_token_column: str | None = None
    object_names: tuple[tuple[str, str], ...] = ()
    documents: Callable[[Sequence[int]], dict[int, str]] | None = None
    term_counts: str | None = None

    def __post_init__(self) -> None:
        if self.kept is Kept.BY_ENGINE and self.scope_token_column is None:
            raise ValueError(f"{self.name}: an index kept by the engine needs a scope_token_column")

    def object_name(self, engine: str, suffix: str) -> str:
        """The name of this index's main object on ``engine`` (``suffix`` is the engine's
        own: ``_fts``, ``_ft``)."""
        return dict(self.object_names).get(engine, self.name + suffix)


@dataclass(frozen=True)
class IndexRow:
    """What a write-kept index is told about one row (``engine.write``)."""

    row_key: int
    scope_id: str
    cited_id: str
    version: int | str
    text: str


@dataclass(frozen=True)
class IndexHit:
    """One match: ``cited_id`` at ``version`` as read from the indexed table in the
    caller's snapshot; ``indexed_version`` is the version the index row describes (they
    differ only when a write-kept index is stale). Higher ``score`` is better; ties are
    broken by ``cited_id``. ``searchable_text`` is the analyzed text the index holds for
    it (what ``powercontext.search.ranking`` scores)."""

    cited_id: str
    version: int | str
    indexed_version: int | str
    score: float
    searchable_text: str = ""


class SearchInconsistent(PowerContextError):
    """A search hit disagreed with the head it was read with: the index or projection
    describes another version than the head does (an internal invariant;
    ``manage.py check_integrity`` finds it and ``manage.py rebuild_index`` repairs it)."""


def scope_token(scope_id: str) -> str:
    """The full-text term that marks a scope's rows in an index: one token, so a scope
    filter inside the engine's query language can never be confused with user text."""
    return "s" + hashlib.sha256(scope_id.encode("utf-8")).hexdigest()[:32]


_INDEXES: dict[str, SearchIndex] = {}


def register_index(index: SearchIndex) -> SearchIndex:
    """Declare ``index`` (from a family's ``AppConfig.ready``); registering the same
    declaration again is harmless, another one under the same name is an error."""
    known = _INDEXES.setdefault(index.name, index)
    if known != index:
        raise ValueError(f"another search index is already registered as {index.name!r}")
    return index


def declared_indexes() -> Iterator[SearchIndex]:
    """Every registered index, by name."""
    for name in sorted(_INDEXES):
        yield _INDEXES[name]
