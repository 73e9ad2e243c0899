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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LEXICAL = "fts"
SEMANTIC = "vector"

# The semantic channel's share of a fused score (0.5 was chosen before measuring).
SEMANTIC_WEIGHT = 0.5
# A pack's window is ordered again with each candidate's focus lift as a third channel,
# weighed as each of the two a fused score averages (``with_focus``).
# bench/relevance_replay.py, dev sets: LoCoMo bare 71.7 / 58.2 -> 73.8 / 61.3 %, wrapped
# 65.1 -> 67.6 %, coding recall_any unchanged at 91.2 %; 0.25 to 1.0 give LoCoMo bare
# 73.6-73.8 / 60.9-61.3 %, wrapped 67.3-67.9 %, coding unchanged. Ordering by the focus
# itself (no median taken away: relevance.numbers.FOCUS_CROWD)
# gave wrapped 68.8 %, but copies of a note repeating one of a long prompt's instructions
# (each speaks to it word for word) pushed the answer to its question out of the pack
# (tests/contextpack/test_relevance_long_prompt.py).
FOCUS_WEIGHT = 0.5


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


def _stretched(hits: dict[str, float]) -> dict[str, float]:
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
    ties_by_meaning: bool = True,
) -> list[FusedHit]:
    """Every candidate of either channel (``(key, score)``, higher better), best fused
    score first. A key listed twice in one channel keeps its best score.

    Equal fused scores are common (the best of the words alone and the best of the
    meaning alone both score one half), and a key is an entry's random id: so a tie goes
    to the nearer in meaning, then to the stronger in words (``ties_by_meaning``; the
    other way round without it), and only then by key. The same scope and prompt then
    give the same order on every install."""
    lexical_hits: dict[str, float] = {}
    for key, score in lexical:
        lexical_hits[key] = max(score, lexical_hits.get(key, score))
    semantic_hits: dict[str, float] = {}
    for key, score in semantic:
        semantic_hits[key] = max(score, semantic_hits.get(key, score))
    lexical_scaled = _scaled_lexical(lexical_hits)
    semantic_scaled = _stretched(semantic_hits)
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
    missing = float("-inf")

    def order(hit: FusedHit) -> tuple[float, float, float, str]:
        meaning = semantic_hits.get(hit.key, missing)
        words = lexical_hits.get(hit.key, missing)
        first, second = (meaning, words) if ties_by_meaning else (words, meaning)
        return (-hit.score, -first, -second, hit.key)

    fused.sort(key=order)
    return fused


def with_focus(window: Sequence[tuple[str, float, float]]) -> list[str]:
    """The keys of ``window`` (``(key, fused score, focus lift)``: a pack's first admitted
    candidates, best first) ordered by their fused score plus FOCUS_WEIGHT times their
    focus lift stretched between the window's weakest and best, as a similarity is within
    the pool; ties keep the fused order.

    The pooled vectors rank a prompt's subject as high as its answer (every turn of a
    conversation that names the speaker, every note on the project's billing); a pack
    holds the first eight, and the focus lift (how much of a prompt segment a candidate
    speaks to, token by token, against what the window's candidates commonly do:
    ``relevance.Focused``) tells which of them answer."""
    lift = _stretched({key: value for key, _, value in window})
    order = sorted(
        enumerate(window),
        key=lambda item: (-(item[1][1] + FOCUS_WEIGHT * lift[item[1][0]]), item[0]),
    )
    return [key for _, (key, _, _) in order]
