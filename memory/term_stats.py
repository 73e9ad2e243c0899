"""Per-scope term document frequencies for the active entries (``MemoryTermStat``).

Maintained by the write path in the same transaction as the projection, so a read
snapshot always sees counts that agree with the index it searches.
"""

from collections import Counter
from collections.abc import Iterable

from django.db import connection

from memory.models import MemoryTermStat

DOCUMENTS_TERM = MemoryTermStat.DOCUMENTS_TERM


def document_terms(searchable_text: str) -> set[str]:
    """The distinct terms one document contributes (its analyzed text's tokens)."""
    return set(searchable_text.split())


def term_stats_adjust(*, scope_id: str, removed: str | None, added: str | None) -> None:
    """Move the counts from one document version to another (either may be None)."""
    deltas: Counter[str] = Counter()
    if removed is not None:
        deltas.subtract(dict.fromkeys(document_terms(removed), 1))
        deltas[DOCUMENTS_TERM] -= 1
    if added is not None:
        deltas.update(dict.fromkeys(document_terms(added), 1))
        deltas[DOCUMENTS_TERM] += 1
    _apply(scope_id, {term: delta for term, delta in deltas.items() if delta})


def _apply(scope_id: str, deltas: dict[str, int]) -> None:
    if not deltas:
        return
    table = connection.ops.quote_name(MemoryTermStat._meta.db_table)
    if connection.vendor == "sqlite":
        upsert = (
            f"INSERT INTO {table} (scope_id, term, documents) VALUES (%s, %s, %s) "  # noqa: S608
            "ON CONFLICT (scope_id, term) DO UPDATE SET documents = documents + excluded.documents"
        )
    else:
        upsert = (
            f"INSERT INTO {table} (scope_id, term, documents) VALUES (%s, %s, %s) "  # noqa: S608
            "ON DUPLICATE KEY UPDATE documents = documents + VALUES(documents)"
        )
    # Sorted: concurrent writers (of different scopes) touch rows in one order.
    rows = [(scope_id, term, delta) for term, delta in sorted(deltas.items())]
    with connection.cursor() as cursor:
        cursor.executemany(upsert, rows)
    shrunk = [term for term, delta in deltas.items() if delta < 0]
    if shrunk:
        MemoryTermStat.objects.filter(scope_id=scope_id, term__in=shrunk, documents__lte=0).delete()


def term_frequencies(*, scope_id: str, terms: Iterable[str]) -> tuple[dict[str, int], int]:
    """(active entries containing each term, active entries in the scope)."""
    wanted = [*terms, DOCUMENTS_TERM]
    counts = dict(
        MemoryTermStat.objects.filter(scope_id=scope_id, term__in=wanted).values_list(
            "term", "documents"
        )
    )
    documents = counts.pop(DOCUMENTS_TERM, 0)
    return counts, documents


def expected_term_stats(searchable_texts: Iterable[str]) -> Counter[str]:
    """What the counts should be for these documents (rebuild and integrity checks)."""
    counts: Counter[str] = Counter()
    for text in searchable_texts:
        counts.update(document_terms(text))
        counts[DOCUMENTS_TERM] += 1
    return counts
