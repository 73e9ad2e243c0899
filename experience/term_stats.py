"""Per-scope term document frequencies of the approved Experience heads
(``ExperienceTermStat``), kept in the approval transaction so a read snapshot sees counts
that agree with the index it searches. Same rules as Memory's
(``powercontext.term_counts``)."""

from collections import Counter
from collections.abc import Iterable

from experience.models import ExperienceTermStat
from powercontext.term_counts import DOCUMENTS_TERM, TermCounts, document_terms

_counts = TermCounts(ExperienceTermStat)

term_stats_adjust = _counts.adjust
term_frequencies = _counts.frequencies


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
