"""Per-scope term document frequencies of the approved Experience heads
(``ExperienceTermStat``), kept in the approval transaction so a read snapshot sees counts
that agree with the index it searches. Same rules as Memory's
(``powercontext.search.term_counts``)."""

from collections import defaultdict
from collections.abc import Iterable

from experience.models import ExperienceTermStat
from experience.search_index import EXPERIENCE_INDEX


def term_stats_adjust(*, scope_id: str, removed: str | None, added: str | None) -> None:
    """Move the scope's counts from one head's searchable text to the next."""
    EXPERIENCE_INDEX.counts.adjust(scope_id=scope_id, removed=removed, added=added)


def term_stats_expected(
    searchable_texts_by_scope: Iterable[tuple[str, str]],
) -> dict[tuple[str, str], int]:
    """{(scope_id, term): documents} as these (scope_id, searchable_text) heads say."""
    texts: defaultdict[str, list[str]] = defaultdict(list)
    for scope_id, text in searchable_texts_by_scope:
        texts[scope_id].append(text)
    return {
        (scope_id, term): documents
        for scope_id, scope_texts in texts.items()
        for term, documents in EXPERIENCE_INDEX.counts.expected(scope_texts).items()
    }


def term_stats_rebuild(
    searchable_texts_by_scope: Iterable[tuple[str, str]], *, scope_id: str | None = None
) -> None:
    """Replace the counts of ``scope_id`` (None: every scope) with those of these
    (scope_id, searchable_text) heads, which must all be of that scope."""
    stored = ExperienceTermStat.objects.all()
    if scope_id is not None:
        stored = stored.filter(scope_id=scope_id)
    stored.delete()
    ExperienceTermStat.objects.bulk_create(
        ExperienceTermStat(scope_id=scope, term=term, documents=documents)
        for (scope, term), documents in sorted(
            term_stats_expected(searchable_texts_by_scope).items()
        )
    )
