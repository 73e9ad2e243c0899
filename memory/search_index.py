"""What Memory indexes for search: the active-entry projection, one row per active entry.

Kept by the engine from the projection's rows (FTS5 triggers on SQLite, a FULLTEXT index
on the column on OceanBase), so every projection change reaches the index in the same
transaction. The projection row stores its scope token because a trigger cannot compute
one. A hit cites the entry and the version the row names; ``memory.selectors`` then reads
that version through the manifest, in the caller's snapshot.

Its vector channel embeds each entry's text as written (the version's ``text``), not the
analyzed tokens.
"""

from collections.abc import Sequence

from powercontext.search import FamilyIndex


def memory_documents(row_keys: Sequence[int]) -> dict[int, str]:
    """{projection row key: the text of the entry version it names}."""
    from memory.models import MemoryActiveEntry

    rows = MemoryActiveEntry.objects.filter(pk__in=list(row_keys))
    return dict(rows.values_list("pk", "entry_version__text"))


MEMORY_INDEX = FamilyIndex(
    name="memory_activeentry",
    table="memory_memoryactiveentry",
    cited_id="entry_id",
    version="entry_version_id",
    scope_token_column="scope_token",  # noqa: S106 - a column name, not a secret
    documents=memory_documents,
    term_counts="memory.MemoryTermStat",
)
