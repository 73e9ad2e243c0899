"""The search wing: finding a family's cited rows by a query's words and meaning, and
deciding which of them answer it.

A family declares what it indexes as a :class:`FamilyIndex` (a
``powercontext.search.indexes.SearchIndex``: which rows, which text, which version is
cited, where its term counts are kept; with the operations the family calls on it:
search, keep, check) and the wing does the rest on either database: the lexical engines
(``engines``, ``sqlite``, ``oceanbase``), the vector channel (``vectors``, ``hybrid``),
the plan and the ranking (``policy``, ``ranking``, ``fusion``) and the relevance
decision (``relevance``).

The families and the Context Pack make one call: build a :class:`Query` once
(``Query.prompt`` for a pack, ``FamilyIndex.lookup`` for an explicit search, each
embedding itself) and search a declared index with it (``FamilyIndex.search``, which is
:func:`search`), in the caller's read snapshot; the family then resolves the hits to its
cited values. A hit from another version than its row's raises
:class:`SearchInconsistent`. A family imports a handful of names from here and nothing
from behind it.
"""

from powercontext.search.engines import SearchEngine, database_engine, index_ddl, search_engine
from powercontext.search.family_index import FamilyIndex
from powercontext.search.indexes import (
    IndexHit,
    IndexRow,
    Kept,
    SearchInconsistent,
    SearchIndex,
    scope_token,
)
from powercontext.search.query import AUTO, SEARCH_MODES, Query, Searched, holds_rows, search
from powercontext.search.relevance import Considered
from powercontext.search.vectors import Embedded

__all__ = [
    "AUTO",
    "SEARCH_MODES",
    "Considered",
    "Embedded",
    "FamilyIndex",
    "IndexHit",
    "IndexRow",
    "Kept",
    "Query",
    "SearchEngine",
    "SearchInconsistent",
    "SearchIndex",
    "Searched",
    "database_engine",
    "holds_rows",
    "index_ddl",
    "scope_token",
    "search",
    "search_engine",
]
