"""Near-duplicates take one slot of a pack: an admitted candidate whose stored vector is
as near as ``DUPLICATE_SIMILARITY`` to a better-ranked admitted one's, and whose text holds
the same numbers and identifiers, says what that one says in other words.
:func:`duplicates` is the pure rule; :func:`leave_near_duplicates` the pass a Context
Pack's search runs, reading the candidates' stored vectors.
"""

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from powercontext.search import vectors
from powercontext.search.indexes import SearchIndex
from powercontext.search.relevance import numbers
from powercontext.search.relevance.decision import Considered
from powercontext.search.relevance.rules import Verdict


def numbered_terms(searchable_text: str) -> frozenset[str]:
    """The terms of an analyzed text that hold a digit: its numbers and identifiers."""
    # A term of letters alone (most of them) holds no digit: told in C, not char by char.
    return frozenset(
        term
        for term in searchable_text.split()
        if not term.isalpha() and any(c.isdigit() for c in term)
    )


def duplicates(
    keys: Sequence[str],
    vectors: Mapping[str, Any],
    numbered: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, str]:
    """{key: the better-ranked key it duplicates} among ``keys`` (admitted candidates,
    best first): a candidate whose vector (``vectors``: the stored ones) has a cosine of
    ``DUPLICATE_SIMILARITY`` or more to that of a better-ranked candidate kept, and whose
    text holds the same numbers and identifiers (``numbered``: :func:`numbered_terms` of each text),
    is a duplicate of the first such one. Texts with different numbers say different
    things, however near the model puts them (a 30 s timeout and a 60 s one; two chat
    turns of different dates). A candidate without a vector is never a duplicate, nor
    stands for one. Each verdict depends on the better-ranked candidates alone, so a
    longer ``keys`` never changes those of its prefix."""
    numbered = numbered or {}
    found: dict[str, str] = {}
    kept: list[str] = []
    # The kept candidates' unit vectors, a row each: filled as they are kept rather than
    # stacked again for every candidate (the same product, so the same cosines).
    units: np.ndarray | None = None
    for key in keys:
        vector = vectors.get(key)
        if vector is None:
            continue
        values = np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(values))
        if (
            not norm
            or not np.isfinite(norm)
            or (units is not None and values.shape != units.shape[1:])
        ):
            continue
        unit = values / norm
        said = numbered.get(key, frozenset())
        if units is None:
            units = np.empty((len(keys), *unit.shape))
        cosines = units[: len(kept)] @ unit
        near = [
            kept[at]
            for at in np.flatnonzero(cosines >= numbers.DUPLICATE_SIMILARITY)
            if numbered.get(kept[at], frozenset()) == said
        ]
        if near:
            found[key] = near[0]
            continue
        units[len(kept)] = unit
        kept.append(key)
    return found


def leave_near_duplicates(
    index: SearchIndex, considered: list[Considered], *, scope_id: str, limit: int
) -> list[Considered]:
    """``considered`` with the near-duplicates among the admitted candidates left out
    (:func:`duplicates`): a Context Pack's, so that two entries saying the same
    thing do not both fill it. Only the stored vectors of the candidates that can reach
    the ``limit`` are read: the first ``limit`` admitted, and as many more as duplicates
    left room for."""
    admitted = [item.ranked.hit for item in considered if item.admitted]
    keys = [hit.cited_id for hit in admitted]
    texts = {hit.cited_id: hit.searchable_text for hit in admitted}
    numbered: dict[str, frozenset[str]] = {}
    stored: dict[str, Any] = {}
    found: dict[str, str] = {}
    checked = 0
    while checked < len(keys) and checked - len(found) < limit:
        batch = keys[checked : checked + limit - (checked - len(found))]
        # Only the candidates that can reach the limit are read, by vector and by text.
        numbered |= {key: numbered_terms(texts[key]) for key in batch}
        stored |= vectors.stored_vectors(index, scope_id=scope_id, cited_ids=batch)
        checked += len(batch)
        found = duplicates(keys[:checked], stored, numbered)
    if not found:
        return considered
    return [
        replace(item, verdict=Verdict.DUPLICATE, duplicate_of=found[key])
        if (key := item.ranked.hit.cited_id) in found and item.admitted
        else item
        for item in considered
    ]
