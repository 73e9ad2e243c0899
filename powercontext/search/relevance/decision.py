"""Every candidate of a search in one order, each with the rules' verdict: both channels'
candidates fused (``powercontext.search.fusion``), the evidence for each gathered
(``evidence``) and judged (``rules``). Pure: the passes that read stored vectors and token
states (``near_duplicates``, ``focus``) run after it, on a pack's admitted candidates.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from powercontext.search.fusion import LEXICAL, fuse
from powercontext.search.indexes import IndexHit
from powercontext.search.policy import SearchPlan
from powercontext.search.relevance import evidence, numbers, rules
from powercontext.search.relevance.rules import ADMITTED, Verdict


@dataclass(frozen=True)
class Ranked:
    """A candidate in fused order; ``channels`` are those that proposed it."""

    hit: IndexHit
    score: float
    channels: tuple[str, ...]


@dataclass(frozen=True)
class Considered:
    """A candidate as the relevance decision saw it: ``semantic_rank`` is its place among
    the semantic channel's candidates (1 = nearest; None when that channel did not propose
    it), ``verdict`` why it was admitted or left out; ``duplicate_of``, for a
    near-duplicate, the cited id of the better-ranked candidate that stands for it."""

    ranked: Ranked
    semantic_rank: int | None
    similarity: float | None
    verdict: Verdict
    duplicate_of: str | None = None
    # How much of the prompt it speaks to, token by token (``focus``): for the admitted
    # candidates of a pack's window.
    focus: float | None = None

    @property
    def admitted(self) -> bool:
        return self.verdict in ADMITTED


def ranked(
    lexical: Sequence[IndexHit],
    lexical_scores: Sequence[tuple[str, float]],
    semantic: Sequence[IndexHit] | None,
    *,
    query: evidence.Asked,
    plan: SearchPlan,
) -> list[Considered]:
    """Every candidate best first (the lexical order alone when ``semantic`` is None,
    else both channels fused: ``powercontext.search.fusion``), each with the relevance
    decision's verdict (``rules.judge``). Without semantic evidence (the channel off, no
    vector in the scope yet) nothing is judged: every lexical candidate is admitted, in
    the lexical order. ``plan`` is the search's (its weights and counts). The caller cuts
    the admitted ones to its window."""
    by_id = {hit.cited_id: hit for hit in semantic or ()}
    # The lexical hit wins for a candidate both found: it carries the indexed version the
    # caller's consistency check compares.
    by_id.update((hit.cited_id, hit) for hit in lexical)
    if not semantic:
        return [
            Considered(Ranked(by_id[key], score, (LEXICAL,)), None, None, Verdict.WORDS)
            for key, score in lexical_scores
        ]
    similarity = {hit.cited_id: hit.score for hit in semantic}
    semantic_rank = {hit.cited_id: place for place, hit in enumerate(semantic, start=1)}
    fused = fuse(lexical_scores, similarity.items(), ties_by_meaning=bool(numbers.TIES_BY_MEANING))
    # A lexical candidate the nearest rows left out is at most as near as the farthest of
    # them: a bound, not a measure, but enough to tell that it is not near.
    farthest = min(similarity.values())
    lexical_keys = {hit.cited_id for hit in lexical}
    facts = evidence.query_facts(query, plan)
    found = evidence.gather(
        [
            (
                hit.key,
                by_id[hit.key].searchable_text,
                hit.key in lexical_keys,
                similarity.get(hit.key, farthest),
            )
            for hit in fused
        ],
        facts=facts,
        weights=plan.weights,
        segments=evidence.segments_of(query),
    )
    # Read through the module: a bench measuring another rule replaces it there.
    judgements = rules.judge(found, facts)
    return [
        Considered(
            Ranked(by_id[hit.key], hit.score, hit.channels),
            semantic_rank.get(hit.key),
            similarity.get(hit.key),
            judgement.verdict,
        )
        for hit, judgement in zip(fused, judgements, strict=True)
    ]
