"""Per-scope term document frequencies of the approved Experience heads
(``ExperienceTermStat``), kept in the approval transaction so a read snapshot sees counts
that agree with the index it searches. Same rules as ``memory.term_stats``."""

from collections import Counter
from collections.abc import Iterable

from django.db import connection

from experience.models import ExperienceTermStat

DOCUMENTS_TERM = ExperienceTermStat.DOCUMENTS_TERM


def document_terms(searchable_text: str) -> set[str]:
    return set(searchable_text.split())


def term_stats_adjust(*, scope_id: str, removed: str | None, added: str | None) -> None:
    """Move the counts from one head text to the next (either may be None)."""
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
    table = connection.ops.quote_name(ExperienceTermStat._meta.db_table)
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
    # Sorted: concurrent writers touch rows in one order.
    rows = [(scope_id, term, delta) for term, delta in sorted(deltas.items())]
    with connection.cursor() as cursor:
        cursor.executemany(upsert, rows)
    shrunk = [term for term, delta in deltas.items() if delta < 0]
    if shrunk:
        ExperienceTermStat.objects.filter(
            scope_id=scope_id, term__in=shrunk, documents__lte=0
        ).delete()


def term_frequencies(*, scope_id: str, terms: Iterable[str]) -> tuple[dict[str, int], int]:
    """(approved Experience heads containing each term, heads in the scope)."""
    wanted = [*terms, DOCUMENTS_TERM]
    counts = dict(
        ExperienceTermStat.objects.filter(scope_id=scope_id, term__in=wanted).values_list(
            "term", "documents"
        )
    )
    documents = counts.pop(DOCUMENTS_TERM, 0)
    return counts, documents


def term_stats_rebuild(searchable_texts_by_scope: Iterable[tuple[str, str]]) -> None:
    """Replace every count with those of these (scope_id, searchable_text) heads."""
    counts: Counter[tuple[str, str]] = Counter()
    for scope_id, text in searchable_texts_by_scope:
        for term in document_terms(text):
            counts[(scope_id, term)] += 1
        counts[(scope_id, DOCUMENTS_TERM)] += 1
    ExperienceTermStat.objects.all().delete()
    ExperienceTermStat.objects.bulk_create(
        ExperienceTermStat(scope_id=scope_id, term=term, documents=documents)
        for (scope_id, term), documents in sorted(counts.items())
    )


def term_stats_expected(searchable_texts_by_scope: Iterable[tuple[str, str]]) -> dict:
    counts: Counter[tuple[str, str]] = Counter()
    for scope_id, text in searchable_texts_by_scope:
        for term in document_terms(text):
            counts[(scope_id, term)] += 1
        counts[(scope_id, DOCUMENTS_TERM)] += 1
    return dict(counts)
