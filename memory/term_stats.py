"""Per-scope term document frequencies of the active entries (``MemoryTermStat``),
maintained by the write path in the same transaction as the projection."""

from memory.models import MemoryTermStat
from powercontext.term_counts import DOCUMENTS_TERM, TermCounts, expected_counts

_counts = TermCounts(MemoryTermStat)

term_stats_adjust = _counts.adjust
term_frequencies = _counts.frequencies
search_plan = _counts.search_plan
expected_term_stats = expected_counts

__all__ = [
    "DOCUMENTS_TERM",
    "expected_term_stats",
    "search_plan",
    "term_frequencies",
    "term_stats_adjust",
]
