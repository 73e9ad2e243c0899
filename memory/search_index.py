"""What Memory indexes for search: the active-entry projection, one row per active entry.

Kept by the engine from the projection's rows (FTS5 triggers on SQLite, a FULLTEXT index
on the column on OceanBase), so every projection change reaches the index in the same
transaction. The projection row stores its scope token because a trigger cannot compute
one. A hit cites the entry and the version the row names; ``memory.selectors`` then reads
that version through the manifest, in the caller's snapshot.
"""

from powercontext.search.indexes import Kept, SearchIndex

MEMORY_INDEX = SearchIndex(
    name="memory_activeentry",
    table="memory_memoryactiveentry",
    cited_id="entry_id",
    version="entry_version_id",
    kept=Kept.BY_ENGINE,
    scope_token_column="scope_token",  # noqa: S106 - a column name, not a secret
)
