"""Fusing the lexical and the semantic channel's candidates into one ranking. Pure.

Each channel scores on its own scale (weighted BM25, cosine similarity), so each is
scaled to 0..1 within the query before they are averaged: per-query min-max averaging,
which beat reciprocal-rank fusion on LoCoMo for every model tried (docs/relevance-history.md).
The lexical scale keeps 0 as "no match" (BM25 of a candidate is positive, so it is
scaled by the best one); the semantic one is stretched between the pool's weakest and
best similarity, because every candidate is "similar" to some degree.

A candidate found by one channel only gets 0 from the other, so it is never dropped: an
entry that has no vector yet still ranks by its words, and one in other words than the
query still ranks by its meaning.
"""

from collections.abc import Iterable
from dataclasses import dataclass

LEXICAL = "fts"
SEMANTIC = "vector"

# The semantic channel's share of a fused score (0.5 was chosen before measuring).
SEMANTIC_WEIGHT = 0.5


@dataclass(frozen=True)
class FusedHit:
    """``channels`` lists the channels that proposed the hit, lexical first."""

    key: str
    score: float
    channels: tuple[str, ...]


def _scaled_lexical(hits: dict[str, float]) -> dict[str, float]:
    best = max(hits.values(), default=0.0)
    if best <= 0.0:
        return dict.fromkeys(hits, 0.0)
    return {key: max(score, 0.0) / best for key, score in hits.items()}


def _scaled_semantic(hits: dict[str, float]) -> dict[str, float]:
    if not hits:
        return {}
    low, high = min(hits.values()), max(hits.values())
    if high - low <= 1e-9:
        return dict.fromkeys(hits, 1.0)
    return {key: (score - low) / (high - low) for key, score in hits.items()}


def fuse(
    lexical: Iterable[tuple[str, float]],
    semantic: Iterable[tuple[str, float]],
    *,
    semantic_weight: float = SEMANTIC_WEIGHT,
) -> list[FusedHit]:
    """Every candidate of either channel (``(key, score)``, higher better), best fused
    score first, ties by key. A key listed twice in one channel keeps its best score."""
    lexical_hits: dict[str, float] = {}
    for key, score in lexical:
        lexical_hits[key] = max(score, lexical_hits.get(key, score))
    semantic_hits: dict[str, float] = {}
    for key, score in semantic:
        semantic_hits[key] = max(score, semantic_hits.get(key, score))
    lexical_scaled = _scaled_lexical(lexical_hits)
    semantic_scaled = _scaled_semantic(semantic_hits)
    fused = []
    for key in lexical_hits.keys() | semantic_hits.keys():
        channels = tuple(
            name
            for name, hits in ((LEXICAL, lexical_hits), (SEMANTIC, semantic_hits))
            if key in hits
        )
        score = (1.0 - semantic_weight) * lexical_scaled.get(
            key, 0.0
        ) + semantic_weight * semantic_scaled.get(key, 0.0)
        fused.append(FusedHit(key, score, channels))
    fused.sort(key=lambda hit: (-hit.score, hit.key))
    return fused
