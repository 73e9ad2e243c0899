"""Names that ``memory.rebuild`` and ``memory.integrity`` still import from here.

The write path and search call ``powercontext.term_counts.TermCounts(MemoryTermStat)``
themselves; this alias module goes once those two import ``powercontext.term_counts``
as well (they belong to the index interface's change)."""

from powercontext.term_counts import DOCUMENTS_TERM, expected_counts

expected_term_stats = expected_counts

__all__ = ["DOCUMENTS_TERM", "expected_term_stats"]
