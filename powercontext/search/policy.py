"""Which query terms a full-text search uses, shared by every backend. Pure.

The hook sends the whole prompt as the query, so a query is often a few words that
matter inside hundreds of words of instructions. Matching on every term would let the
common ones ("the", "please", "tests") decide the ranking and make the search read most
of the index. Instead terms are weighed by how rare they are in the index: terms that
occur in a large share of documents are dropped (they cannot tell documents apart), and
only the rarest few are searched; the engine's own ranking (bm25 / natural-language
relevance) then weights what remains by rarity again.
"""

import math
from collections.abc import Mapping

# A term in more than this share of documents is treated as a stop word.
COMMON_TERM_SHARE = 0.08
# Below this many documents, shares are too noisy to call any term common.
MIN_DOCUMENTS_FOR_PRUNING = 50
# Searching more terms than this costs time and adds only weak evidence.
MAX_QUERY_TERMS = 24


def idf(document_frequency: int, documents: int) -> float:
    """bm25's inverse document frequency (always positive)."""
    return math.log(
        (documents - document_frequency + 0.5) / (document_frequency + 0.5) + 1.0
    )


def select_terms(
    terms: list[str], document_frequency: Mapping[str, int], documents: int
) -> list[str]:
    """The terms worth searching, rarest first.

    ``terms`` are the query's distinct analyzer tokens; ``document_frequency`` maps a term
    to the number of indexed documents containing it (absent or 0: unknown to the index);
    ``documents`` is the number of indexed documents.
    """
    known = [term for term in terms if document_frequency.get(term, 0) > 0]
    if documents >= MIN_DOCUMENTS_FOR_PRUNING:
        limit = COMMON_TERM_SHARE * documents
        known = [term for term in known if document_frequency[term] <= limit]
    # Stable sort: among equally rare terms the query's own order decides.
    known.sort(key=lambda term: document_frequency[term])
    return known[:MAX_QUERY_TERMS]
